"""MAYA's ``tabm_k``: k parameter-efficient members in one network, after TabM (Gorishniy et al., ICLR 2025).

Each member is held against the one-member network written out by hand: the row encodings scaled by the member's
vector r_i (queries and context alike), the shared IAIL blocks on their two-dimensional path (tested against the
paper's formulas in test_network.py), and the member's own head.  Then the loss (the mean of the members'), the
prediction (probabilities averaged, not logits), save / load, refit_full and the paper recipe's refusal."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from autogluon_maya import MayaModel
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import FittedMaya, make_loss

from plugin_tests.resources import fit_on_cores, torch_globals_kept  # noqa: F401  (a fixture)

K = 3
TINY = {"hidden_size": 16, "num_heads": 2, "max_epochs": 3, "patience": None, "ensemble_members": 1,
        "parallel_members": 1, "adaptive_threads": False, "validation_every": 1}


def _network(label_kind: str, k: int = K, out_dim: int = 3, seed: int = 0) -> MayaNetwork:
    torch.manual_seed(seed)
    net = MayaNetwork(4, [3], out_dim, label_kind, num_classes=3 if label_kind == "class" else 0,
                      problem_type="multiclass" if label_kind == "class" else "regression", tabm_k=k,
                      num_decoder_layers=2)
    return net.eval()


def _inputs(n: int, label_kind: str, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    c = torch.randint(0, 4, (n, 1), generator=g)
    y = torch.randint(0, 3, (n,), generator=g) if label_kind == "class" else torch.randn(n, generator=g)
    return x, c, y


def _member_by_hand(net: MayaNetwork, i: int, q_enc, ctx_enc, values, mask=None):
    """Member i as a one-member network: r_i * encodings into the shared blocks' 2-D path, then head i."""
    r = net.member_scale.weight[i]
    h, ctx = q_enc * r, ctx_enc * r
    for blk in net.decoder:
        h = blk(h, blk.k_proj(ctx), values, mask=mask)
    return h @ net.predictor.weight[i] + net.predictor.bias[i]


@pytest.mark.parametrize("label_kind", ["class", "real"])
def test_each_member_is_the_shared_decoder_on_its_own_scaled_encodings(label_kind, one_torch_thread_seeded):
    """At inference (cached context) and in training (the batch as its own context, each row's label masked):
    member i's output is the one-member network on r_i-scaled encodings with head i, and no other member's."""
    net = _network(label_kind, out_dim=3 if label_kind == "class" else 1)
    x, c, y = _inputs(40, label_kind)
    fitted = FittedMaya(net)
    with torch.no_grad():
        ctx_enc = fitted.set_context(x[:30], c[:30], y[:30])
        out = fitted.predict_raw(x[30:], c[30:])
        q_enc = net.encode(x[30:], c[30:])
        train_out = net.forward_train(x, c, y)
        enc = net.encode(x, c)
        values = net.embed_labels(y[:30])
        for i in range(K):
            torch.testing.assert_close(out[:, i], _member_by_hand(net, i, q_enc, ctx_enc, values))
            eye = torch.eye(40, dtype=torch.bool)
            torch.testing.assert_close(train_out[:, i], _member_by_hand(net, i, enc, enc, net.embed_labels(y), eye))
    assert out.shape == (10, K, net.predictor.out_features)
    # the members differ: random-sign adapters, heads of their own
    assert not torch.allclose(out[:, 0], out[:, 1], atol=1e-4)
    assert set(net.member_scale.weight.detach().unique().tolist()) <= {-1.0, 1.0}


def test_one_member_keeps_the_papers_single_head(one_torch_thread_seeded):
    """``tabm_k=1``: no adapter, a plain linear predictor, (B, out) outputs."""
    net = _network("class", k=1)
    x, c, y = _inputs(12, "class")
    assert net._modules.get("member_scale") is None and isinstance(net.predictor, torch.nn.Linear)
    assert net.forward_train(x, c, y).shape == (12, 3)


@pytest.mark.parametrize("kind", ["class", "regression", "quantile"])
def test_a_rows_loss_is_the_mean_of_its_members_losses(kind):
    g = torch.Generator().manual_seed(0)
    levels = [0.1, 0.5, 0.9]
    o = {"class": 4, "regression": 1, "quantile": 3}[kind]
    out = torch.randn(6, K, o, generator=g)
    y = torch.randint(0, 4, (6,), generator=g) if kind == "class" else torch.randn(6, generator=g)
    loss = make_loss("class" if kind == "class" else kind, levels)
    want = torch.stack([loss(out[:, i], y) for i in range(K)], dim=1).mean(1)
    torch.testing.assert_close(loss(out, y), want)
    assert loss(out, y).shape == (6,)


def _multiclass_table(n=360, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "k": rng.choice(["u", "v", "w"], n)})
    y = pd.Series(np.where(X["a"] > 0.5, "hi", np.where(X["b"] > 0, "mid", "lo")))
    return X, y


def _fit(tmp_path, name, hp, X, y, X_val=None, y_val=None, problem_type="multiclass"):
    model = MayaModel(path=str(tmp_path / name), name=name, problem_type=problem_type,
                      hyperparameters={**TINY, **hp})
    return fit_on_cores(model, 1, X=X, y=y, X_val=X_val, y_val=y_val)


def test_a_fit_averages_its_members_probabilities_and_survives_save_and_load(tmp_path, torch_globals_kept):
    X, y = _multiclass_table()
    codes = pd.Series(pd.Categorical(y).codes)  # AutoGluon hands models integer classes
    model = _fit(tmp_path, "k3", {"tabm_k": K}, X.iloc[:240], codes.iloc[:240], X.iloc[240:300], codes.iloc[240:300])
    assert len(model.model) == 1, model.get_info()["maya_fit"]
    net = model.model.members[0].net
    assert net.tabm_k == K
    enc = model.preprocess(X.iloc[300:])
    with torch.no_grad():
        raw = model.model.members[0].predict_raw(torch.from_numpy(enc.x_num), torch.from_numpy(enc.x_cat))
    assert raw.shape == (60, K, 3)
    mean_proba = F.softmax(raw, dim=-1).mean(1).numpy()
    proba = model.predict_proba(X.iloc[300:])
    np.testing.assert_allclose(proba, mean_proba, rtol=1e-5, atol=1e-6)
    # not the softmax of the mean logit: the check above can tell the two apart
    assert np.abs(F.softmax(raw.mean(1), dim=-1).numpy() - mean_proba).max() > 1e-4
    loaded = MayaModel.load(model.save())
    np.testing.assert_array_equal(loaded.predict_proba(X.iloc[300:]), proba)


def test_a_tabular_predictor_refit_keeps_the_members(tmp_path, torch_globals_kept):
    """End to end through TabularPredictor, refit_full included: both models carry k members."""
    from autogluon.tabular import TabularPredictor

    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.exponential(size=300)})
    data = X.assign(y=X["a"] * 2 + np.log1p(X["b"]) + rng.normal(scale=0.1, size=300))
    predictor = TabularPredictor("y", path=str(tmp_path / "p"), problem_type="regression", verbosity=0).fit(
        data.iloc[:200], tuning_data=data.iloc[200:260], hyperparameters={"MAYA": {**TINY, "tabm_k": K}},
        fit_weighted_ensemble=False, num_cpus=1, num_gpus=0)
    full = predictor.refit_full()["Maya"]
    for name in ("Maya", full):
        model = predictor._trainer.load_model(name)
        assert len(model.model) == 1, f"{name} kept no network: {model.get_info()['maya_fit'].get('fallback')}"
        assert model.model.members[0].net.tabm_k == K, name
        pred = predictor.predict(data.iloc[260:], model=name)
        assert pred.shape == (40,) and np.isfinite(pred.to_numpy()).all()


def test_the_paper_recipe_refuses_members_and_bad_values_fail(tmp_path, torch_globals_kept):
    X, y = _multiclass_table(120)
    codes = pd.Series(pd.Categorical(y).codes)
    for name, hp, words in (("refused", {"recipe": "paper", "tabm_k": 4}, "recipe='paper'"),
                            ("zero", {"tabm_k": 0}, "an integer >= 1"),
                            ("float", {"tabm_k": 2.5}, "an integer >= 1")):
        with pytest.raises(ValueError, match="^MAYA setting tabm_k must be") as err:  # checked at fit start
            _fit(tmp_path, name, hp, X, codes)
        assert words in str(err.value)
