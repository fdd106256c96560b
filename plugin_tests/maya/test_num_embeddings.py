"""MAYA's ``num_embeddings``: the numeric token of Gorishniy et al., "On Embeddings for Numerical Features in Tabular
Deep Learning" (periodic PLR, piecewise-linear on training quantile bins) in place of the paper's linear x_j W_j + b_j.

The tokens are checked against what each embedding is (a linear token is affine in x_j, PLR is not, a piecewise
embedding is affine within a bin and bends at its edges), the bins against ``rtdl_num_embeddings.compute_bins`` on the
training rows alone, and fitted models through save / load, refit_full and the paper recipe's refusal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from rtdl_num_embeddings import PeriodicEmbeddings, PiecewiseLinearEmbeddings, compute_bins

from autogluon_maya import MayaModel
from autogluon_maya.maya.network import FeatureTokenizer, training_bins

from plugin_tests.resources import fit_on_cores, torch_globals_kept  # noqa: F401  (a fixture)

D, N_NUM, CARDS = 8, 3, [4, 2]
# one thread's arithmetic and every epoch validated: the same fit every run (no timing-dependent choice)
TINY = {"hidden_size": 16, "num_heads": 2, "max_epochs": 2, "patience": None, "ensemble_members": 1,
        "parallel_members": 1, "adaptive_threads": False, "validation_every": 1}


def _tokenizer(option, x_train=None, seed=0) -> FeatureTokenizer:
    torch.manual_seed(seed)
    bins = training_bins(x_train) if option == "piecewise" else None
    return FeatureTokenizer(N_NUM, CARDS, D, num_embeddings=option, num_bins=bins)


def _numeric(tok: FeatureTokenizer, x: torch.Tensor) -> torch.Tensor:
    """The numeric features' tokens (rows 1..n_num after [CLS]) of ``x``, categorical codes 1."""
    with torch.no_grad():
        return tok(x, torch.ones(len(x), len(CARDS), dtype=torch.long))[:, 1:1 + N_NUM]


@pytest.fixture
def x_train():
    return torch.from_numpy(np.random.default_rng(0).normal(size=(500, N_NUM)).astype(np.float32))


@pytest.mark.parametrize("option", [None, "periodic", "piecewise"])
def test_each_option_changes_only_the_numeric_tokens(option, x_train, one_torch_thread_seeded):
    """One d-wide token per feature whatever the option, from the library's module; the categorical tokens and
    [CLS] are the linear tokenizer's (given its weights), the numeric ones are not."""
    linear = _tokenizer(None, x_train)
    tok = _tokenizer(option, x_train, seed=1)
    shared = {k: v for k, v in linear.state_dict().items() if k.startswith(("cat_", "cls"))}
    tok.load_state_dict(shared, strict=False)
    x = x_train[:7]
    codes = torch.tensor([[1, 2]] * 3 + [[0, 1]] * 4)
    with torch.no_grad():
        out, ref = tok(x, codes), linear(x, codes)
    assert out.shape == (7, 1 + N_NUM + len(CARDS), D)
    torch.testing.assert_close(out[:, 1 + N_NUM:], ref[:, 1 + N_NUM:])  # categorical tokens
    torch.testing.assert_close(out[:, 0], ref[:, 0])  # [CLS]
    kind = {None: type(None), "periodic": PeriodicEmbeddings, "piecewise": PiecewiseLinearEmbeddings}[option]
    assert isinstance(tok._modules.get("num_embedding"), kind)
    if option is None:
        torch.testing.assert_close(out[:, 1:1 + N_NUM], x.unsqueeze(-1) * tok.num_weight + tok.num_bias)
    else:
        assert tok.num_weight is None and tok.num_bias is None  # the embedding replaces the linear token
        assert out[:, 1:1 + N_NUM].shape == (7, N_NUM, D)
        assert not torch.allclose(out[:, 1:1 + N_NUM], ref[:, 1:1 + N_NUM], atol=1e-3)


def test_the_periodic_token_is_not_affine_in_x(x_train, one_torch_thread_seeded):
    """token(2x) - 2 token(x) + token(0) is 0 for an affine token (the paper's) and not for PLR, whose
    per-feature linear map (lite=False) reads cos and sin of learned frequencies and ends in a ReLU."""
    x = x_train[:64]
    for option, affine in ((None, True), ("periodic", False)):
        tok = _tokenizer(option, x_train)
        gap = _numeric(tok, 2 * x) - 2 * _numeric(tok, x) + _numeric(tok, torch.zeros_like(x))
        assert (gap.abs().max() < 1e-5) == affine, (option, gap.abs().max())
    emb = _tokenizer("periodic", x_train).num_embedding
    assert emb.linear.weight.shape == (N_NUM, 2 * emb.periodic.weight.shape[1], D)  # one map per feature


def test_the_piecewise_token_bends_at_the_training_bin_edges(x_train, one_torch_thread_seeded):
    """Version "B" starts as a linear token (its piecewise part initialised at zero); once that part has weights
    (as training gives it) the token is affine within a bin and not across a bin edge."""
    tok = _tokenizer("piecewise", x_train)
    emb = tok.num_embedding
    assert isinstance(emb, PiecewiseLinearEmbeddings) and emb.linear0 is not None  # version "B"
    x = x_train[:32]
    start_gap = _numeric(tok, 2 * x) - 2 * _numeric(tok, x) + _numeric(tok, torch.zeros_like(x))
    assert start_gap.abs().max() < 1e-5  # at initialisation: the linear token
    torch.nn.init.normal_(emb.linear.weight)
    edges = tok.bins()[0]
    lo, hi = float(edges[10]), float(edges[11])

    def token(v: float) -> torch.Tensor:
        return _numeric(tok, torch.tensor([[v, 0.0, 0.0]]))[0, 0]

    a, b = lo + 0.1 * (hi - lo), lo + 0.9 * (hi - lo)
    torch.testing.assert_close(token((a + b) / 2), (token(a) + token(b)) / 2, atol=1e-5, rtol=0)  # inside one bin
    c, e = float(edges[9]) + 0.5 * (lo - float(edges[9])), float(edges[12]) + 0.5 * (float(edges[13]) - float(edges[12]))
    mid = (c + e) / 2
    assert not torch.allclose(token(mid), (token(c) + token(e)) / 2, atol=1e-3)  # across edges


def test_training_bins_are_the_librarys_quantile_bins_and_cover_degenerate_columns(one_torch_thread_seeded):
    rng = np.random.default_rng(1)
    x = torch.from_numpy(np.column_stack([rng.normal(size=300), rng.integers(0, 2, 300), np.full(300, 3.0)])
                         .astype(np.float32))
    bins = training_bins(x)
    torch.testing.assert_close(bins[0], compute_bins(x[:, :1])[0])  # 48 quantile bins
    assert len(bins[0]) == 49
    torch.testing.assert_close(bins[1], torch.tensor([0.0, 1.0]))  # a 0/1 column: one bin
    torch.testing.assert_close(bins[2], torch.tensor([3.0, 4.0]))  # a constant column: one bin of its own
    few = training_bins(x[:2])  # too few rows for compute_bins: one bin over each column's range
    torch.testing.assert_close(few[0], torch.stack([x[:2, 0].min(), x[:2, 0].max()]))


def _table(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.exponential(size=n), "c": rng.normal(size=n),
                      "k": rng.choice(["u", "v", "w"], n)})
    y = pd.Series(((X["a"] + np.log1p(X["b"]) > 0.7) ^ (X["k"] == "u")).astype(int))
    return X, y


def _fit(tmp_path, name, hp, X, y, X_val=None, y_val=None, problem_type="binary"):
    model = MayaModel(path=str(tmp_path / name), name=name, problem_type=problem_type,
                      hyperparameters={**TINY, **hp})
    return fit_on_cores(model, 1, X=X, y=y, X_val=X_val, y_val=y_val)


def _tokenizer_of(model) -> FeatureTokenizer:
    return model.model.members[0].net.tokenizer


def test_bins_come_from_the_training_rows_only(tmp_path, monkeypatch, torch_globals_kept):
    """Two fits on the same training rows, one validated on rows far outside their range: the same bins, those
    ``compute_bins`` gives on the encoded training rows alone.  The bins are read where the fit computes them (a
    fit that validates worse than the prior keeps no network to read them from) and, where a network was kept,
    from its tokenizer."""
    from autogluon_maya.maya import network

    computed = []

    def recording(x_num, *args, **kwargs):
        bins = real(x_num, *args, **kwargs)
        computed.append(bins)
        return bins

    real = network.training_bins
    monkeypatch.setattr(network, "training_bins", recording)
    X, y = _table()
    X_val, y_val = X.iloc[300:].copy(), y.iloc[300:]
    far = X_val.copy()
    far[["a", "b", "c"]] = far[["a", "b", "c"]] * 50 + 1000
    hp = {"num_embeddings": "piecewise", "numeric_transform": "standard"}  # standard: far rows stay far
    fits = [_fit(tmp_path, name, hp, X.iloc[:300], y.iloc[:300], v, y_val) for name, v in (("near", X_val),
                                                                                          ("far", far))]
    x_train = torch.from_numpy(fits[0]._encoder.transform(X.iloc[:300]).x_num)
    assert len(computed) == 2 and x_train.shape[1] == 3
    want = compute_bins(x_train)
    assert float(max(w.max() for w in want)) < 10  # standardized training values; the far rows lie near 1,000
    for bins in computed + [_tokenizer_of(f).bins() for f in fits if len(f.model)]:
        assert len(bins) == 3
        for got, w in zip(bins, want):
            torch.testing.assert_close(got, w)


def test_the_paper_recipe_refuses_numeric_embeddings_and_unknown_values_fail(tmp_path, torch_globals_kept):
    """The paper's numeric token is linear (Eq. 1): ``recipe="paper"`` resolves to it, and a paper fit asked for
    an embedding fails at fit start naming the setting, as does a value the setting does not take."""
    X, y = _table(120)
    paper = _fit(tmp_path, "paper", {"recipe": "paper"}, X, y)
    tok = _tokenizer_of(paper)
    assert tok.num_weight is not None and tok._modules.get("num_embedding") is None
    for name, hp, words in (("refused", {"recipe": "paper", "num_embeddings": "periodic"}, "recipe='paper'"),
                            ("unknown", {"num_embeddings": "fourier"}, "None, 'periodic' or 'piecewise'")):
        with pytest.raises(ValueError, match="^MAYA setting num_embeddings must be") as err:  # checked at fit start
            _fit(tmp_path, name, hp, X, y)
        assert words in str(err.value)


@pytest.mark.parametrize("option, problem_type", [("periodic", "binary"), ("piecewise", "binary"),
                                                  ("piecewise", "regression")])
def test_save_load_predicts_the_same(option, problem_type, tmp_path, torch_globals_kept):
    """Saved and loaded, a model predicts exactly as before and keeps its bins.  Regression trains with the
    default moving average of the weights, which must leave the piecewise embedding's bool masks alone (a 0/1
    column has one bin where the others have 48: the library then keeps masks of the bins in use)."""
    X, y = _table()
    if problem_type == "regression":
        X["d"] = (X["c"] > 0.5).astype(float)
        y = X["a"] + np.log1p(X["b"]) + X["d"]
    model = _fit(tmp_path, option, {"num_embeddings": option}, X.iloc[:300], y.iloc[:300], problem_type=problem_type)
    assert (model._fit_summary["weight_average_decay"] is not None) == (problem_type == "regression")
    before = model.predict_proba(X.iloc[350:])
    bins = _tokenizer_of(model).bins()
    path = model.save()
    loaded = MayaModel.load(path)
    torch.testing.assert_close(torch.from_numpy(loaded.predict_proba(X.iloc[350:])), torch.from_numpy(before),
                               rtol=0, atol=0)
    assert isinstance(_tokenizer_of(loaded)._modules.get("num_embedding"),
                      PeriodicEmbeddings if option == "periodic" else PiecewiseLinearEmbeddings)
    for a, b in zip(_tokenizer_of(loaded).bins(), bins):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert (len(bins) == X.shape[1] - 1) == (option == "piecewise")  # every numeric column, not the categorical "k"
    if problem_type == "regression":
        assert any(b.dtype == torch.bool for b in _tokenizer_of(model).buffers())


@pytest.mark.parametrize("option", ["periodic", "piecewise"])
def test_a_tabular_predictor_fits_and_refits_with_each_option(option, tmp_path, torch_globals_kept):
    """TabularPredictor end to end, refit_full included: the fitted and the refit model carry the option's
    embedding; a piecewise refit takes its bins from its own training rows (train + validation)."""
    from autogluon.tabular import TabularPredictor

    X, y = _table(360, seed=2)
    data = X.assign(y=y)
    predictor = TabularPredictor("y", path=str(tmp_path / "p"), verbosity=0).fit(
        data.iloc[:240], tuning_data=data.iloc[240:300], hyperparameters={"MAYA": {**TINY, "num_embeddings": option}},
        fit_weighted_ensemble=False, num_cpus=1, num_gpus=0)
    full = predictor.refit_full()["Maya"]
    kind = PeriodicEmbeddings if option == "periodic" else PiecewiseLinearEmbeddings
    for name in ("Maya", full):
        model = predictor._trainer.load_model(name)
        assert len(model.model) == 1, f"{name} kept no network: {model.get_info()['maya_fit'].get('fallback')}"
        assert isinstance(_tokenizer_of(model)._modules.get("num_embedding"), kind), name
        proba = predictor.predict_proba(data.iloc[300:], model=name)
        assert proba.shape == (60, 2) and np.isfinite(proba.to_numpy()).all()
    if option == "piecewise":
        refit = predictor._trainer.load_model(full)
        x_all = torch.from_numpy(refit._encoder.transform(X.iloc[:300]).x_num)
        for got, want in zip(_tokenizer_of(refit).bins(), compute_bins(x_all)):
            torch.testing.assert_close(got, want)


def test_the_memory_estimate_counts_the_embedding():
    """AutoGluon weighs the estimate against the free memory before a fit.  What each embedding adds to it on 520
    numeric features (1,100 rows, width 64, one member) must cover what it added to a measured fit's peak (PLR
    +299 MiB, piecewise +49 MiB over the linear token; docs/maya.md, "Memory") and stay within twice that."""
    X = pd.DataFrame(np.zeros((1100, 520)), columns=[f"c{i}" for i in range(520)])

    def added(option) -> float:
        hp = {"parallel_members": 1}
        base = MayaModel._estimate_memory_usage_static(X=X, hyperparameters={**hp, "num_embeddings": None})
        return (MayaModel._estimate_memory_usage_static(X=X, hyperparameters={**hp, "num_embeddings": option})
                - base) / 2**20

    assert 299 <= added("periodic") <= 2 * 299
    assert 49 <= added("piecewise") <= 2 * 67  # measured +49 (1,100 rows) and +67 MiB (400 rows)
    categorical = X.astype("category")  # categorical columns take no numeric embedding
    assert MayaModel._estimate_memory_usage_static(X=categorical, hyperparameters={"num_embeddings": "periodic"}) \
        == MayaModel._estimate_memory_usage_static(X=categorical, hyperparameters={"num_embeddings": None})


def test_a_network_is_handed_every_setting_and_piecewise_needs_the_bins(x_train):
    """``MayaNetwork`` holds no defaults: built with a setting missing it is an error naming it; the token is
    the one it is handed, and "piecewise" without the training rows' bins is an error."""
    from autogluon_maya.maya.network import NETWORK_KEYS, MayaNetwork

    from .nets import network_settings

    settings = network_settings("binary", num_embeddings="piecewise")
    built = MayaNetwork(N_NUM, [], 2, "class", 2, num_bins=training_bins(x_train), **settings)
    assert isinstance(built.tokenizer.num_embedding, PiecewiseLinearEmbeddings)
    assert MayaNetwork(N_NUM, [], 2, "class", 2, **{**settings, "num_embeddings": None}).tokenizer.num_weight \
        is not None
    with pytest.raises(ValueError, match="needs the training rows' bin edges"):
        MayaNetwork(N_NUM, [], 2, "class", 2, **settings)
    for key in NETWORK_KEYS:
        with pytest.raises(TypeError, match=f"missing: \\['{key}'\\]"):
            MayaNetwork(N_NUM, [], 2, "class", 2, **{k: v for k, v in settings.items() if k != key})


def test_memory_estimate_counts_an_inf_column_as_one_with_a_missing_indicator():
    """The embedding's term of the estimate uses the encoder's numeric width: +-inf is missing there as NaN is."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(2000, 10)), columns=[f"x{i}" for i in range(10)])
    with_inf, with_nan = X.copy(), X.copy()
    with_inf.iloc[0] = np.inf
    with_nan.iloc[0] = np.nan

    def estimate(frame, option="piecewise"):
        return MayaModel._estimate_memory_usage_static(X=frame, hyperparameters={"num_embeddings": option},
                                                       problem_type="binary", num_classes=2)

    assert estimate(with_inf) == estimate(with_nan) > estimate(X)
    assert estimate(with_inf, None) == estimate(X, None)  # the linear token has no such term
