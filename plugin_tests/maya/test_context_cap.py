"""``max_context_rows``: the inference context (Eq. 14) capped at N training rows drawn once at fit, by class for
classification, uniformly for regression; every validation pass and the final model use the capped context,
training batches every row.  Context sizes are counted in rows, not timed."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya import MayaModel
from autogluon_maya.maya.context import draw_context
from autogluon_maya.maya.defaults import check_params, resolve_defaults
from plugin_tests.resources import fit_on_cores

from .test_prior_fallback import autogluon_log_level  # noqa: F401  (a fixture)

TINY = {"max_epochs": 2, "hidden_size": 8, "num_heads": 2, "num_layers": 1, "patience": None,
        "ensemble_members": 2, "parallel_members": 1, "adaptive_threads": False, "num_embeddings": None}


def _data(n: int, problem_type: str = "multiclass", seed: int = 0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 3)), columns=list("abc"))
    signal = X["a"] + 0.5 * X["b"]
    if problem_type == "regression":
        return X, pd.Series(signal + 0.1 * rng.normal(size=n), name="y")
    return X, pd.Series(np.digitize(signal, [-1.0, 1.2]), name="y")  # three classes, the last a small one


@contextmanager
def _encoded_contexts():
    """Records (x_num, labels) of every context a fit encodes (``FittedMaya.set_context``)."""
    from autogluon_maya.maya.fitted import FittedMaya

    seen, original = [], FittedMaya.set_context

    def spy(self, x_num, x_cat, y, chunk=1024):
        seen.append((x_num.clone(), y.clone()))
        return original(self, x_num, x_cat, y, chunk)

    FittedMaya.set_context = spy
    try:
        yield seen
    finally:
        FittedMaya.set_context = original


def _fit(tmp_path, name, n, hp, problem_type="multiclass", validate=True):
    X, y = _data(n + 60, problem_type)
    model = MayaModel(path=str(tmp_path / name), name=name, problem_type=problem_type,
                      hyperparameters={**TINY, **hp})
    val = dict(X_val=X.iloc[n:], y_val=y.iloc[n:]) if validate else {}
    fit_on_cores(model, 1, X=X.iloc[:n], y=y.iloc[:n], **val)
    return model


@pytest.mark.parametrize("problem_type", ["multiclass", "regression"])
def test_the_context_stops_growing_with_the_table_past_the_cap(problem_type, tmp_path, one_torch_thread_seeded):
    """Every member of a capped fit attends over N rows on 300 and on 900 training rows, and its validation
    passes used that context too; without the cap the context is every training row."""
    for n in (300, 900):
        model = _fit(tmp_path, f"cap{n}", n, {"max_context_rows": 200}, problem_type)
        assert len(model.model) and {m.context_size for m in model.model.members} == {200}
        assert model.get_info()["maya_fit"]["context_rows"] == 200
    with _encoded_contexts() as seen:
        _fit(tmp_path, "spied", 300, {"max_context_rows": 200}, problem_type)
    assert seen and {len(x) for x, _ in seen} == {200}, seen  # every validation pass and the final encoding
    if problem_type == "multiclass":  # drawn by class: every class in the context, at its training share
        y_train = _data(360)[1].iloc[:300].to_numpy()
        shares = np.bincount(seen[-1][1].numpy(), minlength=3) / 200
        assert np.all(shares > 0) and np.abs(shares - np.bincount(y_train, minlength=3) / 300).max() < 0.01
    full = _fit(tmp_path, "full", 300, {}, problem_type)
    assert len(full.model) and {m.context_size for m in full.model.members} == {300}
    assert full.get_info()["maya_fit"]["context_rows"] == 300


def test_the_draw_keeps_every_class_at_its_share():
    y = np.repeat([0, 1, 2, 3], [700, 250, 45, 5])
    rows = draw_context(y, 100, seed=3, classification=True)
    assert len(rows) == 100 and len(np.unique(rows)) == 100 and np.all(np.diff(rows) > 0)
    counts = np.bincount(y[rows], minlength=4)
    assert np.all(counts >= 1), counts
    np.testing.assert_allclose(counts / 100, np.bincount(y) / len(y), atol=0.02)
    # fewer rows than classes: the largest classes, one row each
    assert sorted(np.unique(y[draw_context(y, 2, seed=3, classification=True)])) == [0, 1]
    # exactly one row per class where the cap equals the classes
    assert np.bincount(y[draw_context(y, 4, seed=0, classification=True)]).tolist() == [1, 1, 1, 1]


def test_the_draw_is_the_seeds():
    y = np.repeat([0, 1], [600, 400])
    first = draw_context(y, 50, seed=7, classification=True)
    np.testing.assert_array_equal(first, draw_context(y, 50, seed=7, classification=True))
    assert not np.array_equal(first, draw_context(y, 50, seed=8, classification=True))
    reg = draw_context(np.linspace(0, 1, 1000), 50, seed=7, classification=False)
    np.testing.assert_array_equal(reg, draw_context(np.linspace(0, 1, 1000), 50, seed=7, classification=False))
    assert draw_context(y, None, seed=7, classification=True) is None  # no cap: every row
    assert draw_context(y, 1000, seed=7, classification=True) is None  # no more rows than the cap


def test_a_fit_encodes_the_seeds_rows_twice_alike(tmp_path, one_torch_thread_seeded):
    """Two fits from one seed encode the same context rows; another seed draws others."""
    contexts = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        with _encoded_contexts() as seen:
            _fit(tmp_path, name, 300, {"max_context_rows": 120, "ensemble_members": 1, "random_seed": seed},
                 validate=False)
        contexts[name] = seen[-1][0]
    assert len(contexts["a"]) == 120
    torch.testing.assert_close(contexts["a"], contexts["b"], rtol=0, atol=0)
    assert not torch.equal(contexts["a"], contexts["c"])


def test_a_bagged_refit_caps_its_context(tmp_path, autogluon_log_level, one_torch_thread_seeded):
    from autogluon.tabular import TabularPredictor

    X, y = _data(400, "binary")
    y = (y > 0).astype(int)
    pred = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        X.assign(y=y), hyperparameters={"MAYA": {**TINY, "ensemble_members": 1, "max_context_rows": 150}},
        num_bag_folds=2, fit_weighted_ensemble=False, ag_args_ensemble={"fold_fitting_strategy": "sequential_local"},
        ag_args_fit={"num_cpus": 1, "num_gpus": 0}, raise_on_model_failure=True)
    bag = pred._trainer.load_model("Maya_BAG_L1")
    for name in bag.models:
        assert [m.context_size for m in bag.load_child(name).model.members] == [150]
    refit = pred.refit_full()
    full = pred._trainer.load_model(refit["Maya_BAG_L1"])
    (child,) = [full.load_child(name) for name in full.models]
    assert [m.context_size for m in child.model.members] == [150]  # of its 400 rows
    assert child.get_info()["maya_fit"]["context_rows"] == 150


def test_the_memory_estimate_counts_the_capped_context():
    X = pd.DataFrame(np.zeros((200_000, 10)), columns=[f"c{i}" for i in range(10)])

    def est(**hp):
        return MayaModel._estimate_memory_usage_static(X=X, hyperparameters=hp, num_classes=2)

    full = est(max_context_rows=None)
    assert est(max_context_rows=2_000) < full - 2**28  # the similarity block alone is 256 MiB at 200k rows
    assert est(max_context_rows=500_000) == full  # a cap above the rows caps nothing
    default = resolve_defaults("binary")["max_context_rows"]
    assert est() == est(max_context_rows=default) < full  # the default cap counts


@pytest.mark.parametrize("bad", [0, -1, 2.5, "x", True])
def test_a_bad_cap_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="max_context_rows"):
        check_params({**resolve_defaults("binary"), "max_context_rows": bad})


def test_a_bad_cap_fails_the_fit_by_name(tmp_path):
    X, y = _data(100)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="multiclass",
                      hyperparameters={**TINY, "max_context_rows": 0})
    with pytest.raises(ValueError, match="max_context_rows"):
        model.fit(X=X, y=y, num_cpus=1, num_gpus=0)
