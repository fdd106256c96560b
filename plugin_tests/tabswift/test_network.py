"""TabSwift's network and cached engine checked against the TabSwift paper.

The reference computations are written independently with plain torch ops (hand LayerNorm, explicit
per-head softmax attention, the G1 gate formula), and the cached engine is checked against the
one-pass masked forward, so a change in the arithmetic -- not only a crash -- fails a test.
Networks are TINY and run on one thread; the whole file takes well under a second of compute.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from autogluon_maya.tabswift import (CLASSIFICATION, REGRESSION, RELEASED, TINY, TabSwiftConfig, TabSwiftEngine,
                                     TabSwiftNetwork)
from autogluon_maya.tabswift.network import GatedSplitAttentionBlock

ATOL = 1e-5


pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")


def make_table(n_support=20, n_query=9, n_features=7, n_classes=3, task=CLASSIFICATION, seed=1):
    g = torch.Generator().manual_seed(seed)
    xs, xq = torch.randn(n_support, n_features, generator=g), torch.randn(n_query, n_features, generator=g)
    if task == CLASSIFICATION:
        ys = torch.arange(n_support) % n_classes  # every class present
    else:
        ys = 5.0 + 3.0 * torch.randn(n_support, generator=g)
    return xs, ys, xq


def net_and_engine(config=TINY, chunk_size=1024):
    net = TabSwiftNetwork(config)
    return net, TabSwiftEngine(net, chunk_size=chunk_size)


def standardized(ys):
    y = ys.double()
    return ((y - y.mean()) / y.std(unbiased=False)).float(), float(y.mean()), float(y.std(unbiased=False))


def ref_layer_norm(x, ln):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


# ---- row and label embedding ----------------------------------------------------------------------
def test_row_embedding_pads_to_fmax_and_rescales_by_fmax_over_f():
    net = TabSwiftNetwork(TINY)
    x = torch.randn(6, 5)
    Fmax = TINY.max_features
    padded = torch.cat([x * (Fmax / 5), torch.zeros(6, Fmax - 5)], dim=1)
    W, b = net.row_embedding.proj.weight, net.row_embedding.proj.bias
    torch.testing.assert_close(net.embed_rows(x), padded @ W.T + b, rtol=0, atol=ATOL)
    # per-table counts in a batch padded to a common width: table 1 has 3 real features
    xb = torch.randn(2, 4, 5)
    xb[1, :, 3:] = 0
    out = net.embed_rows(xb, n_features=torch.tensor([5, 3]))
    torch.testing.assert_close(out[0], net.embed_rows(xb[0]), rtol=0, atol=ATOL)
    torch.testing.assert_close(out[1], net.embed_rows(xb[1, :, :3]), rtol=0, atol=ATOL)
    assert (out[1] - net.embed_rows(xb[1])).abs().max() > 1e-3  # the width-5 scale would be wrong
    with pytest.raises(ValueError, match="at most F_max"):
        net.embed_rows(torch.randn(3, Fmax + 1))
    with pytest.raises(ValueError, match="features"):
        net.embed_rows(torch.randn(3, 0))


@pytest.mark.parametrize("task", [CLASSIFICATION, REGRESSION])
def test_label_embedding_is_added_to_support_rows_only(task):
    net = TabSwiftNetwork(TINY)
    xs, ys, xq = make_table(task=task)
    if task == REGRESSION:
        ys = standardized(ys)[0]
    h0 = net(xs, ys, xq, task, return_hidden=True).hidden[0]
    K, n = TINY.n_registers, len(xs)
    enc = net.label_encoders
    if task == CLASSIFICATION:
        label = enc.classes.weight[ys.long()]
    else:
        label = ys[:, None] * enc.target.weight.T + enc.target.bias
    torch.testing.assert_close(h0[:K], net.registers, rtol=0, atol=0)
    torch.testing.assert_close(h0[K:K + n], net.embed_rows(xs) + label, rtol=0, atol=ATOL)
    torch.testing.assert_close(h0[K + n:], net.embed_rows(xq), rtol=0, atol=0)  # queries: no label at all
    assert label.abs().min() > 0


# ---- gated attention block ------------------------------------------------------------------------
def test_gate_is_elementwise_g1_on_normalized_input():
    d, H = 8, 2
    dh = d // H
    blk = GatedSplitAttentionBlock(d, H, ff_factor=2)
    with torch.no_grad():  # hand-set gate: channel c of token t gets sigmoid(0.1 * (c + 1) * sum(z_t) + b_c)
        blk.gate.weight.copy_(0.1 * torch.arange(1, d + 1, dtype=torch.float32)[:, None].expand(d, d))
        blk.gate.bias.copy_(torch.linspace(-2, 2, d))
        blk.norm1.weight.uniform_(0.5, 1.5)
        blk.norm1.bias.uniform_(-0.3, 0.3)
    x, ctx = torch.randn(1, 5, d), torch.randn(1, 6, d)
    z = ref_layer_norm(x, blk.norm1)
    gate = torch.sigmoid(0.1 * torch.arange(1, d + 1) * z.sum(-1, keepdim=True) + torch.linspace(-2, 2, d))
    # plain-torch attention over the context, head by head
    zc = ref_layer_norm(ctx, blk.norm1)
    Wq, Wk, Wv = blk.qkv.weight.split(d)
    bq, bk, bv = blk.qkv.bias.split(d)
    q, k, v = z @ Wq.T + bq, zc @ Wk.T + bk, zc @ Wv.T + bv
    heads = []
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        heads.append(torch.softmax(q[0, :, sl] @ k[0, :, sl].T / math.sqrt(dh), -1) @ v[0, :, sl])
    expected_gated = torch.cat(heads, -1)[None] * gate

    kc, vc = blk.context_kv(ctx)
    qh = (z @ Wq.T + bq).view(1, 5, H, dh).transpose(1, 2)
    torch.testing.assert_close(blk.gated_attention(z, qh, kc, vc), expected_gated, rtol=0, atol=ATOL)
    # the whole block: x + W_o(gated) + b_o, then the pre-norm GELU MLP
    a = x + expected_gated @ blk.out.weight.T + blk.out.bias
    l1, l2 = blk.ffn[0], blk.ffn[2]
    expected = a + F.gelu(ref_layer_norm(a, blk.norm2) @ l1.weight.T + l1.bias) @ l2.weight.T + l2.bias
    torch.testing.assert_close(blk.mix(x, kc, vc), expected, rtol=0, atol=ATOL)
    assert gate.std() > 0.1  # the hand-set gate really varies per channel


# ---- split attention and the cache ----------------------------------------------------------------
def test_context_states_do_not_depend_on_queries():
    net = TabSwiftNetwork(TINY)
    xs, ys, xq = make_table(n_query=11)
    n_ctx = TINY.n_registers + len(xs)
    alone = net(xs, ys, xq[:0], CLASSIFICATION, return_hidden=True).hidden
    with_q = net(xs, ys, xq, CLASSIFICATION, return_hidden=True).hidden
    other_q = net(xs, ys, 10 * xq[:4], CLASSIFICATION, return_hidden=True).hidden
    assert len(alone) == TINY.n_layers + 1 and alone[-1].shape[0] == n_ctx
    for a, b, c in zip(alone, with_q, other_q):
        torch.testing.assert_close(b[:n_ctx], a, rtol=0, atol=ATOL)
        torch.testing.assert_close(c[:n_ctx], a, rtol=0, atol=ATOL)
    # and a query never reads another query: its prediction is the same among 11 or alone
    solo = net(xs, ys, xq[3:4], CLASSIFICATION).prediction
    torch.testing.assert_close(net(xs, ys, xq, CLASSIFICATION).prediction[3:4], solo, rtol=0, atol=ATOL)


@pytest.mark.parametrize("task", [CLASSIFICATION, REGRESSION])
def test_cached_engine_matches_uncached_forward(task):
    net, eng = net_and_engine()
    xs, ys, xq = make_table(task=task)
    cache = eng.encode_context(xs, ys, task)
    got = eng.predict(xq, cache).predictions
    y_in, mean, std = standardized(ys) if task == REGRESSION else (ys, 0.0, 1.0)
    for masked in (True, False):
        ref = net(xs, y_in, xq, task, masked=masked).prediction
        ref = ref[:, :3] if task == CLASSIFICATION else ref * std + mean
        torch.testing.assert_close(got, ref.detach(), rtol=0, atol=ATOL * max(1.0, std))
    # the context cache does not depend on how the context is chunked
    small = TabSwiftEngine(net, chunk_size=3).encode_context(xs, ys, task)
    for a, b in zip(cache.keys + cache.values + cache.register_means,
                    small.keys + small.values + small.register_means):
        torch.testing.assert_close(a, b, rtol=0, atol=ATOL)


@pytest.mark.parametrize("task", [CLASSIFICATION, REGRESSION])
def test_engine_runs_under_bf16_autocast_close_to_fp32(task, monkeypatch):
    """On CUDA the ensemble runs the engine under bf16 autocast; the heads then return bf16 into an fp32
    output buffer (an index-put dtype error before the cast was added). Run the same regions in bf16 on
    the CPU, with and without (tau=0) early exit: finite and close to the fp32 predictions."""
    from autogluon_maya.common import training

    net, eng = net_and_engine()
    xs, ys, xq = make_table(task=task)
    tau = 0.0  # every query exits at layer 1 through its per-layer head: no decision near the threshold
    fp32 = [eng.predict(xq, eng.encode_context(xs, ys, task), tau=t).predictions for t in (None, tau)]
    monkeypatch.setitem(training.BF16_AUTOCAST, "cpu", True)
    with training.autocast(torch.device("cpu")):
        cache = eng.encode_context(xs, ys, task)
        bf16 = [eng.predict(xq, cache, tau=t).predictions for t in (None, tau)]
    assert cache.keys[0].dtype == torch.bfloat16  # the region really ran in bf16
    scale = 1.0 if task == CLASSIFICATION else float(ys.std())
    for a, b in zip(bf16, fp32):
        assert a.dtype == torch.float32 and torch.isfinite(a).all()
        torch.testing.assert_close(a, b, rtol=0, atol=0.1 * scale)


@pytest.mark.parametrize("tau", [None, "mid"])
def test_predictions_do_not_depend_on_query_batching(tau):
    net, eng = net_and_engine()
    xs, ys, xq = make_table(n_query=8)
    cache = eng.encode_context(xs, ys, CLASSIFICATION)
    if tau == "mid":
        tau = _midpoint_tau(net, xs, ys, xq)
    batch = eng.predict(xq, cache, tau=tau)
    chunked = TabSwiftEngine(net, chunk_size=3).predict(xq, cache, tau=tau)
    for i in range(len(xq)):
        one = eng.predict(xq[i:i + 1], cache, tau=tau)
        torch.testing.assert_close(one.predictions[0], batch.predictions[i], rtol=0, atol=ATOL)
        assert one.exit_layer[0] == batch.exit_layer[i]
    torch.testing.assert_close(chunked.predictions, batch.predictions, rtol=0, atol=ATOL)
    assert torch.equal(chunked.exit_layer, batch.exit_layer)


def test_batched_tables_match_one_table_at_a_time_and_train():
    """The one-pass forward takes a batch of tables (pretraining); each table is independent."""
    net = TabSwiftNetwork(TINY)
    a, b = make_table(seed=1), make_table(seed=2)
    xs, ys, xq = (torch.stack([u, v]) for u, v in zip(a, b))
    out = net(xs, ys, xq, CLASSIFICATION, masked=False, return_layers=True)
    assert out.prediction.shape == (2, len(a[2]), TINY.max_classes)
    for i, t in enumerate((a, b)):
        torch.testing.assert_close(out.prediction[i], net(*t, CLASSIFICATION).prediction, rtol=0, atol=ATOL)
    loss = F.cross_entropy(out.prediction.flatten(0, 1), torch.zeros(2 * len(a[2]), dtype=torch.long))
    loss = loss + sum(p.sum() for p in out.layer_predictions) * 0 + sum(s.sum() for s in out.exit_logits) * 0
    loss.backward()
    assert net.registers.grad.abs().sum() > 0 and net.blocks[0].gate.weight.grad.abs().sum() > 0
    assert net.label_encoders.target.weight.grad is None  # the regression encoder is not used here


# ---- early exit -----------------------------------------------------------------------------------
def _midpoint_tau(net, xs, ys, xq) -> float:
    """A τ halfway between two neighbouring layer-1 exit scores: some queries exit, some go on,
    and no score sits within float noise of τ."""
    with torch.no_grad():
        s = torch.sigmoid(net(xs, ys, xq, CLASSIFICATION, return_layers=True).exit_logits[0]).sort().values
    i = len(s) // 2
    return float((s[i - 1] + s[i]) / 2)


def test_tau_zero_exits_at_first_layer_and_tau_above_one_runs_every_layer():
    net, eng = net_and_engine()
    xs, ys, xq = make_table()
    Q, L = len(xq), TINY.n_layers
    cache = eng.encode_context(xs, ys, CLASSIFICATION)
    ref = net(xs, ys, xq, CLASSIFICATION, return_layers=True)

    first = eng.predict(xq, cache, tau=0.0)
    assert first.exit_layer.tolist() == [1] * Q
    assert first.rows_per_layer == [Q] + [0] * (L - 1)
    torch.testing.assert_close(first.predictions, ref.layer_predictions[0][:, :3].detach(), rtol=0, atol=ATOL)

    never = eng.predict(xq, cache, tau=1.5)
    assert never.exit_layer.tolist() == [L] * Q
    assert never.rows_per_layer == [Q] * L
    full = eng.predict(xq, cache, tau=None)
    assert full.rows_per_layer == [Q] * L
    torch.testing.assert_close(never.predictions, full.predictions, rtol=0, atol=0)
    assert (first.predictions - full.predictions).abs().max() > 1e-4  # the layer-1 head is a different head


def test_exited_queries_are_removed_from_later_layers(monkeypatch):
    net, eng = net_and_engine(replace(TINY, n_layers=4))
    xs, ys, xq = make_table(n_query=16)
    Q, L = len(xq), net.config.n_layers
    cache = eng.encode_context(xs, ys, CLASSIFICATION)
    tau = _midpoint_tau(net, xs, ys, xq)
    ref = net(xs, ys, xq, CLASSIFICATION, return_layers=True)

    # expected exit layer of each query from the uncached exit logits: first e with sigmoid >= τ, else L
    passed = torch.stack([torch.sigmoid(s) >= tau for s in ref.exit_logits] + [torch.ones(Q, dtype=torch.bool)])
    expected_layer = passed.int().argmax(0) + 1
    preds = ref.layer_predictions + [ref.prediction]
    expected_pred = torch.stack([preds[e - 1][i, :3] for i, e in enumerate(expected_layer.tolist())]).detach()

    seen = []  # an independent count: rows that actually enter each block's query computation

    def counting(block_index, original):
        def mix(h, k, v):
            seen.append((block_index, h.shape[1]))
            return original(h, k, v)
        return mix

    for e, blk in enumerate(net.blocks):
        monkeypatch.setattr(blk, "mix", counting(e, blk.mix))
    got = eng.predict(xq, cache, tau=tau)

    assert torch.equal(got.exit_layer, expected_layer)
    torch.testing.assert_close(got.predictions, expected_pred, rtol=0, atol=ATOL)
    still_running = [int((expected_layer > e).sum()) for e in range(L)]  # queries that reach block e+1
    assert got.rows_per_layer == still_running
    assert [sum(n for e2, n in seen if e2 == e) for e in range(L)] == still_running
    assert 0 < still_running[1] < still_running[0] == Q  # about half left after layer 1


def test_exit_head_reads_query_state_and_mean_register_state_of_its_layer():
    net, eng = net_and_engine()
    xs, ys, xq = make_table()
    K, n_ctx = TINY.n_registers, TINY.n_registers + len(xs)
    with torch.no_grad():
        ref = net(xs, ys, xq, CLASSIFICATION, return_layers=True, return_hidden=True)
    cache = eng.encode_context(xs, ys, CLASSIFICATION)
    assert len(ref.exit_logits) == len(ref.layer_predictions) == TINY.n_layers - 1
    for e, head in enumerate(net.exit_heads):
        h = ref.hidden[e + 1]  # states after block e + 1
        r = h[:K].mean(0)
        torch.testing.assert_close(cache.register_means[e][0], r, rtol=0, atol=ATOL)
        z = ref_layer_norm(torch.cat([h[n_ctx:], r.expand(len(xq), -1)], -1), head.norm)
        l1, l2 = head.cls[0], head.cls[2]
        expected = (F.gelu(z @ l1.weight.T + l1.bias) @ l2.weight.T + l2.bias)[:, 0]
        torch.testing.assert_close(ref.exit_logits[e], expected, rtol=0, atol=ATOL)
        with torch.no_grad():  # the register summary matters
            moved = head(h[n_ctx:][None], (r + 1.0)[None], CLASSIFICATION)[0]
        assert (moved - ref.exit_logits[e]).abs().max() > 1e-4


# ---- heads ----------------------------------------------------------------------------------------
def test_classification_logits_are_sliced_to_classes_present():
    net, eng = net_and_engine()
    xs, ys, xq = make_table(n_classes=3)
    full = net(xs, ys, xq, CLASSIFICATION).prediction.detach()
    assert full.shape == (len(xq), TINY.max_classes)
    three = eng.predict(xq, eng.encode_context(xs, ys, CLASSIFICATION)).predictions
    four = eng.predict(xq, eng.encode_context(xs, ys, CLASSIFICATION, n_classes=4)).predictions
    assert three.shape == (len(xq), 3) and four.shape == (len(xq), 4)
    torch.testing.assert_close(four[:, :3], three, rtol=0, atol=ATOL)
    torch.testing.assert_close(four, full[:, :4], rtol=0, atol=ATOL)
    with pytest.raises(ValueError, match="class id"):
        eng.encode_context(xs, ys, CLASSIFICATION, n_classes=2)
    with pytest.raises(ValueError, match="C_max"):
        eng.encode_context(xs, torch.full_like(ys, TINY.max_classes), CLASSIFICATION)


def test_regression_head_is_one_scalar_per_query_in_target_units():
    net, eng = net_and_engine()
    xs, ys, xq = make_table(task=REGRESSION)
    out = eng.predict(xq, eng.encode_context(xs, ys, REGRESSION), tau=0.0).predictions
    assert out.shape == (len(xq),)
    assert net(xs, standardized(ys)[0], xq, REGRESSION).prediction.shape == (len(xq),)
    # targets are standardized on the context and un-standardized on output: affine equivariance
    out = eng.predict(xq, eng.encode_context(xs, ys, REGRESSION)).predictions
    moved = eng.predict(xq, eng.encode_context(xs, 7.0 * ys - 40.0, REGRESSION)).predictions
    torch.testing.assert_close(moved, 7.0 * out - 40.0, rtol=0, atol=1e-4)
    # a constant target does not divide by zero
    const = eng.predict(xq, eng.encode_context(xs, torch.full_like(ys, 2.5), REGRESSION)).predictions
    assert torch.isfinite(const).all()


# ---- config and errors ----------------------------------------------------------------------------
def test_released_backbone_has_the_checkpoints_parameter_count():
    """8,203,211 parameters in swift.ckpt; ours replaces the class encoder Linear(1, d) by a C_max x d
    lookup table (+ (C_max - 2) * d = 1,536) and adds nothing else when early exit is off."""
    with torch.device("meta"):
        net = TabSwiftNetwork(replace(RELEASED, early_exit=False))
    assert sum(p.numel() for p in net.parameters()) == 8_203_211 + 8 * 192
    assert TabSwiftConfig.from_dict(RELEASED.to_dict()) == RELEASED
    with pytest.raises(ValueError, match="Unknown"):
        TabSwiftConfig.from_dict({**TINY.to_dict(), "bogus": 1})
    with pytest.raises(ValueError, match="multiple"):
        TabSwiftConfig(d_model=10, n_heads=4)


def test_bad_calls_raise_clear_errors():
    net, eng = net_and_engine()
    xs, ys, xq = make_table()
    cache = eng.encode_context(xs, ys, CLASSIFICATION)
    with pytest.raises(ValueError, match="task"):
        eng.encode_context(xs, ys, "ranking")
    with pytest.raises(ValueError, match="x_query"):
        eng.predict(xq[:, :5], cache)
    with pytest.raises(ValueError, match="integer"):
        net(xs, ys + 0.5, xq, CLASSIFICATION)
    no_exit = TabSwiftEngine(TabSwiftNetwork(replace(TINY, early_exit=False)))
    with pytest.raises(ValueError, match="early_exit"):
        no_exit.predict(xq, no_exit.encode_context(xs, ys, CLASSIFICATION), tau=0.5)
    assert eng.predict(xq[:0], cache).predictions.shape == (0, 3)
