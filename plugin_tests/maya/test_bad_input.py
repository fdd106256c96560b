"""Bad input through the real TabularPredictor: each case gives valid predictions or a clear error."""

import numpy as np
import pandas as pd
import pytest
from autogluon.tabular import TabularPredictor

TINY = {"max_epochs": 4, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "batch_size": 64}


def _frame(n=240, seed=0):
    rng = np.random.default_rng(seed)
    x1, x2 = rng.normal(size=n), rng.normal(size=n)
    cat = rng.choice(["a", "b", "c"], size=n)
    y = ((x1 + (cat == "a")) > 0.3).astype(int)
    return pd.DataFrame({"x1": x1, "x2": x2, "cat": cat, "y": y})


def _fit(df, label="y", **kw):
    return TabularPredictor(label=label, path="ag", verbosity=0, **kw).fit(
        df, hyperparameters={"MAYA": TINY}, raise_on_model_failure=True, fit_weighted_ensemble=False)


def test_nan_and_inf_in_numerics_train_and_test():
    df = _frame()
    df.loc[::7, "x1"] = np.nan
    df.loc[::11, "x2"] = np.inf
    df.loc[::13, "x2"] = -np.inf
    pred = _fit(df)
    test = _frame(50, seed=1).drop(columns="y")
    test.loc[::3, "x1"] = np.nan
    test.loc[::4, "x2"] = np.inf
    proba = pred.predict_proba(test)
    assert proba.shape == (50, 2)
    assert np.isfinite(proba.to_numpy()).all()
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-5)


def test_unseen_category_at_predict_time_is_treated_as_missing():
    df = _frame()
    pred = _fit(df)
    test = _frame(30, seed=2).drop(columns="y")
    unseen = test.copy()
    unseen["cat"] = "never_seen"
    missing = test.copy()
    missing["cat"] = np.nan
    p_unseen, p_missing = pred.predict_proba(unseen), pred.predict_proba(missing)
    assert np.isfinite(p_unseen.to_numpy()).all()
    # both go to the reserved code 0, so the model sees the same input
    np.testing.assert_allclose(p_unseen.to_numpy(), p_missing.to_numpy(), atol=1e-6)


def test_all_missing_column():
    df = _frame()
    df["empty"] = np.nan
    pred = _fit(df)
    test = _frame(20, seed=3).drop(columns="y")
    test["empty"] = 5.0  # values appear only at predict time
    out = pred.predict_proba(test)
    assert np.isfinite(out.to_numpy()).all() and len(out) == 20


def test_single_row_class_multiclass():
    df = _frame(300)
    df["y"] = np.where(df.x2 > 0.5, "hi", np.where(df.x2 < -0.5, "lo", "mid"))
    df.loc[0, "y"] = "lonely"  # one row of a fourth class
    pred = _fit(df, problem_type="multiclass")
    proba = pred.predict_proba(df.drop(columns="y").head(40))
    assert np.isfinite(proba.to_numpy()).all()
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-5)
    assert set(pred.predict(df.drop(columns="y").head(40))) <= set(pred.class_labels)


def test_regression_with_constant_target_predicts_that_constant():
    df = _frame()
    df["y"] = 3.25
    pred = _fit(df, problem_type="regression")
    np.testing.assert_allclose(pred.predict(df.head(10).drop(columns="y")), 3.25, atol=1e-4)


def test_model_learns_a_simple_signal():
    """Not a smoke test: a clean threshold signal must be learned well above chance."""
    df = _frame(600)
    pred = TabularPredictor(label="y", path="ag2", verbosity=0).fit(
        df.iloc[:450], hyperparameters={"MAYA": {**TINY, "max_epochs": 30}}, raise_on_model_failure=True,
        fit_weighted_ensemble=False)
    acc = (pred.predict(df.iloc[450:].drop(columns="y")) == df.iloc[450:].y).mean()
    assert acc > 0.8, acc


def test_label_smoothing_out_of_range_is_an_error_naming_it():
    # the fit builds its loss from the setting: a model that ignored it would train without complaint
    with pytest.raises(ValueError, match="label_smoothing"):
        TabularPredictor(label="y", path="ag", verbosity=0).fit(
            _frame(), hyperparameters={"MAYA": {**TINY, "label_smoothing": 1.0}}, raise_on_model_failure=True,
            fit_weighted_ensemble=False)


@pytest.mark.parametrize("setting, problem_type, want", [
    ({"numeric_transform": "minmax"}, "binary", "minmax"),
    ({"numeric_transform": "none"}, "binary", "none"),
    # the setting before numeric_transform existed still wins
    ({"numeric_transform": "minmax", "quantile_transform": False}, "binary", "none"),
    ({"quantile_transform": True}, "multiclass", "quantile"),
    # "auto" (defaults.PROBLEM_TYPE_DEFAULTS)
    ({}, "multiclass", "minmax_or_quantile"),
    ({}, "binary", "quantile"),
    ({}, "regression", "quantile"),
    ({}, "quantile", "quantile")])
def test_numeric_transform_reaches_the_fitted_encoder(setting, problem_type, want):
    """What the model's encoder does to a numeric column is what the setting asks for."""
    df, val = _frame(), _frame(60, seed=1)
    if problem_type == "multiclass":
        for frame in (df, val):
            frame["y"] += (frame["x2"] > 0.5).astype(int)
    levels = {"quantile_levels": [0.1, 0.5, 0.9]} if problem_type == "quantile" else {}
    # with tuning_data given, every row of df is a training row: the encoder is fitted on exactly df
    pred = TabularPredictor(label="y", path="ag", verbosity=0, problem_type=problem_type, **levels).fit(
        df, tuning_data=val, hyperparameters={"MAYA": {**TINY, **setting}}, raise_on_model_failure=True,
        fit_weighted_ensemble=False)
    model = pred._trainer.load_model(pred.model_names()[0])
    assert model._encoder.numeric_transform == want
    x1 = model._encoder.transform(pred._learner.transform_features(df.drop(columns="y"))).x_num[:, 0]
    raw = df["x1"].to_numpy()
    minmax = 2 * (raw - raw.min()) / (raw.max() - raw.min()) - 1
    # x1 is normal: its bulk fills its range, so minmax_or_quantile takes min-max for it
    expected = {"minmax": minmax, "minmax_or_quantile": minmax, "none": raw}.get(want)
    if expected is not None:
        np.testing.assert_allclose(x1, expected, atol=1e-5)
    else:  # quantile-normal: monotone, not affine
        assert np.corrcoef(np.argsort(np.argsort(x1)), np.argsort(np.argsort(raw)))[0, 1] > 0.999
        assert not np.allclose(x1, minmax, atol=1e-2)


@pytest.mark.parametrize("setting, problem_type, want", [
    ({"numeric_scale": 2.5}, "binary", 2.5),
    ({}, "multiclass", 5.0),  # "auto" (defaults.PROBLEM_TYPE_DEFAULTS)
    ({}, "binary", 1.0),
    ({}, "regression", 1.0)])
def test_numeric_scale_reaches_the_network(setting, problem_type, want):
    df = _frame()
    if problem_type == "multiclass":
        df["y"] += (df["x2"] > 0.5).astype(int)
    pred = TabularPredictor(label="y", path="ag", verbosity=0, problem_type=problem_type).fit(
        df, hyperparameters={"MAYA": {**TINY, **setting}}, raise_on_model_failure=True, fit_weighted_ensemble=False)
    model = pred._trainer.load_model(pred.model_names()[0])
    assert {m.net.tokenizer.num_scale for m in model.model.members} == {want}
    if problem_type == "multiclass":  # refit_full replays what "auto" became
        refit = pred._trainer.load_model(pred.refit_full()[model.name])
        assert {m.net.tokenizer.num_scale for m in refit.model.members} == {want}


@pytest.mark.parametrize("setting, problem_type, metric, want", [
    ({}, "multiclass", "accuracy", 0.1),  # "auto" (defaults.PROBLEM_TYPE_DEFAULTS)
    ({}, "multiclass", "balanced_accuracy", 0.1),
    ({}, "multiclass", "log_loss", 0.0),  # a probability metric: "auto" is off
    ({}, "multiclass", "roc_auc_ovr_macro", 0.0),
    ({}, "binary", "accuracy", 0.0),
    ({}, "regression", "root_mean_squared_error", 0.0),
    ({"label_smoothing": np.float32(0.05)}, "multiclass", "log_loss", 0.05),  # as given, whatever the metric
    ({"label_smoothing": 0.1}, "binary", "accuracy", 0.1),
    ({"label_smoothing": None}, "multiclass", "accuracy", 0.0)])  # the old "off"
def test_label_smoothing_reaches_the_loss(monkeypatch, setting, problem_type, metric, want):
    """The smoothing the training loss is built with is what the setting, the problem type and the metric ask
    for (make_loss itself is checked against the smoothed cross-entropy in test_network)."""
    from autogluon_maya.maya import trainer

    built = []
    real = trainer.make_loss

    def recording_make_loss(kind, quantile_levels=None, label_smoothing=0.0):
        built.append(label_smoothing)
        return real(kind, quantile_levels, label_smoothing)

    monkeypatch.setattr(trainer, "make_loss", recording_make_loss)
    df = _frame()
    if problem_type == "multiclass":
        df["y"] += (df["x2"] > 0.5).astype(int)
    pred = TabularPredictor(label="y", path="ag", verbosity=0, problem_type=problem_type, eval_metric=metric).fit(
        df, hyperparameters={"MAYA": {**TINY, **setting}}, raise_on_model_failure=True, fit_weighted_ensemble=False)
    assert built == [pytest.approx(want)]
    assert pred._trainer.load_model(pred.model_names()[0]).params_trained["label_smoothing"] == pytest.approx(want)


@pytest.mark.parametrize("value, ok", [(np.float32(2.0), True), (np.int64(3), True), (7, True), (True, False),
                                       (float("nan"), False), (float("inf"), False), (-1.0, False), ("5", False)])
def test_numeric_scale_setting_is_checked_before_the_network(value, ok):
    """The setting's own check (a search space may hand over numpy numbers; bool is an int but not a scale)."""
    from autogluon_maya.maya.defaults import numeric_scale

    if ok:
        assert numeric_scale({"numeric_scale": value}, "binary") == float(value)
    else:
        with pytest.raises(ValueError, match="numeric_scale"):
            numeric_scale({"numeric_scale": value}, "binary")


@pytest.mark.parametrize("value", ["Auto", "0.1", True, 1.0, -0.1])
def test_bad_label_smoothing_fails_naming_it(value):
    """A misspelt "auto", a number as text or True (an int in Python) is no smoothing: the fit fails naming the
    setting rather than converting it or failing inside float()."""
    df = _frame()
    df["y"] += (df["x2"] > 0.5).astype(int)
    with pytest.raises(Exception, match="label_smoothing"):
        TabularPredictor(label="y", path="ag", verbosity=0).fit(
            df, hyperparameters={"MAYA": {**TINY, "label_smoothing": value}}, raise_on_model_failure=True,
            fit_weighted_ensemble=False)


@pytest.mark.parametrize("setting, named", [({"numeric_transform": "log"}, "numeric_transform"),
                                            ({"quantile_transform": "minmax"}, "quantile_transform"),
                                            ({"numeric_scale": 0}, "numeric_scale"),
                                            ({"numeric_scale": "big"}, "numeric_scale")])
def test_bad_numeric_setting_fails_naming_it(setting, named):
    """A transform name the encoder does not know, a string for the True/False ``quantile_transform`` (which
    once silently meant True), or a scale that is not a positive number fails the fit with an error naming the
    setting."""
    with pytest.raises(Exception, match=named):
        TabularPredictor(label="y", path="ag", verbosity=0).fit(
            _frame(), hyperparameters={"MAYA": {**TINY, **setting}}, raise_on_model_failure=True,
            fit_weighted_ensemble=False)
