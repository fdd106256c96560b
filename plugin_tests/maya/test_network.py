"""MAYA's torch components checked against the paper's formulas.

Every reference computation here is written independently with plain torch ops (explicit loops over
branches and heads, hand-written LayerNorm / ReGLU / softmax attention), so a change in the network's
arithmetic, not only a crash, makes these tests fail.  Networks are tiny and run on one thread.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.network import FeatureTokenizer, IAILBlock, MayaNetwork, MBABlock
from autogluon_maya.maya.trainer import FittedMaya, TrainConfig, TrainData, make_loss, train_maya

from .nets import maya_network


pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")


# ---- plain-torch references ---------------------------------------------------------------------
def ref_layer_norm(x: torch.Tensor, ln: torch.nn.LayerNorm) -> torch.Tensor:
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


def ref_reglu(x: torch.Tensor, ffn) -> torch.Tensor:
    hidden = ffn.proj_out.in_features
    w_in, b_in = ffn.proj_in.weight, ffn.proj_in.bias
    a = x @ w_in[:hidden].T + (b_in[:hidden] if b_in is not None else 0)
    b = x @ w_in[hidden:].T + (b_in[hidden:] if b_in is not None else 0)
    out = (torch.relu(a) * b) @ ffn.proj_out.weight.T
    return out + ffn.proj_out.bias if ffn.proj_out.bias is not None else out


def ref_mba(block: MBABlock, z: torch.Tensor, w) -> tuple[torch.Tensor, torch.Tensor]:
    """LN( sum_j w_j * LN_j(FFN(Attn_j(z) + z)) + z ), looping over branches and heads.

    ``block.qkv``'s output is viewed as (3, n_branch * n_heads, d_head): rows
    ``s * n * d + (j * h + head) * d_head + [0, d_head)`` of ``qkv.weight`` are the query (s=0),
    key (s=1) or value (s=2) projection of head ``head`` of branch ``j``.
    """
    B, T, d = z.shape
    n, h = block.n, block.h
    dh = d // h
    W, bias = block.qkv.weight, block.qkv.bias

    def proj(s, j, head):
        start = s * n * d + (j * h + head) * dh
        rows = slice(start, start + dh)
        out = z @ W[rows].T
        return out + bias[rows] if bias is not None else out

    branch_states = []
    for j in range(n):
        heads = []
        for head in range(h):
            q, k, v = proj(0, j, head), proj(1, j, head), proj(2, j, head)
            scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
            heads.append(torch.softmax(scores, dim=-1) @ v)
        attn = torch.cat(heads, dim=-1) @ block.out_weight[j]
        if block.out_bias is not None:
            attn = attn + block.out_bias[j]
        branch_states.append(ref_layer_norm(ref_reglu(attn + z, block.ffn), block.branch_norms[j]))
    mixed = sum(w[j] * branch_states[j] for j in range(n))
    return ref_layer_norm(mixed + z, block.out_norm), torch.stack([s[:, 0] for s in branch_states])


def randomize_norms(module: torch.nn.Module) -> None:
    """LayerNorms start at weight=1, bias=0; random affine parameters make the checks sharper."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)


def tiny_net(label_kind="class", num_classes=3, out_dim=None, n_num=3, cats=(4, 2), **kw) -> MayaNetwork:
    args = dict(hidden_size=8, num_heads=2, num_branch=2, num_layers=2, intermediate_factor=1.0,
                dropout=0.1, decoder_dropout=0.1, num_decoder_layers=1)
    args.update(kw)
    if out_dim is None:
        out_dim = num_classes if label_kind == "class" else 1
    return maya_network(n_num=n_num, cat_cardinalities=list(cats), out_dim=out_dim, label_kind=label_kind,
                       num_classes=num_classes if label_kind == "class" else 0, **args)


def tiny_inputs(B, n_num=3, cats=(4, 2), seed=0):
    g = torch.Generator().manual_seed(seed)
    x_num = torch.randn(B, n_num, generator=g)
    x_cat = torch.stack([torch.randint(0, c + 1, (B,), generator=g) for c in cats], dim=1) if cats \
        else torch.zeros(B, 0, dtype=torch.long)
    return x_num, x_cat


# ---- FeatureTokenizer -----------------------------------------------------------------------------
def test_tokenizer_shape_cls_and_numeric_formula():
    d, cards = 8, [4, 2]
    tok = FeatureTokenizer(n_num=3, cat_cardinalities=cards, d=d)
    x_num, x_cat = tiny_inputs(5, 3, cards)
    out = tok(x_num, x_cat)
    assert out.shape == (5, 1 + 3 + 2, d)
    # [CLS] first, the same learned vector for every row
    for i in range(5):
        torch.testing.assert_close(out[i, 0], tok.cls[0, 0], rtol=0, atol=0)
    # numeric token j = x_j * W_j + b_j
    for j in range(3):
        expected = x_num[:, j:j + 1] * tok.num_weight[j] + tok.num_bias[j]
        torch.testing.assert_close(out[:, 1 + j], expected, rtol=0, atol=1e-6)
    # categorical token = embedding of the code + b_j
    for i, emb in enumerate(tok.cat_embeddings):
        expected = emb.weight[x_cat[:, i]] + tok.cat_bias[i]
        torch.testing.assert_close(out[:, 1 + 3 + i], expected, rtol=0, atol=1e-6)


def test_tokenizer_without_bias():
    tok = FeatureTokenizer(n_num=2, cat_cardinalities=[3], d=8, if_bias=False)
    assert tok.num_bias is None and tok.cat_bias is None
    x_num = torch.tensor([[0.0, 2.0], [1.5, -1.0]])
    x_cat = torch.tensor([[1], [3]])
    out = tok(x_num, x_cat)
    torch.testing.assert_close(out[:, 1:3], x_num.unsqueeze(-1) * tok.num_weight, rtol=0, atol=1e-6)
    assert torch.all(out[0, 1] == 0)  # x=0 with no bias is the zero token
    torch.testing.assert_close(out[:, 3], tok.cat_embeddings[0].weight[x_cat[:, 0]], rtol=0, atol=0)


def test_tokenizer_numeric_scale_multiplies_numeric_inputs_only():
    """num_scale s: numeric token j = (s x_j) W_j + b_j; categorical tokens and [CLS] untouched."""
    cards = [3]
    plain = FeatureTokenizer(n_num=2, cat_cardinalities=cards, d=8)
    scaled = FeatureTokenizer(n_num=2, cat_cardinalities=cards, d=8, num_scale=5.0)
    scaled.load_state_dict(plain.state_dict())  # the scale is a constant, not a weight
    x_num, x_cat = tiny_inputs(4, 2, cards)
    out = scaled(x_num, x_cat)
    torch.testing.assert_close(out, plain(5.0 * x_num, x_cat), rtol=0, atol=1e-6)
    torch.testing.assert_close(out[:, 3:], plain(x_num, x_cat)[:, 3:], rtol=0, atol=0)
    # the gradient of a numeric weight grows with the scale: that is the point of the setting
    for tok in (plain, scaled):
        tok.zero_grad()
        tok(x_num, x_cat)[:, 1:3].sum().backward()
    torch.testing.assert_close(scaled.num_weight.grad, 5.0 * plain.num_weight.grad)


def test_tokenizer_pickled_before_numeric_scale_multiplies_by_one():
    tok = FeatureTokenizer(n_num=2, cat_cardinalities=[], d=8, num_scale=3.0)
    del tok.__dict__["num_scale"]  # what an older pickle restores: no such attribute
    x_num, x_cat = tiny_inputs(4, 2, [])
    torch.testing.assert_close(tok(x_num, x_cat)[:, 1:],
                               x_num.unsqueeze(-1) * tok.num_weight + tok.num_bias, rtol=0, atol=1e-6)


def test_tokenizer_reserved_code_zero_and_max_code():
    cards = [4, 2]
    tok = FeatureTokenizer(n_num=0, cat_cardinalities=cards, d=8)
    assert [e.num_embeddings for e in tok.cat_embeddings] == [5, 3]  # cardinality + 1 (code 0)
    zero = tok(torch.zeros(2, 0), torch.zeros(2, 2, dtype=torch.long))
    top = tok(torch.zeros(2, 0), torch.tensor([[4, 2], [4, 2]]))
    assert zero.shape == (2, 3, 8) and torch.isfinite(zero).all() and torch.isfinite(top).all()
    torch.testing.assert_close(zero[0, 1], tok.cat_embeddings[0].weight[0] + tok.cat_bias[0], rtol=0, atol=1e-6)
    assert not torch.allclose(zero[:, 1:], top[:, 1:])  # the missing code is its own embedding
    with pytest.raises(IndexError):  # nothing beyond 0..K
        tok(torch.zeros(1, 0), torch.tensor([[5, 0]]))


# ---- MBA block ------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_heads,num_branch,bias", [(2, 2, True), (4, 3, True), (2, 2, False)])
def test_mba_block_matches_formula(num_heads, num_branch, bias):
    d = 8
    block = MBABlock(d, num_heads, num_branch, intermediate_factor=1.5, dropout=0.3, bias=bias)
    randomize_norms(block)
    w = torch.tensor([0.7, 0.3]) if num_branch == 2 else torch.tensor([0.5, 0.2, 0.3])
    block.branch_weights.copy_(w)
    block.eval()
    z = torch.randn(3, 5, d)
    out, cls_states = block(z)
    assert out.shape == (3, 5, d) and cls_states.shape == (num_branch, 3, d)
    ref_out, ref_cls = ref_mba(block, z, w)
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-5)
    torch.testing.assert_close(cls_states, ref_cls, rtol=0, atol=1e-5)
    # the weights matter: equal weights give a different output
    ref_equal, _ = ref_mba(block, z, torch.full((num_branch,), 1 / num_branch))
    assert (out - ref_equal).abs().max() > 1e-3


def test_mba_block_without_branch_weights_is_plain_mean():
    block = MBABlock(8, 2, 2, intermediate_factor=1.0, use_branch_weights=False)
    randomize_norms(block)
    block.branch_weights.copy_(torch.tensor([0.9, 0.1]))  # must be ignored
    block.eval()
    z = torch.randn(2, 4, 8)
    out, _ = block(z)
    ref_mean, _ = ref_mba(block, z, [0.5, 0.5])
    torch.testing.assert_close(out, ref_mean, rtol=0, atol=1e-5)
    ref_weighted, _ = ref_mba(block, z, [0.9, 0.1])
    assert (out - ref_weighted).abs().max() > 1e-3


def test_mba_block_rejects_indivisible_hidden_size():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        MBABlock(10, 4, 2, 1.0)


# ---- branch weights -------------------------------------------------------------------------------
def _branch_states_with_one_bad_branch(net: MayaNetwork, B: int, bad: int):
    """Predictor logits = (s_0, -s_0); every row is class 0.  Branch ``bad`` gets s_0 = -4 (confidently
    wrong, large CE), the other branch s_0 = +4 (confidently right, small CE)."""
    d = net.predictor.in_features
    with torch.no_grad():
        net.predictor.weight.zero_()
        net.predictor.bias.zero_()
        net.predictor.weight[0, 0] = 1.0
        net.predictor.weight[1, 0] = -1.0
    states = torch.zeros(2, B, d)
    states[:, :, 0] = 4.0
    states[bad, :, 0] = -4.0
    y = torch.zeros(B, dtype=torch.long)
    return states, (lambda p: F.cross_entropy(p, y))


def test_update_branch_weights_favours_the_worse_branch():
    net = tiny_net(num_classes=2, num_layers=2)
    s_block0, loss_fn = _branch_states_with_one_bad_branch(net, 6, bad=1)
    s_block1 = s_block0.flip(0)  # in the second block branch 0 is the bad one
    l_good, l_bad = F.cross_entropy(torch.tensor([[4.0, -4.0]]), torch.tensor([0])), \
        F.cross_entropy(torch.tensor([[-4.0, 4.0]]), torch.tensor([0]))
    soft_bad = torch.softmax(torch.stack([l_good, l_bad]), 0)[1]

    net.update_branch_weights([s_block0, s_block1], loss_fn, momentum=0.5)
    w0, w1 = net.blocks[0].branch_weights, net.blocks[1].branch_weights
    assert w0[1] > 0.7 and w0[1] > w0[0]
    assert w1[0] > 0.7 and w1[0] > w1[1]
    for w in (w0, w1):
        assert torch.isclose(w.sum(), torch.tensor(1.0), atol=1e-6) and (w > 0).all()
    # EMA: 0.5 * old(0.5) + 0.5 * softmax(losses)
    torch.testing.assert_close(w0[1], 0.5 * 0.5 + 0.5 * soft_bad, rtol=0, atol=1e-6)

    # momentum 1.0 keeps the weights, momentum 0.0 replaces them by the softmax
    before = [b.branch_weights.clone() for b in net.blocks]
    net.update_branch_weights([s_block0, s_block1], loss_fn, momentum=1.0)
    for b, w in zip(net.blocks, before):
        assert torch.equal(b.branch_weights, w)
    net.update_branch_weights([s_block0, s_block1], loss_fn, momentum=0.0)
    torch.testing.assert_close(net.blocks[0].branch_weights[1], soft_bad, rtol=0, atol=1e-6)
    assert torch.isclose(net.blocks[0].branch_weights.sum(), torch.tensor(1.0), atol=1e-6)


def test_branch_weights_frozen_at_inference():
    net = tiny_net(num_classes=2)
    for b in net.blocks:
        b.branch_weights.copy_(torch.tensor([0.8, 0.2]))
    before = [b.branch_weights.clone() for b in net.blocks]
    x_num, x_cat = tiny_inputs(20)
    y = torch.randint(0, 2, (20,))
    fitted = FittedMaya(net)
    fitted.set_context(x_num, x_cat, y)
    fitted.predict_raw(x_num[:7], x_cat[:7], chunk_size=3)
    net.eval()
    net.forward_train(x_num, x_cat, y)
    net.encode(x_num, x_cat, return_branches=True)
    for b, w in zip(net.blocks, before):
        assert torch.equal(b.branch_weights, w)


def _train_params(use_branch_weights: bool) -> dict:
    return {**resolve_defaults("binary"), "learning_rate": 1e-2, "weight_decay": 0.0, "patience": 5,
            "batch_size": 16, "use_branch_weights": use_branch_weights, "num_branch": 2, "branch_momentum": 0.8}


@pytest.mark.parametrize("use_branch_weights", [True, False])
def test_train_maya_updates_branch_weights_only_when_enabled(use_branch_weights):
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    x_num = torch.randn(48, 3, generator=g)
    x_cat = torch.zeros(48, 0, dtype=torch.long)
    y = (x_num[:, 0] > 0).long()
    net = maya_network(n_num=3, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                      hidden_size=8, num_heads=2, num_branch=2, num_layers=2, intermediate_factor=1.0,
                      dropout=0.0, use_branch_weights=use_branch_weights)  # no dropout: the update is deterministic
    fitted = FittedMaya(net)
    summary = train_maya(fitted, TrainData(x_num, x_cat, y, y, None),
                         TrainConfig(params=_train_params(use_branch_weights), loss_fn=make_loss("class"),
                                     device=torch.device("cpu"), seed=0, max_epochs=2),
                         TimeBudget(None))
    assert summary["steps"] == 2 * 3
    for b in net.blocks:
        w = b.branch_weights
        assert torch.isclose(w.sum(), torch.tensor(1.0), atol=1e-6)
        if use_branch_weights:
            assert (w - 0.5).abs().max() > 1e-4, w
        else:
            assert torch.equal(w, torch.tensor([0.5, 0.5]))


# ---- label leakage --------------------------------------------------------------------------------
@pytest.mark.parametrize("label_kind", ["class", "real"])
def test_forward_train_does_not_leak_own_label(label_kind):
    net = tiny_net(label_kind=label_kind, num_classes=3, num_decoder_layers=2)
    net.eval()
    B = 7
    x_num, x_cat = tiny_inputs(B)
    if label_kind == "class":
        y = torch.tensor([0, 1, 2, 0, 1, 2, 0])
        y2 = y.clone()
        y2[3] = 2
    else:
        y = torch.randn(B)
        y2 = y.clone()
        y2[3] += 3.0
    with torch.no_grad():
        out1 = net.forward_train(x_num, x_cat, y)
        out2 = net.forward_train(x_num, x_cat, y2)
    torch.testing.assert_close(out1[3], out2[3], rtol=0, atol=1e-6)
    others = [i for i in range(B) if i != 3]
    assert (out1[others] - out2[others]).abs().amax(1).min() > 1e-5  # every other row reads row 3's label


@pytest.mark.parametrize("shared", [False, True])
def test_iail_similarity_is_negative_squared_distance(shared):
    blk = IAILBlock(8, 1.0, "relu", 0.0, True, qk_shared_weights=shared)
    q, ctx = torch.randn(5, 8), torch.randn(9, 8)
    sim = blk.similarity(q, blk.k_proj(ctx))
    expected = -torch.cdist(blk.q_proj(q), blk.k_proj(ctx)) ** 2
    assert sim.shape == (5, 9)
    torch.testing.assert_close(sim, expected, rtol=1e-5, atol=1e-4)
    if shared:
        assert blk.k_proj is blk.q_proj
        assert sum(p.numel() for p in blk.parameters()) == \
            sum(p.numel() for p in IAILBlock(8, 1.0, "relu", 0.0, True, False).parameters()) - (64 + 8)
        # shared projections: a row is its own nearest key with similarity 0
        torch.testing.assert_close(blk.similarity(ctx, blk.k_proj(ctx)).diagonal(), torch.zeros(9),
                                   rtol=0, atol=1e-4)
    else:
        assert blk.k_proj is not blk.q_proj
        assert not torch.allclose(blk.k_proj.weight, blk.q_proj.weight)


def test_iail_forward_matches_formula():
    blk = IAILBlock(8, 1.5, "prelu", 0.2, True, qk_shared_weights=False)
    randomize_norms(blk)
    blk.eval()
    q, ctx, values = torch.randn(4, 8), torch.randn(10, 8), torch.randn(10, 8)
    keys = blk.k_proj(ctx)
    sim = -torch.cdist(blk.q_proj(q), keys) ** 2
    h = ref_layer_norm(q + torch.softmax(sim, 1) @ values, blk.norm1)
    lin1, act, lin2 = blk.ffn[0], blk.ffn[1], blk.ffn[3]
    ffn = F.prelu(h @ lin1.weight.T + lin1.bias, act.weight) @ lin2.weight.T + lin2.bias
    expected = ref_layer_norm(h + ffn, blk.norm2)
    torch.testing.assert_close(blk(q, keys, values), expected, rtol=0, atol=1e-5)


@pytest.mark.parametrize("label_kind", ["class", "real"])
def test_one_row_training_batch_has_no_nan(label_kind):
    net = tiny_net(label_kind=label_kind, num_classes=3)
    net.train()
    x_num, x_cat = tiny_inputs(1)
    y = torch.tensor([1]) if label_kind == "class" else torch.tensor([0.3])
    out, branches = net.forward_train(x_num, x_cat, y, return_branches=True)
    assert out.shape[0] == 1 and torch.isfinite(out).all()
    loss = make_loss("class" if label_kind == "class" else "real")(out, y).mean()
    loss.backward()
    for name, p in net.named_parameters():
        assert p.grad is None or torch.isfinite(p.grad).all(), name


# ---- cached inference -----------------------------------------------------------------------------
def _fitted_with_context(n_ctx=300, label_kind="class", **kw):
    net = tiny_net(label_kind=label_kind, num_classes=3, num_decoder_layers=2, **kw)
    x_num, x_cat = tiny_inputs(n_ctx, seed=1)
    y = torch.randint(0, 3, (n_ctx,), generator=torch.Generator().manual_seed(2)) if label_kind == "class" \
        else torch.randn(n_ctx, generator=torch.Generator().manual_seed(2))
    fitted = FittedMaya(net)
    fitted.set_context(x_num, x_cat, y, chunk=64)
    return fitted, (x_num, x_cat, y)


def test_set_context_chunking_and_predict_chunking_agree():
    fitted, (x_num, x_cat, y) = _fitted_with_context()
    assert fitted.context_size == 300
    keys_chunked = fitted.ctx_keys_0.clone()
    fitted.set_context(x_num, x_cat, y, chunk=10_000)
    torch.testing.assert_close(fitted.ctx_keys_0, keys_chunked, rtol=0, atol=1e-5)

    qx_num, qx_cat = tiny_inputs(40, seed=3)
    small = fitted.predict_raw(qx_num, qx_cat, chunk_size=7)
    big = fitted.predict_raw(qx_num, qx_cat, chunk_size=10_000)
    assert small.shape == (40, 3)
    torch.testing.assert_close(small, big, rtol=0, atol=1e-5)


def test_query_prediction_is_independent_of_its_batch():
    fitted, _ = _fitted_with_context(label_kind="real")
    qx_num, qx_cat = tiny_inputs(12, seed=4)
    batch = fitted.predict_raw(qx_num, qx_cat)
    for i in (0, 5, 11):
        alone = fitted.predict_raw(qx_num[i:i + 1], qx_cat[i:i + 1])
        torch.testing.assert_close(alone[0], batch[i], rtol=0, atol=1e-5)


def test_decoder_reads_context_labels():
    fitted, (x_num, x_cat, y) = _fitted_with_context(n_ctx=50)
    qx_num, qx_cat = tiny_inputs(10, seed=6)
    before = fitted.predict_raw(qx_num, qx_cat)
    fitted.set_context(x_num, x_cat, (y + 1) % 3)
    after = fitted.predict_raw(qx_num, qx_cat)
    assert (before - after).abs().amax(1).min() > 1e-4
    fitted.set_context(x_num, x_cat, y)  # and back
    torch.testing.assert_close(fitted.predict_raw(qx_num, qx_cat), before, rtol=0, atol=1e-6)


def test_predict_raw_runs_in_eval_mode_despite_dropout():
    fitted, _ = _fitted_with_context(n_ctx=40, dropout=0.5, decoder_dropout=0.5)
    qx_num, qx_cat = tiny_inputs(5, seed=7)
    a = fitted.predict_raw(qx_num, qx_cat)
    fitted.net.train()  # e.g. left in train mode by a training loop: predict_raw must switch dropout off
    b = fitted.predict_raw(qx_num, qx_cat)
    assert torch.equal(a, b) and not fitted.net.training
    assert np.isfinite(a.numpy()).all()


def test_decoder_layers_are_chained():
    net = tiny_net(num_decoder_layers=2, decoder_dropout=0.0)
    net.eval()
    q, ctx = torch.randn(4, 8), torch.randn(6, 8)
    values = net.embed_labels(torch.tensor([0, 1, 2, 0, 1, 2]))
    keys = net.project_keys(ctx)
    assert len(keys) == 2
    torch.testing.assert_close(keys[1], net.decoder[1].k_proj(ctx))  # every block keys the encoder output
    h1 = net.decoder[0](q, keys[0], values)
    expected = net.predictor(net.decoder[1](h1, keys[1], values))
    torch.testing.assert_close(net.decode(q, keys, values), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("bias", [True, False])
def test_cls_only_block_equals_the_cls_row_of_the_full_block(bias):
    """The encoder runs its last block on the [CLS] row alone (its query projection on that row only);
    that must be the same arithmetic, with or without biases."""
    torch.manual_seed(0)
    block = MBABlock(16, num_heads=4, num_branch=3, intermediate_factor=1.3, dropout=0.0, bias=bias).eval()
    block.branch_weights.copy_(torch.tensor([0.2, 0.5, 0.3]))
    z = torch.randn(5, 7, 16)
    full, full_branches = block(z)
    cls, cls_branches = block(z, cls_only=True)
    assert cls.shape == (5, 1, 16)
    torch.testing.assert_close(cls[:, 0], full[:, 0], rtol=0, atol=1e-6)
    torch.testing.assert_close(cls_branches, full_branches, rtol=0, atol=1e-6)
    # and the [CLS] row does depend on the other tokens (it attends to them)
    z2 = z.clone()
    z2[:, 3] += 1.0
    assert (block(z2, cls_only=True)[0] - cls).abs().max() > 1e-3
    # training runs backward through it (its own single-query attention): the same gradients as the full
    # block's [CLS] row, for every parameter and for the input tokens
    grads = []
    for cls_only in (False, True):
        block.zero_grad()
        zz = z.clone().requires_grad_(True)
        out, branches = block(zz, cls_only=cls_only)
        (out[:, 0].pow(2).sum() + branches.pow(3).sum()).backward()
        grads.append([zz.grad] + [p.grad.clone() for p in block.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1])
    for g_full, g_cls in zip(*grads):
        torch.testing.assert_close(g_cls, g_full, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n_cat", [0, 2])
def test_one_block_encoder_equals_the_full_block_on_the_shared_cls_query(n_cat):
    """A one-block encoder scores every token with the learned [CLS] token's query alone (one query for
    all rows, the key and value projections folded into it): the same encodings and the same gradients as
    running the paper's full block over every token and reading its [CLS] row."""
    torch.manual_seed(0)
    net = maya_network(n_num=4, cat_cardinalities=[3] * n_cat, out_dim=3, label_kind="class", num_classes=3,
                      hidden_size=16, num_heads=2, num_branch=3, num_layers=1, dropout=0.0).eval()
    net.blocks[0].branch_weights.copy_(torch.tensor([0.2, 0.5, 0.3]))
    with torch.no_grad():
        net.tokenizer.cls.normal_()  # a [CLS] far from its init, so the query is not near zero
    x_num, x_cat = torch.randn(6, 4), torch.randint(0, 4, (6, n_cat))
    grads = []
    for folded in (False, True):
        net.zero_grad()
        if folded:
            enc, branches = net.encode(x_num, x_cat, return_branches=True)
        else:
            full, b = net.blocks[0](net.tokenizer(x_num, x_cat))  # every token's row, then its [CLS] row
            enc, branches = net.encoder_norm(full[:, 0]), [b]
        (enc.pow(2).sum() + branches[0].pow(3).sum()).backward()
        grads.append((enc.detach(), branches[0].detach(),
                      {k: p.grad.clone() for k, p in net.named_parameters() if p.grad is not None}))
    torch.testing.assert_close(grads[1][0], grads[0][0], rtol=0, atol=1e-5)
    torch.testing.assert_close(grads[1][1], grads[0][1], rtol=0, atol=1e-5)
    # the key bias gets no gradient in either (softmax ignores a shift shared by every key); all others match
    assert grads[1][2].keys() == grads[0][2].keys()
    for k in grads[0][2]:
        torch.testing.assert_close(grads[1][2][k], grads[0][2][k], rtol=1e-4, atol=1e-5, msg=k)
    # and different rows still get different encodings (the shared query reads each row's own tokens)
    assert (grads[1][0][0] - grads[1][0][1]).abs().max() > 1e-3


def test_decoder_prelu_is_a_learned_slope_ffn():
    """Table 12 offers decoder_act_type relu|prelu; prelu has a learned negative slope (0.25 at init)."""
    net = maya_network(n_num=3, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                      hidden_size=8, num_heads=2, decoder_act_type="prelu")
    acts = [m for m in net.decoder[0].ffn.modules() if isinstance(m, torch.nn.PReLU)]
    assert len(acts) == 1
    x = torch.tensor([[-2.0] * 8])
    torch.testing.assert_close(acts[0](x), 0.25 * x)
    assert any(p is acts[0].weight for p in net.parameters())


def test_byte_dropout_keeps_the_rate_and_the_mean():
    from autogluon_maya.maya.network import byte_dropout

    torch.manual_seed(0)
    x = torch.ones(400_000)
    for p in (0.1, 0.3):
        y = byte_dropout(x, p, training=True)
        dropped = (y == 0).float().mean().item()
        assert abs(dropped - p) < 0.005, (p, dropped)
        assert abs(y.mean().item() - 1.0) < 0.01  # kept values are scaled up by 1 / keep rate
    # a rate below the 1/256 grid goes to torch's own dropout instead of being rounded up to 1/256
    y = byte_dropout(x, 0.001, training=True)
    assert (y == 0).float().mean().item() < 0.002
    assert torch.equal(byte_dropout(x, 0.3, training=False), x)


def test_patience_spans_at_least_eight_epochs_of_steps_when_an_epoch_is_one_step():
    """A searched batch of 1,024 on a 40-row table makes every epoch one step; a patience of 4 epochs must
    then mean 4 x 8 one-step epochs, not 4 steps.  Validation after every epoch: with ``"auto"`` the cadence
    follows measured timings, and a pass every 3 epochs stops at the first pass past the patience (34; seen
    once in a full-suite run)."""
    torch.manual_seed(0)
    x_num = torch.randn(40, 3)
    y = (x_num[:, 0] > 0).long()
    net = maya_network(n_num=3, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                      hidden_size=8, num_heads=2, num_branch=2, num_layers=1, dropout=0.0)
    params = {**resolve_defaults("binary", "paper"), "patience": 4, "use_branch_weights": False}
    summary = train_maya(FittedMaya(net), TrainData(x_num, torch.zeros(40, 0, dtype=torch.long), y, y, None),
                         TrainConfig(params=params, loss_fn=make_loss("class"),
                                     device=torch.device("cpu"), seed=0, max_epochs=200),
                         TimeBudget(None), val_score_fn=lambda f: 0.5)  # never improves after epoch 1
    assert summary["batch_size"] == 40 and summary["steps"] == summary["epochs"]
    assert summary["epochs"] == 1 + 4 * 8, summary["epochs"]
