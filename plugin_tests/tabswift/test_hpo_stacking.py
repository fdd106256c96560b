"""TABSWIFT through AutoGluon's Ray Tune HPO backend, and bagged + stacked with GBM and MAYA.

Settings are tiny (1-2 ensemble members, <= 256 context rows, 2 MAYA epochs) because the tests check
the plumbing, not accuracy: the shipped checkpoint may be an interim one.
"""

import logging

import numpy as np
import pytest
from autogluon.common import space
from autogluon.tabular import TabularPredictor

import autogluon_maya  # noqa: F401  (registers the keys)

# the shipped weights, explicitly: the default ("auto") would take the authors' released ones on a machine
# that has them or can download them -- another network, another speed
TINY_TABSWIFT = {"n_estimators": 1, "max_context_rows": 256, "checkpoint_path": "shipped", "fine_tune": False}
TINY_MAYA = {"max_epochs": 2, "hidden_size": 16, "num_heads": 2}


def _breast_cancer(n):
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(as_frame=True).frame.sample(n=n, random_state=0).reset_index(drop=True)


def test_two_trial_ray_hpo_of_tabswift_returns_distinct_configs():
    pytest.importorskip("ray")
    data = _breast_cancer(240)
    train, test = data.iloc[:200], data.iloc[200:]
    # a continuous dimension makes two equal random draws (practically) impossible; the others are
    # TabSwift's own knobs at tiny sizes
    hp = {"n_estimators": space.Categorical(1, 2), "max_context_rows": space.Int(48, 128, default=96),
          "softmax_temperature": space.Real(0.5, 1.5, default=0.9), "checkpoint_path": "shipped"}
    pred = TabularPredictor(label="target", path="ag", verbosity=0).fit(
        train, hyperparameters={"TABSWIFT": hp}, fit_weighted_ensemble=False, time_limit=150, num_cpus=1,
        num_gpus=0, hyperparameter_tune_kwargs={"num_trials": 2, "scheduler": "local", "searcher": "random"})

    names = pred.model_names()
    assert len(names) == 2 and all(n.startswith("TabSwift/") for n in names), names
    # what fit_summary reports per trial is the config that trial was fitted with
    summary = pred.fit_summary(verbosity=0)
    assert set(summary["model_hyperparams"]) == set(names)
    searched = ("n_estimators", "max_context_rows", "softmax_temperature")
    configs = [{k: summary["model_hyperparams"][n][k] for k in searched} for n in names]
    assert configs[0] != configs[1], configs
    info = pred.info()["model_info"]
    for n, config in zip(names, configs):
        assert {k: info[n]["hyperparameters"][k] for k in searched} == config
        assert 48 <= config["max_context_rows"] <= 128 and config["n_estimators"] in (1, 2)
        # the fitted model really used the trial's values, not the defaults (8 members, 2048 rows: the
        # context would be every one of the ~160 training rows)
        model = pred._trainer.load_model(n)
        assert len(model.model.members_) == config["n_estimators"]
        assert len(model.model.y_context_) == config["max_context_rows"]
        assert model.model.temperature == pytest.approx(config["softmax_temperature"])
    assert pred.predict(test.drop(columns="target")).shape == (len(test),)


def test_bagged_stack_with_gbm_and_maya_folds_sequential_and_refit_full(caplog):
    data = _breast_cancer(260)
    train, test = data.iloc[:200], data.iloc[200:]
    gbm = {"num_boost_round": 20}
    ag_logger = logging.getLogger("autogluon")  # AutoGluon may stop propagation to the root logger
    ag_logger.addHandler(caplog.handler)
    caplog.set_level(logging.INFO, logger="autogluon")
    try:
        pred = TabularPredictor(label="target", path="ag", verbosity=2).fit(
            train, hyperparameters={"GBM": gbm, "MAYA": TINY_MAYA, "TABSWIFT": TINY_TABSWIFT},
            num_bag_folds=2, num_stack_levels=1, dynamic_stacking=False, num_cpus=1, num_gpus=0,
            time_limit=240, raise_on_model_failure=True)
    finally:
        ag_logger.removeHandler(caplog.handler)

    names = set(pred.model_names())
    expected = {f"{m}_BAG_L{level}" for m in ("LightGBM", "Maya", "TabSwift") for level in (1, 2)}
    assert expected <= names, names
    assert any(n.startswith("WeightedEnsemble_L") for n in names), names
    lb = pred.leaderboard(test, silent=True).set_index("model")
    assert {"TabSwift_BAG_L1", "TabSwift_BAG_L2", "WeightedEnsemble_L3"} <= set(lb.index)

    # TabSwift's folds run one after another in this process, MAYA keeps AutoGluon's parallel default
    from autogluon_maya import TabSwiftModel

    assert TabSwiftModel._default_ag_args_ensemble_extra["fold_fitting_strategy"] == "sequential_local"
    for level in (1, 2):
        bag = pred._trainer.load_model(f"TabSwift_BAG_L{level}")
        assert bag.params["fold_fitting_strategy"] == "sequential_local"
        assert bag.params.get("refit_folds") is True
        assert len(bag.models) == 1  # refit_folds: after the OOF folds, one child on all rows is kept
        assert pred._trainer.load_model(f"Maya_BAG_L{level}").params.get("fold_fitting_strategy") != "sequential_local"
    # ... and AutoGluon said so when it fitted them (the log names the strategy per bagged model)
    log = caplog.text
    for level in (1, 2):
        block = log.split(f"Fitting model: TabSwift_BAG_L{level}", 1)[1].split("Fitting model:", 1)[0]
        assert "SequentialLocalFoldFittingStrategy" in block, block

    refit = pred.refit_full()
    for name in expected:
        full = refit[name]
        assert full.endswith("_FULL") and full in pred.model_names()
        proba = pred.predict_proba(test.drop(columns="target"), model=full)
        assert len(proba) == len(test) and np.isfinite(proba.to_numpy()).all()
    assert pred.model_best.endswith("_FULL")  # refit_full switched the default model
    assert pred.predict(test.drop(columns="target")).shape == (len(test),)
