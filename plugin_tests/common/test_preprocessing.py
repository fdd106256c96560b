"""Shared preprocessing (TabularEncoder, TargetScaler) and training helpers (batch_slices,
BestCheckpoint, torch_threads)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.preprocessing import QuantileTransformer

from autogluon_maya.common.preprocessing import NUMERIC_TRANSFORMS, TabularEncoder, TargetScaler, numeric_width
from autogluon_maya.common.training import BestCheckpoint, batch_slices, torch_threads
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

# torch_globals_kept first: it saves the thread count and random state before one_torch_thread_seeded sets them
# (and before the tests do), and puts both back after
pytestmark = pytest.mark.usefixtures("torch_globals_kept", "one_torch_thread_seeded")


def _train_frame(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=n), "b": rng.exponential(size=n)})


# ---- TabularEncoder: numerics ---------------------------------------------------------------------
def test_quantile_transform_is_fitted_on_train_only():
    train = _train_frame()
    enc = TabularEncoder().fit(train)
    reference = QuantileTransformer(output_distribution="normal", n_quantiles=len(train), subsample=10**9,
                                    random_state=0).fit(train.to_numpy())
    quantiles_before = enc._qt.quantiles_.copy()

    test = pd.DataFrame({"a": [-100.0, 100.0, train["a"][5], 0.1], "b": [50.0, -3.0, train["b"][5], 0.2]})
    out_test = enc.transform(test).x_num
    out_train = enc.transform(train).x_num
    np.testing.assert_allclose(out_train, reference.transform(train.to_numpy()), atol=1e-5)
    np.testing.assert_allclose(out_test, reference.transform(test.to_numpy()), atol=1e-5)
    np.testing.assert_array_equal(enc._qt.quantiles_, quantiles_before)  # no refit on the test frame
    np.testing.assert_allclose(out_test[2], out_train[5], atol=1e-6)  # same value -> same output
    # out-of-range values clip to the training extremes
    np.testing.assert_allclose(out_test[0, 0], out_train[:, 0].min(), atol=1e-6)
    np.testing.assert_allclose(out_test[1, 0], out_train[:, 0].max(), atol=1e-6)
    np.testing.assert_allclose(out_test[1, 1], out_train[:, 1].min(), atol=1e-6)
    # a refit on train + test would move the training rows: the check above can tell
    refit = TabularEncoder().fit(pd.concat([train, test], ignore_index=True)).transform(train).x_num
    assert np.abs(refit - out_train).max() > 1e-3
    np.testing.assert_array_equal(enc.transform(train).x_num, out_train)


def test_without_numeric_transform_values_pass_through():
    train = _train_frame(20)
    enc = TabularEncoder(numeric_transform="none").fit(train)
    out = enc.transform(train)
    assert out.x_num.dtype == np.float32 and out.x_cat.shape == (20, 0)
    np.testing.assert_allclose(out.x_num, train.to_numpy(), rtol=1e-6)


def test_minmax_is_linear_bounded_and_fitted_on_train_only():
    """``minmax`` keeps each feature's geometry (an affine map, so equal steps stay equal: a faint and a full
    pixel stay apart) and bounds it to [-1, 1] with the training extremes, clipping what lies outside them."""
    train = pd.DataFrame({"px": [0.0, 0.0, 0.0, 1.0, 16.0, 0.0, 8.0, 0.0], "t": np.linspace(-3.0, 5.0, 8)})
    enc = TabularEncoder(numeric_transform="minmax").fit(train)
    out = enc.transform(train).x_num
    np.testing.assert_allclose(out[:, 0], train["px"] / 8.0 - 1.0, atol=1e-6)  # 0..16 -> -1..1, linear
    np.testing.assert_allclose(out[:, 1], (train["t"] + 3.0) / 4.0 - 1.0, atol=1e-6)
    test = enc.transform(pd.DataFrame({"px": [40.0, -2.0, 4.0], "t": [9.0, -10.0, 1.0]})).x_num
    np.testing.assert_allclose(test, [[1.0, 1.0], [-1.0, -1.0], [-0.5, 0.0]], atol=1e-6)
    # quantile-normal bends the same column: 0 -> 1 is a bigger step than 1 -> 16
    q = TabularEncoder().fit(train).transform(pd.DataFrame({"px": [0.0, 1.0, 16.0], "t": [0.0] * 3})).x_num[:, 0]
    assert q[1] - q[0] > q[2] - q[1]


def test_minmax_or_quantile_chooses_per_column_by_outliers():
    """A column whose range one outlier sets goes through the quantile transform (min-max would squeeze its bulk
    into a sliver), a column the bulk fills through min-max."""
    rng = np.random.default_rng(0)
    train = pd.DataFrame({"px": rng.integers(0, 17, 400).astype(float),
                          "income": np.r_[rng.normal(size=399), 1000.0], "const": np.ones(400)})
    enc = TabularEncoder(numeric_transform="minmax_or_quantile").fit(train)
    out = enc.transform(train).x_num
    only_minmax = TabularEncoder(numeric_transform="minmax").fit(train).transform(train).x_num
    only_quantile = TabularEncoder(numeric_transform="quantile").fit(train).transform(train).x_num
    np.testing.assert_allclose(out[:, 0], only_minmax[:, 0], atol=1e-6)
    np.testing.assert_allclose(out[:, 1], only_quantile[:, 1], atol=1e-6)
    assert np.ptp(out[:-1, 1]) > 2.0  # the bulk keeps its spread (min-max would give it < 0.01)
    assert np.ptp(out[:, 2]) == 0.0


def test_an_encoder_pickled_before_numeric_transform_names_what_it_applies():
    """A saved model from the previous version holds ``quantile_transform`` (True/False) in its encoder's state."""
    import pickle

    train = _train_frame(30)
    for legacy, want in ((True, "quantile"), (False, "none")):
        enc = TabularEncoder(numeric_transform=want).fit(train)
        state = dict(enc.__dict__)
        del state["numeric_transform"]
        state["quantile_transform"] = legacy
        old = TabularEncoder.__new__(TabularEncoder)
        old.__setstate__(state)
        loaded = pickle.loads(pickle.dumps(old))
        assert loaded.numeric_transform == want and not hasattr(loaded, "quantile_transform")
        np.testing.assert_array_equal(loaded.transform(train).x_num, enc.transform(train).x_num)


def test_standard_is_the_training_z_score():
    train = _train_frame(50)
    out = TabularEncoder(numeric_transform="standard").fit(train).transform(train).x_num
    np.testing.assert_allclose(out.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.std(0), 1.0, atol=1e-5)


def test_unknown_numeric_transform_is_named():
    with pytest.raises(ValueError, match="numeric_transform.*'robust'"):
        TabularEncoder(numeric_transform="robust").fit(_train_frame(10))


def test_inf_and_nan_become_finite_with_missing_indicator():
    a = np.linspace(-1.0, 1.0, 12)
    a[[3, 5, 7]] = [np.nan, np.inf, -np.inf]
    train = pd.DataFrame({"a": a, "b": np.arange(12.0)})
    for qt in NUMERIC_TRANSFORMS:
        enc = TabularEncoder(numeric_transform=qt).fit(train)
        assert enc.num_cols == ["a", "b"] and enc.nan_indicator_cols == ["a"] and enc.n_num == 3
        out = enc.transform(train).x_num
        assert out.shape == (12, 3) and np.isfinite(out).all()
        expected = np.zeros(12)
        expected[[3, 5, 7]] = 1
        np.testing.assert_array_equal(out[:, 2], expected)
        # missing rows are imputed with the median of the finite training values
        median = np.median(np.delete(a, [3, 5, 7]))
        imputed = enc.transform(pd.DataFrame({"a": [median], "b": [0.0]})).x_num[0, 0]
        np.testing.assert_allclose(out[[3, 5, 7], 0], imputed, atol=1e-6)
        if qt == "none":
            np.testing.assert_allclose(out[[3, 5, 7], 0], median, rtol=1e-6)

    # at transform time: b had no missing values in training -> no indicator, still imputed
    test = pd.DataFrame({"a": [np.inf, 0.5, np.nan], "b": [np.nan, -np.inf, 4.0]})
    out = enc.transform(test).x_num
    assert out.shape == (3, 3) and np.isfinite(out).all()
    np.testing.assert_array_equal(out[:, 2], [1, 0, 1])
    np.testing.assert_allclose(out[:2, 1], np.median(np.arange(12.0)))


def test_all_missing_columns_are_finite():
    train = pd.DataFrame({"x": np.arange(6.0), "c": [np.nan] * 6, "o": [None] * 6,
                          "i": [np.inf, -np.inf] * 3})
    for qt in NUMERIC_TRANSFORMS:
        enc = TabularEncoder(numeric_transform=qt).fit(train)
        assert enc.cat_cols == ["o"] and enc.cat_cardinalities == [0]
        assert set(enc.nan_indicator_cols) == {"c", "i"}
        out = enc.transform(train)
        assert np.isfinite(out.x_num).all()
        assert (out.x_cat == 0).all()
        test = enc.transform(pd.DataFrame({"x": [1.0], "c": [3.0], "o": ["new"], "i": [2.0]}))
        assert np.isfinite(test.x_num).all() and test.x_cat[0, 0] == 0


def test_nullable_integer_column_is_numeric():
    train = pd.DataFrame({"n": pd.array([1, None, 3, 4], dtype="Int64")})
    enc = TabularEncoder(numeric_transform="none").fit(train)
    out = enc.transform(train).x_num
    assert enc.num_cols == ["n"] and enc.nan_indicator_cols == ["n"]
    np.testing.assert_allclose(out[:, 0], [1, 3, 3, 4])
    np.testing.assert_array_equal(out[:, 1], [0, 1, 0, 0])


# ---- TabularEncoder: categoricals -----------------------------------------------------------------
def test_object_categories_codes_seen_unseen_missing():
    train = pd.DataFrame({"c": ["x", "y", "z", "x", None, "y"], "v": np.arange(6.0)})
    enc = TabularEncoder().fit(train)
    assert enc.cat_cols == ["c"] and enc.num_cols == ["v"] and enc.cat_cardinalities == [3]
    codes = enc.transform(train).x_cat[:, 0]
    assert codes[4] == 0
    seen = {v: codes[i] for i, v in enumerate(train["c"]) if v is not None}
    assert sorted(set(seen.values())) == [1, 2, 3]
    assert codes[0] == codes[3] and codes[1] == codes[5]
    test = pd.DataFrame({"c": ["z", "w", None, "x", np.nan, "y"], "v": np.zeros(6)})
    test_codes = enc.transform(test).x_cat[:, 0]
    np.testing.assert_array_equal(test_codes, [seen["z"], 0, 0, seen["x"], 0, seen["y"]])


def test_category_dtype_uses_training_values_only():
    dtype = pd.CategoricalDtype(["lo", "mid", "hi", "never"])
    train = pd.DataFrame({"c": pd.Series(["hi", "lo", "mid", None, "lo"], dtype=dtype), "v": np.arange(5.0)})
    enc = TabularEncoder().fit(train)
    assert enc.cat_cols == ["c"] and enc.cat_cardinalities == [3]  # "never" did not occur in training
    codes = enc.transform(train).x_cat[:, 0]
    assert codes[3] == 0 and sorted(set(codes[[0, 1, 2]])) == [1, 2, 3] and codes[1] == codes[4]
    # a test frame whose dtype lists categories in another order still maps by value
    test_dtype = pd.CategoricalDtype(["never", "hi", "new", "mid", "lo"])
    test = pd.DataFrame({"c": pd.Series(["lo", "never", "new", "hi", None, "mid"], dtype=test_dtype),
                         "v": np.zeros(6)})
    np.testing.assert_array_equal(enc.transform(test).x_cat[:, 0], [codes[1], 0, 0, codes[0], 0, codes[2]])


def test_category_object_and_string_dtypes_are_categorical():
    train = pd.DataFrame({
        "cat": pd.Series(["a", "b", "a"], dtype="category"),
        "obj": pd.Series(["u", "v", "w"], dtype=object),
        "str": pd.Series(["p", None, "q"], dtype="string"),
        "num": [1.0, 2.0, 3.0],
        "int": [1, 2, 3],
        "bool": [True, False, True],
    })
    enc = TabularEncoder().fit(train)
    assert enc.cat_cols == ["cat", "obj", "str"]
    assert enc.num_cols == ["num", "int", "bool"]
    assert enc.cat_cardinalities == [2, 3, 2]
    out = enc.transform(train)
    assert out.x_cat.dtype == np.int64 and out.x_cat.shape == (3, 3) and out.x_num.shape == (3, 3)
    assert out.x_cat[1, 2] == 0 and out.x_cat[0, 0] == out.x_cat[2, 0] != 0


def test_missing_column_at_transform_raises_keyerror_naming_it():
    train = pd.DataFrame({"keep": [1.0, 2.0], "gone_num": [3.0, 4.0], "gone_cat": ["a", "b"]})
    enc = TabularEncoder().fit(train)
    with pytest.raises(KeyError, match="gone_num") as info:
        enc.transform(train.drop(columns=["gone_num", "gone_cat"]))
    assert "gone_cat" in str(info.value) and "'keep'" not in str(info.value)
    # extra columns are ignored, column order does not matter
    shuffled = train[["gone_cat", "gone_num", "keep"]].assign(extra=0)
    np.testing.assert_array_equal(enc.transform(shuffled).x_num, enc.transform(train).x_num)


def test_fit_on_empty_table_raises():
    with pytest.raises(ValueError):
        TabularEncoder().fit(pd.DataFrame({"a": []}))


# ---- TargetScaler ---------------------------------------------------------------------------------
def test_target_scaler_round_trip():
    y = np.random.default_rng(0).normal(5.0, 3.0, size=50)
    sc = TargetScaler(y)
    z = sc.transform(y)
    assert z.dtype == np.float32
    np.testing.assert_allclose(z.mean(), 0.0, atol=1e-5)
    np.testing.assert_allclose(z.std(), 1.0, atol=1e-5)
    np.testing.assert_allclose(sc.inverse(z), y, rtol=1e-5)
    np.testing.assert_allclose(sc.inverse(sc.transform([100.0])), [100.0], rtol=1e-5)


def test_target_scaler_constant_target():
    sc = TargetScaler(np.full(10, 7.0))
    assert sc.std == 1.0 and sc.mean == 7.0
    np.testing.assert_array_equal(sc.transform(np.full(3, 7.0)), np.zeros(3))
    np.testing.assert_allclose(sc.inverse(np.zeros(3)), 7.0)
    # a constant target maps any network output back to the constant itself
    np.testing.assert_allclose(sc.inverse([0.3, -2.0]), [7.0, 7.0])


# ---- batch_slices ---------------------------------------------------------------------------------
def test_batch_slices_cover_every_row_once_and_avoid_single_row_batches():
    rng = np.random.default_rng(0)
    for batch_size in (2, 3, 4, 7, 16, 64):
        for n in range(1, 70):
            batches = list(batch_slices(n, batch_size, rng))
            np.testing.assert_array_equal(np.sort(np.concatenate(batches)), np.arange(n))
            sizes = [len(b) for b in batches]
            if n > 1:
                assert min(sizes) > 1, (n, batch_size, sizes)
            assert max(sizes) <= batch_size + 1, (n, batch_size, sizes)
            assert len(batches) == max(1, n // batch_size + (n % batch_size > 1)), (n, batch_size, sizes)


def test_batch_slices_are_shuffled_and_seeded():
    a = np.concatenate(list(batch_slices(100, 32, np.random.default_rng(3))))
    b = np.concatenate(list(batch_slices(100, 32, np.random.default_rng(3))))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, np.arange(100))


def test_batch_slices_batch_size_one_has_no_single_row_batches():
    sizes = [len(b) for b in batch_slices(3, 1, np.random.default_rng(0))]
    assert min(sizes) > 1, sizes


# ---- BestCheckpoint -------------------------------------------------------------------------------
def test_best_checkpoint_restores_best_and_stops_after_patience():
    torch.manual_seed(0)
    module = torch.nn.Linear(2, 1)
    ckpt = BestCheckpoint(patience=3)
    states = {}
    scores = [0.1, 0.5, 0.3, float("nan"), 0.5]  # 0.5 again is not an improvement
    stops = []
    for epoch, score in enumerate(scores, start=1):
        with torch.no_grad():
            module.weight.add_(1.0)
        states[epoch] = {k: v.clone() for k, v in module.state_dict().items()}
        improved = ckpt.update(score, epoch, module)
        assert improved == (epoch in (1, 2))
        stops.append(ckpt.should_stop())
    assert stops == [False, False, False, False, True]
    assert ckpt.best_epoch == 2 and ckpt.best_score == 0.5
    ckpt.restore(module)
    for k, v in module.state_dict().items():
        torch.testing.assert_close(v, states[2][k], rtol=0, atol=0)
    # an improvement resets the counter
    ckpt.update(0.9, 6, module)
    assert not ckpt.should_stop() and ckpt.best_epoch == 6


def test_best_checkpoint_without_patience_never_stops_and_nan_is_never_best():
    module = torch.nn.Linear(2, 1)
    ckpt = BestCheckpoint(patience=None)
    assert not ckpt.update(float("nan"), 1, module) and ckpt.best_state is None
    for epoch in range(2, 20):
        ckpt.update(-float(epoch), epoch, module)
    assert not ckpt.should_stop() and ckpt.best_epoch == 2


# ---- torch_threads --------------------------------------------------------------------------------
def test_torch_threads_restores_thread_count():
    torch.set_num_threads(2)
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError):
        with torch_threads(1):
            raise RuntimeError("boom")
    assert torch.get_num_threads() == 2
    with torch_threads(None):
        assert torch.get_num_threads() == 2
    assert torch.get_num_threads() == 2


def test_numeric_width_is_the_encoders_numeric_input_count():
    """What a memory estimate counts without fitting the encoder: NaN and +-inf both make a missing indicator."""
    X = pd.DataFrame({"clean": np.arange(6.0), "nan": [1.0, np.nan, 3.0, 4.0, 5.0, 6.0],
                      "inf": [1.0, 2.0, np.inf, 4.0, 5.0, 6.0], "neg_inf": [-np.inf, 2.0, 3.0, 4.0, 5.0, 6.0],
                      "cat": pd.Categorical(list("abcabc"))})
    enc = TabularEncoder().fit(X)
    assert numeric_width(X) == enc.n_num == 4 + 3
    assert numeric_width(X[["cat"]]) == 0
