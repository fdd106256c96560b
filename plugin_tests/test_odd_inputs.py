"""Odd inputs that reach the models themselves.

Through ``TabularPredictor`` several odd cases never reach a model: a 1-row class is dropped by
``label_count_threshold``, an all-missing column is dropped by the feature generators. Here the model
classes are fitted directly (``MayaModel(...).fit``), so what is tested is the model's own handling.
AutoGluon's ``AbstractModel.fit`` still drops columns with a single value and raises ``NoValidFeatures``
when nothing is left; those cases are checked to end in that clear error (which makes a predictor skip
the model) rather than in a crash inside the model.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from autogluon.core.utils.exceptions import NoValidFeatures

from autogluon_maya import MayaModel, TabSwiftModel
from plugin_tests.resources import fit_on_cores

MAYA_TINY = {"max_epochs": 15, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "batch_size": 64}
TABSWIFT_TINY = {"n_estimators": 1, "max_context_rows": 256}
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


def _vm_hwm():
    """This process's peak resident memory in bytes (VmHWM of /proc/self/status), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class _PeakRss:
    """Peak resident memory of this process while the block runs: the kernel's own high-water mark (VmHWM,
    reset at the start through /proc/self/clear_refs) where Linux offers it, else sampled every 20 ms (which
    can miss a short peak)."""

    def __enter__(self):
        import psutil

        self._proc, self._stop = psutil.Process(), threading.Event()
        self.start = self.peak = self._proc.memory_info().rss
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
            hwm = _vm_hwm()
            self._hwm = hwm is not None and hwm - self.start < 2**20  # trusted only if the reset took
        except OSError:
            self._hwm = False
        self._thread = None if self._hwm else threading.Thread(target=self._sample, daemon=True)
        if self._thread is not None:  # the kernel's mark covers every sample the thread could take
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._hwm:
            self.peak = max(self.peak, _vm_hwm())

    @property
    def increase(self) -> int:
        return self.peak - self.start


@pytest.mark.parametrize("cls", [TabSwiftModel], ids=["TABSWIFT"])
def test_520_features_fit_within_the_memory_estimate(cls, tmp_path):
    """520 correlated columns driven by 4 factors: TabSwift projects to F_max=100.  The fit must use no more
    memory than the model's own estimate, which AutoGluon compares with the available memory before fitting."""
    X, y = _wide(360, 7)
    estimate = cls._estimate_memory_usage_static(X=X.iloc[:300], hyperparameters=HP[cls], num_classes=2)
    with _PeakRss() as rss:
        model = _fit(cls, tmp_path, X.iloc[:300], y.iloc[:300], "binary")
        proba = model.predict_proba(X.iloc[300:])
    assert rss.increase <= estimate, f"peak RSS grew {rss.increase / 2**20:.0f} MiB, estimate {estimate / 2**20:.0f} MiB"
    assert np.isfinite(proba).all() and proba.shape == (60,)
    assert _accuracy(model, X.iloc[300:], y.iloc[300:]) > 0.75


MAYA_MEMORY_FIT = """
import json, sys
import numpy as np, pandas as pd, torch
from autogluon_maya import MayaModel
sys.path.insert(0, {root!r})
from plugin_tests.test_odd_inputs import _PeakRss, _wide
X, y = _wide(360, 7)
hp = json.loads({hp!r})
estimate = MayaModel._estimate_memory_usage_static(X=X.iloc[:300], hyperparameters=hp, num_classes=2)
with _PeakRss() as rss:
    model = MayaModel(path={path!r}, name="m", problem_type="binary",
                      hyperparameters={{**hp, "ag.max_features": 1000}})
    model.fit(X=X.iloc[:300], y=y.iloc[:300], num_cpus=1)
    proba = model.predict_proba(X.iloc[300:])
print(json.dumps({{"increase": rss.increase, "estimate": estimate, "finite": bool(np.isfinite(proba).all())}}))
"""


def test_maya_520_features_memory_estimate_is_within_2x_of_the_fit(tmp_path):
    """MAYA sees 521 tokens per row.  Its estimate must hold the fit's peak memory and not be more than twice
    it (an estimate 2x off would decline fits that fit, or fit what does not).  Measured in a fresh process,
    whose resident memory grows only by what the fit allocates (torch imported first, as AutoGluon has it then:
    the estimate adds torch's import only where it has not happened)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    hp = {**MAYA_TINY, "max_epochs": 2, "patience": None, "batch_size": 32, "parallel_members": 1}
    code = MAYA_MEMORY_FIT.format(root=str(Path(__file__).resolve().parent.parent), hp=json.dumps(hp), path=str(tmp_path / "m"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    mib = f"peak RSS grew {r['increase'] / 2**20:.0f} MiB, estimate {r['estimate'] / 2**20:.0f} MiB"
    assert r["increase"] <= r["estimate"] <= 2 * r["increase"], mib
    assert r["finite"]


def test_maya_declines_520_features_by_default_with_a_clear_error(tmp_path):
    from autogluon.core.utils.exceptions import ConstraintViolationError

    X, y = _wide(100, 7)
    with pytest.raises(ConstraintViolationError, match="max_features"):
        _fit(MayaModel, tmp_path, X, y, "binary")


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
