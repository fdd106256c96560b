"""MAYA and TabSwift in TabArena's own harness (``autogluon_maya.integrations.tabarena``).

The configs and experiments are built by TabArena's config utilities; one MAYA and one TabSwift bag experiment
run through ``ExperimentBatchRunner`` on a tiny local task made with ``UserTask.create_task`` from a shipped
table, and their results load in TabArena's ``EvaluationRepository``.  Offline: internet sockets are refused
for the run, the hub is switched off, and every directory TabArena, OpenML, AutoGluon or the package writes
to is under ``tmp_path``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from autogluon_maya.integrations import tabarena as ta
from plugin_tests.conftest import shipped_table

REPO = Path(__file__).resolve().parents[1]

MAYA_FAST = {"max_epochs": 3, "ensemble_members": 1}
TABSWIFT_FAST = {"checkpoint_path": "shipped", "n_estimators": 1, "fine_tune": False}
N_ROWS, N_TEST, N_FEATURES, N_FOLDS = 150, 50, 6, 2


def _strip_name(config: dict) -> dict:
    return {k: v for k, v in config.items() if k != "ag_args"}


# ----------------------------------------------------------------------------------------------- configs
def test_maya_generator_default_first_then_seeded_draws_from_the_cpu_space():
    from autogluon_maya.maya.defaults import resolve_defaults
    from autogluon_maya.maya.search_space import CPU_SPACE

    configs = ta.maya_config_generator().generate_all_configs_lst(num_random_configs=3)
    assert [c["ag_args"]["name_suffix"] for c in configs] == ["_c1", "_r1", "_r2", "_r3"]
    assert _strip_name(configs[0]) == {}  # the default: MAYA's own defaults at fit time

    default = resolve_defaults("binary")
    draws = [_strip_name(c) for c in configs[1:]]
    for draw in draws:
        assert set(draw) == set(CPU_SPACE)
        assert any(draw[k] != default[k] for k in draw), draw  # a draw is not the default again
        assert 1 <= draw["num_layers"] <= 2 and 64 <= draw["hidden_size"] <= 96  # the CPU space, not Table 12
        assert draw["batch_size"] in ("auto", 128, 256)
    assert draws[0] != draws[1] != draws[2]
    # TabArena draws with a fixed seed: the same configs every time, on every machine
    again = ta.maya_config_generator().generate_all_configs_lst(num_random_configs=3)
    assert again == configs


def test_tabswift_generator_is_the_default_with_the_shipped_weights():
    gen = ta.tabswift_config_generator()
    assert gen.generate_all_configs_lst(num_random_configs=0) == [
        {"checkpoint_path": "shipped", "ag_args": {"name_suffix": "_c1"}}]
    auto = ta.tabswift_config_generator(checkpoint_path="auto").generate_all_configs_lst(num_random_configs=0)
    assert _strip_name(auto[0]) == {"checkpoint_path": "auto"}


def test_experiments_follow_tabarena_naming_and_bagging_protocol():
    from tabarena.benchmark.experiment import AGModelBagExperiment

    from autogluon_maya import MayaModel, TabSwiftModel

    exps = ta.maya_experiments(num_random_configs=2) + ta.tabswift_experiments()
    assert [e.name for e in exps] == ["Maya_c1_BAG_L1", "Maya_r1_BAG_L1", "Maya_r2_BAG_L1", "TabSwift_c1_BAG_L1"]
    assert all(isinstance(e, AGModelBagExperiment) for e in exps)
    assert [e.method_kwargs["model_cls"] for e in exps] == [MayaModel] * 3 + [TabSwiftModel]
    for e in exps:
        assert e.method_kwargs["fit_kwargs"]["num_bag_folds"] == 8
        assert e.method_kwargs["fit_kwargs"]["num_bag_sets"] == 1
        assert e.method_kwargs["model_hyperparameters"]["ag_args_ensemble"]["ag.max_time_limit"] == 3600
    seeds = [e.method_kwargs["model_hyperparameters"]["ag_args_ensemble"]["model_random_seed"] for e in exps[:3]]
    assert seeds == [0, 8, 16]  # TabArena's bundle seeds: each config its own block, varied across its folds
    assert exps[-1].method_kwargs["model_hyperparameters"]["checkpoint_path"] == "shipped"

    plain = ta.bag_experiments("MAYA", [MAYA_FAST, {}], num_bag_folds=2, time_limit=30)
    assert [e.name for e in plain] == ["Maya_c1_BAG_L1", "Maya_c2_BAG_L1"]
    assert plain[0].method_kwargs["model_hyperparameters"]["max_epochs"] == 3
    assert plain[0].method_kwargs["fit_kwargs"]["num_bag_folds"] == 2
    with pytest.raises(ValueError):
        ta.bag_experiments("XGB", [{}])


def test_importing_the_package_does_not_import_tabarena(tmp_path):
    child = ("import json, sys; import autogluon_maya, autogluon_maya.integrations.tabarena; "
             "print(json.dumps('tabarena' in sys.modules))")
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env = {**os.environ, "PYTHONPATH": path}
    proc = subprocess.run([sys.executable, "-c", child], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) is False


# --------------------------------------------------------------------------------------------- the run
@pytest.fixture
def offline(tmp_path, monkeypatch):
    """No internet for the test: the hub is off and every internet socket connect / name lookup raises."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "maya_cache"))
    try:
        from huggingface_hub import constants
    except ImportError:  # pragma: no cover
        pass
    else:
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)

    def refuse(*args, **kwargs):
        raise OSError("network access in an offline test")

    real_connect = socket.socket.connect

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            refuse()
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _tiny_task(tmp_path):
    from sklearn.model_selection import train_test_split
    from tabarena.benchmark.task.user_task import UserTask

    df = pd.read_csv(shipped_table("qsar_biodeg"))
    target = df.columns[-1]
    df = df.sample(N_ROWS, random_state=0).reset_index(drop=True)
    df = df[list(df.columns[:N_FEATURES]) + [target]]
    train, test = train_test_split(np.arange(N_ROWS), test_size=N_TEST, stratify=df[target], random_state=0)
    user_task = UserTask(task_name="qsar_biodeg_tiny", task_cache_path=tmp_path / "tasks")
    task = user_task.create_task(target_feature=target, problem_type="classification", dataset=df,
                                 splits={0: {0: (sorted(train.tolist()), sorted(test.tolist()))}})
    user_task.save_task(task)
    return user_task, df[target], np.sort(train), np.sort(test)


def test_maya_and_tabswift_run_in_tabarenas_runner_and_load_in_its_repository(tmp_path, monkeypatch, offline):
    import openml
    import tabarena.utils.cache
    from sklearn.metrics import roc_auc_score
    from tabarena.benchmark.experiment import ExperimentBatchRunner
    from tabarena.benchmark.result import BaselineResult
    from tabarena.benchmark.task.metadata.collection import TaskMetadataCollection
    from tabarena.repository import EvaluationRepository
    from tabarena.repository.generate_repo import generate_repo_from_results_lst

    # TabArena's and OpenML's default caches live under the home directory: point them at tmp_path
    monkeypatch.setattr(tabarena.utils.cache, "default_cache_path", tmp_path / "tabarena_cache")
    monkeypatch.setattr(openml.config, "_root_cache_directory", tmp_path / "openml")

    user_task, y, train_idx, test_idx = _tiny_task(tmp_path)
    collection = TaskMetadataCollection.from_user_tasks([user_task])
    fast = {"num_bag_folds": N_FOLDS, "time_limit": 30,
            "method_kwargs": {"init_kwargs": {"default_base_path": str(tmp_path / "models")}}}
    experiments = (ta.bag_experiments("MAYA", [MAYA_FAST], **fast)
                   + ta.bag_experiments("TABSWIFT", [TABSWIFT_FAST], **fast))
    names = ["Maya_c1_BAG_L1", "TabSwift_c1_BAG_L1"]
    assert [e.name for e in experiments] == names

    expdir = tmp_path / "experiments"
    # debug_mode: bag folds fitted in this process (no Ray), a failure raises here
    runner = ExperimentBatchRunner(expname=str(expdir), task_metadata=collection, user_tasks=[user_task],
                                   debug_mode=True, cache_mode="ignore")
    results = runner.run(methods=experiments, datasets=[user_task.tabarena_task_name], folds=[0])

    assert [r["framework"] for r in results] == names
    classes = sorted(y.unique())
    for r, name in zip(results, names):
        art = r["simulation_artifacts"]
        assert r["problem_type"] == "binary" and r["metric"] == "roc_auc"
        assert art["ordered_class_labels"] == classes
        # out-of-fold predictions on every training row, test predictions on every test row
        val, test = art["pred_proba_dict_val"][name], art["pred_proba_dict_test"][name]
        assert val.shape == (len(train_idx),) and test.shape == (len(test_idx),)
        assert np.all(np.isfinite(val)) and np.all((val >= 0) & (val <= 1))
        assert np.all(np.isfinite(test)) and np.all((test >= 0) & (test <= 1))
        assert np.array_equal(np.sort(art["y_val_idx"]), train_idx)
        assert np.array_equal(np.sort(art["y_test_idx"]), test_idx)
        # MAYA's test predictions average its fold models; TabSwift refits one model on all the training rows
        # (``refit_folds``: more context for an in-context model) once its folds have made the OOF predictions
        assert len(art["bag_info"]["pred_proba_test_per_child"]) == (N_FOLDS if name.startswith("Maya") else 1)
        # the reported test error is the error of these predictions
        y_test = (y.loc[art["y_test_idx"]] == classes[1]).to_numpy()
        assert r["metric_error"] == pytest.approx(1 - roc_auc_score(y_test, test))
        assert (expdir / "data" / name / user_task.tabarena_task_name / "0_0" / "results.pkl").is_file()
    assert results[0]["method_metadata"]["model_hyperparameters"]["max_epochs"] == 3
    assert results[1]["method_metadata"]["model_hyperparameters"]["checkpoint_path"] == "shipped"

    repo = generate_repo_from_results_lst(results_lst=[BaselineResult.from_dict(r) for r in results],
                                          task_metadata=collection)
    assert isinstance(repo, EvaluationRepository)
    assert sorted(repo.configs()) == names
    assert repo.datasets() == [user_task.tabarena_task_name]
    metrics = repo.metrics().reset_index()
    assert sorted(metrics["framework"]) == names
    assert np.all(np.isfinite(metrics["metric_error"])) and np.all(metrics["metric_error"].between(0, 1))
    for name in names:
        assert repo.predict_test(dataset=user_task.tabarena_task_name, fold=0, config=name).shape == (len(test_idx),)
        assert repo.predict_val(dataset=user_task.tabarena_task_name, fold=0, config=name).shape == (len(train_idx),)
