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


@pytest.mark.parametrize("setting, problem_type, want", [
    ({"numeric_transform": "minmax"}, "binary", "minmax"),
    ({"numeric_transform": "none"}, "binary", "none"),
    ({"numeric_transform": "quantile", "recipe": "paper"}, "binary", "quantile"),
    # the table's (defaults.DEFAULT_PARAMS) and the paper recipe's
    ({}, "multiclass", "quantile"),
    ({"numeric_transform": "minmax_or_quantile"}, "multiclass", "minmax_or_quantile"),
    ({"recipe": "paper"}, "multiclass", "quantile"),
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


@pytest.fixture
def built_networks(monkeypatch):
    """Every ``MayaNetwork`` a fit builds, whether or not the fit keeps it (a fit may give way to the prior)."""
    from autogluon_maya.maya import network

    built, init = [], network.MayaNetwork.__init__

    def recorded(self, *args, **kwargs):
        init(self, *args, **kwargs)
        built.append(self)

    monkeypatch.setattr(network.MayaNetwork, "__init__", recorded)  # the class itself stays picklable
    return built


def _reads_scaled_inputs(net, scale: float) -> bool:
    """Whether the network's numeric tokens of x are those of the same tokenizer at scale 1 of ``scale`` x."""
    import copy

    import torch

    unit = copy.deepcopy(net.tokenizer)
    unit.num_scale = 1.0
    x = torch.randn(5, net.tokenizer.n_num, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        return torch.allclose(net.tokenizer.numeric_tokens(x), unit.numeric_tokens(scale * x), atol=1e-6)


@pytest.mark.parametrize("setting, problem_type, want", [
    ({"numeric_scale": 2.5}, "binary", 2.5),
    ({}, "multiclass", 1.0),  # the table's (defaults.DEFAULT_PARAMS)
    ({"numeric_scale": 5.0}, "multiclass", 5.0),
    ({"recipe": "paper"}, "multiclass", 1.0),
    ({}, "binary", 1.0),
    ({}, "regression", 1.0)])
def test_numeric_scale_reaches_the_network(built_networks, setting, problem_type, want):
    """Every network the fit builds, at the table's settings otherwise, reads s x; refit_full builds its own so."""
    from autogluon_maya.maya.defaults import resolve_defaults

    df = _frame()
    if problem_type == "multiclass":
        df["y"] += (df["x2"] > 0.5).astype(int)
    pred = TabularPredictor(label="y", path="ag", verbosity=0, problem_type=problem_type).fit(
        df, hyperparameters={"MAYA": {**TINY, **setting}}, raise_on_model_failure=True,
        fit_weighted_ensemble=False)
    table = resolve_defaults(problem_type, setting.get("recipe", "default"))
    assert built_networks and all(len(net.blocks[0].branch_norms) == table["num_branch"] for net in built_networks)
    assert {net.tokenizer.num_scale for net in built_networks} == {want}
    assert all(_reads_scaled_inputs(net, want) for net in built_networks)
    if problem_type == "multiclass":  # refit_full replays the members kept, each built with the setting
        model = pred._trainer.load_model(pred.model_names()[0])
        fitted = len(built_networks)
        pred.refit_full()
        refit = built_networks[fitted:]
        assert len(refit) == model.params_trained["refit_members"]
        assert all(net.tokenizer.num_scale == want and _reads_scaled_inputs(net, want) for net in refit)


BAD = [("hidden_size", 0), ("hidden_size", 64.5), ("num_branch", True), ("dropout", 1.0), ("dropout", -0.1),
       ("learning_rate", float("nan")), ("learning_rate", 0), ("weight_decay", -1e-5), ("batch_size", "Auto"),
       ("batch_size", 1), ("recipe", "papers"), ("patience", 0), ("validation_every", "1"), ("ema_epochs", 0),
       ("ensemble_members", 0), ("parallel_members", "yes"), ("adaptive_threads", 1), ("act_type", "gelu"),
       ("decoder_act_type", "tanh"), ("numeric_transform", "log"), ("numeric_scale", float("inf")),
       ("numeric_scale", "5"), ("numeric_scale", -1.0), ("branch_momentum", 1.5), ("qk_shared_weights", "no")]


@pytest.mark.parametrize("key, value", BAD)
def test_every_setting_is_checked_naming_it(key, value):
    from autogluon_maya.maya.defaults import check_params, resolve_defaults

    with pytest.raises(ValueError, match=key):
        check_params({**resolve_defaults("binary"), key: value})


def test_numpy_numbers_from_a_search_space_pass_as_python_numbers():
    from autogluon_maya.maya.defaults import check_params, resolve_defaults

    p = check_params({**resolve_defaults("binary"), "numeric_scale": np.float32(2.0), "hidden_size": np.int64(32),
                      "add_act": np.bool_(True)})
    assert (p["numeric_scale"], p["hidden_size"], p["add_act"]) == (2.0, 32, True)
    assert type(p["hidden_size"]) is int and type(p["add_act"]) is bool


@pytest.mark.parametrize("setting, named", [({"numeric_transform": "log"}, "numeric_transform"),
                                            ({"label_smoothing": 0.1}, "label_smoothing"),
                                            ({"numeric_scale": "big"}, "numeric_scale")])
def test_bad_setting_fails_the_fit_naming_it(setting, named):
    """A value the setting does not take, or a setting MAYA does not have (a removed one included), fails the
    fit at its start with an error naming it."""
    with pytest.raises(Exception, match=named):
        TabularPredictor(label="y", path="ag", verbosity=0).fit(
            _frame(), hyperparameters={"MAYA": {**TINY, **setting}}, raise_on_model_failure=True,
            fit_weighted_ensemble=False)
