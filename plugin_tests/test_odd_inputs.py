"""Odd inputs that reach the models themselves.

Through ``TabularPredictor`` several odd cases never reach a model: a 1-row class is dropped by
``label_count_threshold``, an all-missing column is dropped by the feature generators. Here the model
classes are fitted directly (``MayaModel(...).fit``), so what is tested is the model's own handling.
AutoGluon's ``AbstractModel.fit`` still drops columns with a single value and raises ``NoValidFeatures``
when nothing is left; those cases are checked to end in that clear error (which makes a predictor skip
the model) rather than in a crash inside the model.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
from autogluon.core.utils.exceptions import NoValidFeatures

from autogluon_maya import MayaModel, TabSwiftModel
from plugin_tests.resources import fit_memory_in_fresh_process, fit_on_cores, memory_report

MAYA_TINY = {"max_epochs": 15, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "batch_size": 64}
TABSWIFT_TINY = {"n_estimators": 1, "max_context_rows": 256, "fine_tune": False}
HP = {MayaModel: MAYA_TINY, TabSwiftModel: TABSWIFT_TINY}
BOTH = pytest.mark.parametrize("cls", [MayaModel, TabSwiftModel], ids=["MAYA", "TABSWIFT"])
METRIC = {"binary": "accuracy", "multiclass": "accuracy", "regression": "root_mean_squared_error"}


def _fit(cls, tmp_path, X, y, problem_type, hp=None, **fit_kw):
    model = cls(path=str(tmp_path / cls.__name__), name=cls.__name__, problem_type=problem_type,
                eval_metric=METRIC[problem_type], hyperparameters={**HP[cls], **(hp or {})})
    fit_on_cores(model, 1, X=X, y=y, **fit_kw)
    return model


def _accuracy(model, X, y, problem_type="binary"):
    proba = model.predict_proba(X)
    pred = (proba > 0.5).astype(int) if problem_type == "binary" else proba.argmax(1)
    return float((pred == np.asarray(y)).mean())


def _linear(n, seed, n_features=3):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, n_features)), columns=[f"f{i}" for i in range(n_features)])
    return X, pd.Series((X["f0"] - 0.5 * X["f1"] > 0).astype(int))


def _wide(n, seed, n_features=520, n_factors=4):
    """A wide table as real wide tables are: many correlated columns driven by a few factors."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, n_factors))
    load = np.random.default_rng(123).normal(size=(n_factors, n_features))  # same columns for every seed
    X = pd.DataFrame(z @ load + 0.5 * rng.normal(size=(n, n_features)), columns=[f"c{i}" for i in range(n_features)])
    return X, pd.Series((z[:, 0] - 0.5 * z[:, 1] > 0).astype(int))


@BOTH
def test_one_row_class(cls, tmp_path):
    """Three classes, one of them a single training row; TabSwift also subsamples its context
    (400 rows > max_context_rows=256), which must keep the lone row's class."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=400), "b": rng.normal(size=400)})
    y = (X["a"] > 0).astype(int)
    X.loc[0, ["a", "b"]] = [8.0, 8.0]
    y[0] = 2  # the lone row of class 2, far from the rest
    model = _fit(cls, tmp_path, X, y, "multiclass")
    X_test, y_test = X.iloc[1:201], y.iloc[1:201]
    proba = model.predict_proba(X_test)
    assert proba.shape == (200, 3) and np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-5)
    assert _accuracy(model, X_test, y_test, "multiclass") > 0.85
    if cls is TabSwiftModel:
        assert 2 in set(model.model.y_context_.tolist())  # the subsampled context kept the lone class


@BOTH
def test_zero_usable_features_is_a_clear_error(cls, tmp_path):
    y = pd.Series(np.tile([0, 1], 50))
    with pytest.raises(NoValidFeatures):
        _fit(cls, tmp_path, pd.DataFrame(index=range(100)), y, "binary")
    with pytest.raises(NoValidFeatures):  # only an all-missing column: nothing usable either
        _fit(cls, tmp_path, pd.DataFrame({"empty": [np.nan] * 100}), y, "binary")


@BOTH
def test_column_all_missing_at_predict_time_is_imputed_with_the_training_median(cls, tmp_path):
    """A column complete in training arrives all-missing at predict time (an all-missing column at fit is
    dropped by AutoGluon before the model; at predict it is the model's own preprocessing that answers):
    the rows must be predicted exactly as if the column held its training median. (240 rows: TabSwift's
    context is then the whole training set, not a subsample with its own median.)"""
    X, y = _linear(240, 1)
    model = _fit(cls, tmp_path, X, y, "binary")
    X_test, _ = _linear(100, 2)
    missing, median = X_test.copy(), X_test.copy()
    missing["f2"] = np.nan
    median["f2"] = float(X["f2"].median())
    proba = model.predict_proba(missing)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba, model.predict_proba(median), atol=1e-5)


@BOTH
def test_constant_regression_target_predicts_the_constant(cls, tmp_path):
    X, _ = _linear(200, 3)
    model = _fit(cls, tmp_path, X, pd.Series(np.full(200, 1234.5)), "regression")
    pred = model.predict(_linear(50, 4)[0])
    np.testing.assert_allclose(pred, 1234.5, rtol=1e-6)


@BOTH
def test_single_feature(cls, tmp_path):
    rng = np.random.default_rng(5)
    x = rng.normal(size=500)
    X, y = pd.DataFrame({"x": x}), pd.Series((x + 0.2 * rng.normal(size=500) > 0).astype(int))
    model = _fit(cls, tmp_path, X.iloc[:400], y.iloc[:400], "binary")
    assert _accuracy(model, X.iloc[400:], y.iloc[400:]) > 0.85


@BOTH
def test_targets_of_scale_1e9(cls, tmp_path):
    """Regression around 5e9 with a spread of 1e9 must give the unit-scale fit's predictions, mapped by the
    same affine map: the target's standardization is exact (no float32 loss of a 5e9 mean) and undone."""
    X, _ = _linear(500, 6)
    small = X["f0"] + 0.5 * X["f1"]
    big = 5e9 + 1e9 * small
    pred_small = _fit(cls, tmp_path / "small", X.iloc[:400], small.iloc[:400], "regression").predict(X.iloc[400:])
    pred_big = _fit(cls, tmp_path / "big", X.iloc[:400], big.iloc[:400], "regression").predict(X.iloc[400:])
    np.testing.assert_allclose((pred_big - 5e9) / 1e9, pred_small, atol=1e-3)
    assert np.corrcoef(pred_big, big.iloc[400:])[0, 1] > 0.75


@lru_cache(maxsize=None)
def _wide_fit_memory(cls_name: str) -> dict:
    """The 520-feature fit's peak memory and the model's estimate, measured once per model class (two tests
    read the TabSwift measurement)."""
    X, y = _wide(360, 7)
    if cls_name == "MayaModel":
        hp, fit_hp = {**MAYA_TINY, "max_epochs": 2, "patience": None, "batch_size": 32, "parallel_members": 1}, \
            {"ag.max_features": 1000}
    else:
        hp, fit_hp = TABSWIFT_TINY, {}
    return fit_memory_in_fresh_process(cls_name, X.iloc[:300], y.iloc[:300], X.iloc[300:], hp, fit_hp=fit_hp)


def test_tabswift_520_features_fit_within_its_memory_estimate():
    """520 correlated columns driven by 4 factors: TabSwift projects to F_max=100.  The fit must use no more
    memory than the model's own estimate, which AutoGluon compares with the available memory before fitting."""
    r = _wide_fit_memory("TabSwiftModel")
    assert r["increase"] <= r["estimate"], memory_report(r)
    proba = r["proba"]
    assert np.isfinite(proba).all() and proba.shape == (60,)
    _, y = _wide(360, 7)
    assert float(((proba > 0.5).astype(int) == y.iloc[300:].to_numpy()).mean()) > 0.75


def test_tabswift_520_features_memory_estimate_is_within_2x_of_the_fit():
    r = _wide_fit_memory("TabSwiftModel")
    assert r["estimate"] <= 2 * r["increase"], memory_report(r)


def test_maya_520_features_memory_estimate_is_within_2x_of_the_fit():
    """MAYA sees 521 tokens per row.  Its estimate must hold the fit's peak memory and not be more than twice
    it (an estimate 2x off would decline fits that fit, or fit what does not).  Measured in a fresh process
    (``fit_memory_in_fresh_process``; the estimate adds torch's import only where it has not happened)."""
    r = _wide_fit_memory("MayaModel")
    assert r["increase"] <= r["estimate"] <= 2 * r["increase"], memory_report(r)
    assert np.isfinite(r["proba"]).all()


@pytest.mark.slow
def test_maya_520_features_trains_within_a_30s_limit(tmp_path):
    """MAYA on 520 columns with time_limit=30: trained (not skipped as infeasible) and within the limit
    (measured without a limit: 20 training steps at batch 32 in 10.9 s)."""
    X, y = _wide(360, 7)
    limit = 30.0
    t0 = time.monotonic()
    model = _fit(MayaModel, tmp_path, X.iloc[:300], y.iloc[:300], "binary",
                 hp={"max_epochs": 1000, "patience": None, "batch_size": 32, "ag.max_features": 1000},
                 time_limit=limit)
    wall = time.monotonic() - t0
    assert wall <= limit * 1.05 + 2, f"fit took {wall:.1f} s against time_limit={limit}"
    assert model._fit_summary["steps"] >= 8


@pytest.mark.parametrize("key", ["MAYA", "TABSWIFT"])
def test_datetime_bool_and_text_columns_through_autogluon(key, tmp_path):
    """AutoGluon turns datetime, bool and text columns into numeric features before the models see them.
    The label needs both the bool and the date (XOR), so a model that lost either stays near chance; the
    text column (6 random words) is noise that must not drown them: with AutoGluon's ~57 text n-gram count
    columns as input MAYA and TabSwift fell to 0.53 / 0.55 where LightGBM stays at 1.0."""
    from autogluon.tabular import TabularPredictor

    rng = np.random.default_rng(8)
    n = 600
    words = np.array(["red", "green", "blue", "small", "large", "old", "new"])
    df = pd.DataFrame({
        "when": pd.to_datetime("2010-01-01") + pd.to_timedelta(rng.integers(0, 3650, size=n), unit="D"),
        "flag": rng.random(n) > 0.5,
        "note": [" ".join(rng.choice(words, size=6)) for _ in range(n)],
        "x": rng.normal(size=n),
    })
    df["y"] = (df["flag"] ^ (df["when"].dt.year >= 2015)).astype(int)
    hp = {"MAYA": {**MAYA_TINY, "max_epochs": 30}, "TABSWIFT": TABSWIFT_TINY}[key]
    pred = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        df.iloc[:450], hyperparameters={key: hp}, fit_weighted_ensemble=False, raise_on_model_failure=True,
        num_cpus=1)
    test = df.iloc[450:]
    acc = float((pred.predict(test) == test["y"]).mean())
    assert acc > 0.85, f"{key}: accuracy {acc:.3f} on a bool-XOR-date label"
