"""A saved TabSwift model carries its members' context caches (``disk_cache_mb``), so that a model loaded from disk
(AutoGluon's path for every predict call of a predictor that is not persisted) predicts without encoding its
contexts again; caches of other weights, or beyond the size limit, are not used."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import pandas as pd
import pytest
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from autogluon_maya import TabSwiftModel
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.engine import TabSwiftEngine
from autogluon_maya.tabswift.ensemble import TabSwiftEnsemble
from autogluon_maya.tabswift.model import CACHES_NAME
from autogluon_maya.tabswift.network import CLASSIFICATION
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint
from plugin_tests.resources import fit_on_cores
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("torch_globals_kept")

HP = {"checkpoint_path": "shipped", "n_estimators": 3, "max_context_rows": 256, "fine_tune": False}


def _data(n: int = 300, seed: int = 0, classes: int = 3):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    y = pd.Series(np.digitize(X["a"] + 0.3 * X["b"], np.quantile(X["a"], np.linspace(0, 1, classes + 1)[1:-1])),
                  name="y")
    return X, y


def _fit(tmp_path, hp: dict, validation: bool = True, name: str = "m") -> TabSwiftModel:
    X, y = _data()
    model = TabSwiftModel(path=str(tmp_path / name), name=name, problem_type="multiclass", eval_metric="accuracy",
                          hyperparameters={**HP, **hp})
    val = dict(X_val=X.iloc[200:], y_val=y.iloc[200:]) if validation else {}
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], **val)
    return model


def _no_encoding(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a context was encoded again after the load")

    monkeypatch.setattr(TabSwiftEngine, "encode_context", refuse)


def test_a_loaded_model_predicts_from_its_saved_caches(tmp_path, monkeypatch):
    model = _fit(tmp_path, {})
    X, _ = _data()
    proba = model.predict_proba(X.iloc[200:])  # the validation pass AutoGluon makes: encodes every member
    model.save()
    assert (Path(model.path) / CACHES_NAME).is_file()
    _no_encoding(monkeypatch)
    loaded = TabSwiftModel.load(model.path)
    assert {k for k in loaded.model._caches} == {("member", i) for i in range(3)}
    # float16 block inputs: the same predictions to ~1e-4
    np.testing.assert_allclose(loaded.predict_proba(X.iloc[200:]), proba, atol=1e-3)
    loaded.save()  # a second save keeps them (AutoGluon saves a loaded model again, e.g. when persisting a bag)
    assert len(TabSwiftModel.load(model.path).model._caches) == 3
    model.save()  # and so does a second save of the fitted object itself
    assert len(model.model._caches) == 3 and len(TabSwiftModel.load(model.path).model._caches) == 3


def test_regression_and_a_class_hierarchy_round_trip(tmp_path, monkeypatch):
    """The target's scale (regression) and the nested keys of the class hierarchy (more than C_max = 10 classes)
    come back from the file."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400)})
    outputs = {}
    for name, problem, y in (("reg", "regression", pd.Series(50.0 + 20.0 * X["a"] + rng.normal(size=400), name="y")),
                             ("many", "multiclass", pd.Series(np.digitize(X["a"], np.linspace(-2, 2, 11)), name="y"))):
        assert problem == "regression" or y.nunique() == 12
        model = TabSwiftModel(path=str(tmp_path / name), name=name, problem_type=problem,
                              eval_metric="root_mean_squared_error" if problem == "regression" else "accuracy",
                              hyperparameters={**HP, "n_estimators": 2})
        fit_on_cores(model, 1, X=X.iloc[:300], y=y.iloc[:300])  # no validation rows: the fit encodes them
        before = model.predict_proba(X.iloc[300:])
        model.save()
        outputs[name] = (model.path, before, set(model.model._caches))
    _no_encoding(monkeypatch)
    for name, (path, before, keys) in outputs.items():
        loaded = TabSwiftModel.load(path)
        assert set(loaded.model._caches) == keys and len(keys) == (2 if name == "reg" else 2 * 3)  # root + 2 groups
        scale = float(np.std(before)) if name == "reg" else 1.0
        np.testing.assert_allclose(loaded.predict_proba(X.iloc[300:]), before, atol=1e-3 * scale)


def test_a_fit_without_validation_rows_encodes_its_members_before_the_save(tmp_path, monkeypatch):
    """A refit has no validation pass that would encode its contexts: it encodes them itself."""
    model = _fit(tmp_path, {}, validation=False)
    assert model.get_info()["tabswift_context_caches"] == {"members_encoded_at_fit": 3}
    model.save()
    _no_encoding(monkeypatch)
    assert len(TabSwiftModel.load(model.path).model._caches) == 3


def test_disk_cache_off_and_the_size_limit(tmp_path):
    X, _ = _data()
    assert _fit(tmp_path, {"disk_cache_mb": 0}, validation=False, name="off_refit").get_info()[
        "tabswift_context_caches"] == {"members_encoded_at_fit": 0}  # nothing to save: nothing encoded at fit
    off = _fit(tmp_path, {"disk_cache_mb": 0}, name="off")
    off.predict_proba(X.iloc[200:])
    assert all(c.block_inputs is None for c in off.model._caches.values())  # nothing kept to save
    off.save()
    assert not (Path(off.path) / CACHES_NAME).exists() and not TabSwiftModel.load(off.path).model._caches
    cfg = load_checkpoint(SHIPPED_CHECKPOINT).config
    size = cfg.n_layers * (200 + cfg.n_registers) * cfg.d_model * 2  # one member's float16 block inputs
    one = _fit(tmp_path, {"disk_cache_mb": 1.5 * size / 2 ** 20}, name="one")  # room for one member, not two
    one.predict_proba(X.iloc[200:])
    assert sum(h.numel() * 2 for h in one.model._caches[("member", 0)].block_inputs) == size
    one.save()
    assert set(TabSwiftModel.load(one.path).model._caches) == {("member", 0)}


def test_a_broken_file_or_another_fit_s_caches_cost_speed_not_predictions(tmp_path):
    X, _ = _data()
    first, second = _fit(tmp_path, {}, name="first"), _fit(tmp_path, {}, name="second")
    for model in (first, second):
        model.predict_proba(X.iloc[200:])
        model.save()
    expected = second.predict_proba(X.iloc[200:])
    # the same weights, another fit: the first model's caches put in the second's folder are refused
    (Path(second.path) / CACHES_NAME).write_bytes((Path(first.path) / CACHES_NAME).read_bytes())
    loaded = TabSwiftModel.load(second.path)
    assert not loaded.model._caches
    np.testing.assert_allclose(loaded.predict_proba(X.iloc[200:]), expected, atol=1e-5)
    # a file cut short: not read
    cut = Path(first.path) / CACHES_NAME
    data = cut.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    assert not TabSwiftModel.load(first.path).model._caches
    # a readable file whose second member lacks a tensor: the first member, already restored, is dropped too, so
    # that no half-restored set is used
    first.save()  # (the first model's own file again, whole)
    with safe_open(str(Path(first.path) / CACHES_NAME), framework="pt") as f:
        meta = dict(f.metadata())
    tensors = load_file(str(Path(first.path) / CACHES_NAME))
    assert "0.h0" in tensors and "1.h0" in tensors
    save_file({k: v for k, v in tensors.items() if k != "1.h0"}, str(Path(first.path) / CACHES_NAME), metadata=meta)
    half = TabSwiftModel.load(first.path)
    assert not half.model._caches
    np.testing.assert_allclose(half.predict_proba(X.iloc[200:]), first.predict_proba(X.iloc[200:]), atol=1e-5)


def test_caches_of_other_weights_are_not_used(tmp_path):
    model = _fit(tmp_path, {})
    X, _ = _data()
    proba = model.predict_proba(X.iloc[200:])
    model.save()
    path = Path(model.path) / CACHES_NAME
    with safe_open(str(path), framework="pt") as f:
        meta = dict(f.metadata())
    save_file(load_file(str(path)), str(path), metadata={**meta, "weights_sha256": "0" * 64})
    loaded = TabSwiftModel.load(model.path)
    assert not loaded.model._caches
    np.testing.assert_allclose(loaded.predict_proba(X.iloc[200:]), proba, atol=1e-5)  # encoded afresh


def test_warm_stops_before_a_member_would_end_past_the_deadline():
    """Member by member at the pace of the last one, on an injected clock that advances 1 s per reading."""
    X, y = _data()
    ens = TabSwiftEnsemble(load_checkpoint(SHIPPED_CHECKPOINT), CLASSIFICATION, n_estimators=4)
    ens.fit(X.to_numpy(), y.to_numpy(), n_classes=3)
    assert ens.warm() == 0 and not ens._caches  # nothing to save (keep_inputs_bytes 0): nothing encoded
    ens.keep_inputs_bytes = 2 ** 30
    ticks = iter(range(100))
    # member 0 starts at 0 and ends at 1 (1 s); member 1 starts at 2 and would end at 3 = the deadline: not begun
    assert ens.warm(deadline=3.0, clock=lambda: float(next(ticks))) == 1
    assert set(ens._caches) == {("member", 0)}
    assert ens.warm() == 3 and len(ens._caches) == 4  # the cached member is not encoded again


def test_warm_stops_at_the_bytes_a_save_keeps_and_at_the_memory_cap():
    X, y = _data()
    net = load_checkpoint(SHIPPED_CHECKPOINT)
    one = net.config.n_layers * (net.config.n_registers + len(X)) * net.config.d_model * 2  # a member's inputs
    ens = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=4).fit(X.to_numpy(), y.to_numpy(), n_classes=3)
    ens.keep_inputs_bytes = 2 * one  # room for two members' inputs
    assert ens.warm() == 2 and ens.kept_input_bytes == 2 * one
    capped = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=4, cache_max_mb=1.5 * 5 * one / 2 ** 20)
    capped.fit(X.to_numpy(), y.to_numpy(), n_classes=3)
    capped.keep_inputs_bytes = 2 ** 30
    # a member's cache is 5x its float16 inputs (float32 keys and values): the second is encoded, not kept, and ends it
    assert capped.warm() == 2 and len(capped._caches) == 1


def test_a_cache_that_keeps_its_inputs_costs_ten_bytes_per_token_and_width():
    """float32 keys and values (8 bytes) and float16 block inputs (2): the figure the memory estimate and the best
    preset's cache_max_mb are computed with."""
    X, y = _data()
    net = load_checkpoint(SHIPPED_CHECKPOINT)
    engine, cfg = TabSwiftEngine(net), net.config
    tokens = cfg.n_registers + 200
    plain = engine.encode_context(X.to_numpy()[:200], y.to_numpy()[:200], CLASSIFICATION, n_classes=3)
    kept = engine.encode_context(X.to_numpy()[:200], y.to_numpy()[:200], CLASSIFICATION, n_classes=3,
                                 keep_inputs=True)
    means = cfg.n_layers * cfg.d_model * 4
    assert plain.nbytes - means == cfg.n_layers * tokens * cfg.d_model * 8
    assert kept.nbytes - means == cfg.n_layers * tokens * cfg.d_model * 10
    assert all(h.dtype == torch.float16 for h in kept.block_inputs)

    # the memory estimate counts one such cache per member: with block inputs where a saved model keeps them
    # (disk_cache_mb > 0), without where it keeps none
    def per_member(**hp):
        def est(members):
            return TabSwiftModel._estimate_memory_usage_static(
                X=X.iloc[:200], num_classes=3,
                hyperparameters={"checkpoint_path": "shipped", "fine_tune": False, "n_estimators": members, **hp})

        return est(3) - est(2)

    assert per_member() == kept.nbytes - means
    assert per_member(disk_cache_mb=0) == plain.nbytes - means


def test_warm_caches_stops_at_the_fit_s_time_budget_on_its_clock():
    """A refit encodes its members for the save until its budget ends, judged on the budget's own clock (here one
    that advances 1 s per reading; a 3 s budget: one member, as ``TabSwiftEnsemble.warm`` paces them)."""
    from autogluon_maya.common.training import TimeBudget
    from autogluon_maya.tabswift.cache_files import warm_caches
    from autogluon_maya.tabswift.defaults import DEFAULT_PARAMS
    from autogluon_maya.tabswift.fit_context import FitContext, make_plan

    X, y = _data()
    p = {**DEFAULT_PARAMS, "disk_cache_mb": 1024}
    plan = make_plan(p, classification=True, has_val=False, headless=False, prior=(None, ""))

    def warmed(limit):
        ens = TabSwiftEnsemble(load_checkpoint(SHIPPED_CHECKPOINT), CLASSIFICATION, n_estimators=4)
        ens.fit(X.to_numpy(), y.to_numpy(), n_classes=3)
        ens.keep_inputs_bytes = 2 ** 30
        ticks = iter(range(100))
        budget = TimeBudget(limit, safety=1.0, clock=lambda: float(next(ticks)), start=0.0)
        ctx = FitContext(params=p, plan=plan, ensemble=ens, budget=budget, time_limit=limit, seed=0, summary={})
        return warm_caches(ctx), set(ens._caches)

    assert warmed(3.0) == (1, {("member", 0)})
    assert warmed(None) == (4, {("member", i) for i in range(4)})  # no limit: every member


def test_a_predictor_loaded_from_disk_per_predict_uses_the_saved_caches(tmp_path, monkeypatch):
    """AutoGluon loads a model that is not persisted from disk at every predict call: the contexts encoded at fit
    (by its validation pass) come back from the saved file, and no predict call encodes one again."""
    from autogluon.tabular import TabularPredictor

    X, y = _data(400)
    data = X.assign(y=y)
    pred = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        data.iloc[:300], tuning_data=data.iloc[300:360], hyperparameters={"TABSWIFT": HP}, num_cpus=1, num_gpus=0,
        fit_weighted_ensemble=False, raise_on_model_failure=True)
    assert pred.model_names() == ["TabSwift"] and not pred._trainer.models  # nothing persisted in memory
    real, encoded, loads = TabSwiftEngine.encode_context, [], []
    monkeypatch.setattr(TabSwiftEngine, "encode_context",
                        lambda self, *a, **k: (encoded.append(1), real(self, *a, **k))[1])
    real_load = TabSwiftModel.load.__func__
    monkeypatch.setattr(TabSwiftModel, "load", classmethod(lambda cls, *a, **k: (loads.append(1),
                                                                                 real_load(cls, *a, **k))[1]))
    for _ in range(2):
        assert pred.predict_proba(data.iloc[360:].drop(columns="y")).shape == (40, 3)
    assert len(loads) == 2 and encoded == [], (loads, encoded)
