"""The released TabSwift checkpoint format (issue 11): safe reading, complete mapping, the released
computation, conversion, AutoGluon use, and the optional hub download's offline failure.

The real ``swift.ckpt`` is not reachable here, so the tests build files in its layout themselves:
random weights under the released tensor names and shapes and the released config dict (from
``../shared/docs/tabswift_reference.md`` and the third-party audit of the file it quotes), SMALL in
the default run, the released size in a slow test.  ``released_forward`` below is an independent
re-statement of the released computation in plain torch ops (no module of ours); converted weights
run through ``TabSwiftNetwork`` must match it to 1e-5.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya.tabswift.engine import TabSwiftEngine
from autogluon_maya.tabswift.network import CLASSIFICATION, REGRESSION
from autogluon_maya.tabswift.released import (ReleasedCheckpointError, convert, convert_cached, main,
                                              released_to_network, resolve_checkpoint)
from autogluon_maya.tabswift.weights import load_checkpoint, read_checkpoint_info

pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")

#: the released config dict (reference doc, "Released configuration"), incl. the inert TabICL leftovers
RELEASED_CONFIG = {"max_classes": 10, "max_dim": 100, "embed_dim": 192, "proj_dim": 100, "col_num_blocks": 3,
                   "col_nhead": 4, "col_num_inds": 128, "row_num_blocks": 3, "row_nhead": 8, "row_num_cls": 1,
                   "row_rope_base": 100000.0, "icl_num_blocks": 24, "icl_nhead": 4, "ff_factor": 2, "dropout": 0.0,
                   "activation": "gelu", "norm_first": True, "use_headwise_gate": False,
                   "use_elementwise_gate": True, "register_tokens": 64}
SMALL_CONFIG = {**RELEASED_CONFIG, "max_classes": 5, "max_dim": 12, "proj_dim": 12, "embed_dim": 32,
                "icl_num_blocks": 2, "register_tokens": 4}


def released_state(cfg: dict, seed: int = 0, gate_key: str = "attn.gate_proj.weight") -> dict:
    """Random tensors with the released names and shapes (reference doc 1a; audit key list)."""
    g = torch.Generator().manual_seed(seed)
    d, F_max, C, K = cfg["embed_dim"] * cfg["row_num_cls"], cfg["max_dim"], cfg["max_classes"], cfg["register_tokens"]
    ff, hid = cfg["ff_factor"] * d, 2 * d

    def w(*shape, scale=None):
        return torch.randn(*shape, generator=g) * (scale if scale is not None else 1.0 / math.sqrt(shape[-1]))

    def ln():
        return 1.0 + 0.1 * torch.randn(d, generator=g), 0.1 * torch.randn(d, generator=g)

    sd = {"x_linear.weight": w(d, F_max), "x_linear.bias": w(d, scale=0.1),
          "icl_predictor.tf_icl.register_token_values": w(K, d, scale=0.5)}
    for i in range(cfg["icl_num_blocks"]):
        p = f"icl_predictor.tf_icl.blocks.{i}."
        sd[p + "attn.in_proj_weight"], sd[p + "attn.in_proj_bias"] = w(3 * d, d), w(3 * d, scale=0.1)
        sd[p + "attn.out_proj.weight"], sd[p + "attn.out_proj.bias"] = w(d, d), w(d, scale=0.1)
        sd[p + gate_key], sd[p + gate_key.replace("weight", "bias")] = w(d, d), w(d, scale=0.5)
        sd[p + "linear1.weight"], sd[p + "linear1.bias"] = w(ff, d), w(ff, scale=0.1)
        sd[p + "linear2.weight"], sd[p + "linear2.bias"] = w(d, ff), w(d, scale=0.1)
        sd[p + "norm1.weight"], sd[p + "norm1.bias"] = ln()
        sd[p + "norm2.weight"], sd[p + "norm2.bias"] = ln()
    sd["icl_predictor.ln.weight"], sd["icl_predictor.ln.bias"] = ln()
    sd["icl_predictor.y_encoder.weight"], sd["icl_predictor.y_encoder.bias"] = w(d, 1, scale=0.5), w(d, scale=0.1)
    sd["icl_predictor.y_encoder_reg.weight"], sd["icl_predictor.y_encoder_reg.bias"] = w(d, 1), w(d, scale=0.1)
    for name, out in (("decoder", C), ("reg_decoder", 1)):
        sd[f"icl_predictor.{name}.0.weight"], sd[f"icl_predictor.{name}.0.bias"] = w(hid, d), w(hid, scale=0.1)
        sd[f"icl_predictor.{name}.2.weight"], sd[f"icl_predictor.{name}.2.bias"] = w(out, hid), w(out, scale=0.1)
    return sd


def write_released(path: Path, cfg: dict = SMALL_CONFIG, state: dict = None, **extra) -> Path:
    torch.save({"config": dict(cfg), "state_dict": state if state is not None else released_state(cfg), **extra}, path)
    return path


# ---- the released computation, written from the paper / reference notes --------------------------------
def _layer_norm(x, w, b, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * w + b


def _gelu(x):
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def released_forward(sd: dict, cfg: dict, X: torch.Tensor, y_support: torch.Tensor, regression: bool) -> torch.Tensor:
    """X (B, T, H): the first n_tr rows are the support set.  Returns the queries' outputs."""
    sd = {k: v.double() for k, v in sd.items()}
    X = X.double()
    B, T, H = X.shape
    n_tr, F_max, nh = y_support.shape[1], cfg["max_dim"], cfg["icl_nhead"]
    K = cfg["register_tokens"]
    x = torch.cat([X * (F_max / H), X.new_zeros(B, T, F_max - H)], dim=-1)  # rescale by F_max/H, zero-pad
    R = x @ sd["x_linear.weight"].T + sd["x_linear.bias"]
    enc = "icl_predictor.y_encoder_reg" if regression else "icl_predictor.y_encoder"
    label = y_support.double().unsqueeze(-1) @ sd[enc + ".weight"].T + sd[enc + ".bias"]  # class id as a scalar
    R = torch.cat([R[:, :n_tr] + label, R[:, n_tr:]], dim=1)
    h = torch.cat([sd["icl_predictor.tf_icl.register_token_values"].expand(B, K, -1), R], dim=1)
    cut = K + n_tr
    d = h.shape[-1]
    dh = d // nh
    for i in range(cfg["icl_num_blocks"]):
        p = f"icl_predictor.tf_icl.blocks.{i}."
        z = _layer_norm(h, sd[p + "norm1.weight"], sd[p + "norm1.bias"])
        qkv = z @ sd[p + "attn.in_proj_weight"].T + sd[p + "attn.in_proj_bias"]
        q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]
        gate = 1.0 / (1.0 + torch.exp(-(z @ sd[p + "attn.gate_proj.weight"].T + sd[p + "attn.gate_proj.bias"])))
        heads = []
        for a in range(nh):
            sl = slice(a * dh, (a + 1) * dh)
            scores = q[..., sl] @ k[:, :cut, sl].transpose(1, 2) / math.sqrt(dh)  # every token reads the left segment
            weights = torch.exp(scores - scores.max(-1, keepdim=True).values)
            weights = weights / weights.sum(-1, keepdim=True)
            heads.append((weights @ v[:, :cut, sl]) * gate[..., sl])
        h = h + torch.cat(heads, -1) @ sd[p + "attn.out_proj.weight"].T + sd[p + "attn.out_proj.bias"]
        z = _layer_norm(h, sd[p + "norm2.weight"], sd[p + "norm2.bias"])
        h = h + _gelu(z @ sd[p + "linear1.weight"].T + sd[p + "linear1.bias"]) @ sd[p + "linear2.weight"].T \
            + sd[p + "linear2.bias"]
    z = _layer_norm(h[:, cut:], sd["icl_predictor.ln.weight"], sd["icl_predictor.ln.bias"])
    dec = "icl_predictor.reg_decoder" if regression else "icl_predictor.decoder"
    out = _gelu(z @ sd[dec + ".0.weight"].T + sd[dec + ".0.bias"]) @ sd[dec + ".2.weight"].T + sd[dec + ".2.bias"]
    return out.squeeze(-1) if regression else out


def _task(cfg, B=2, n_tr=14, n_q=6, H=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(B, n_tr + n_q, H, generator=g)
    y_cls = torch.randint(0, cfg["max_classes"], (B, n_tr), generator=g)
    y_reg = torch.randn(B, n_tr, generator=g)
    return X, y_cls, y_reg


# ---- conversion and the forward pass ---------------------------------------------------------------------
@pytest.mark.parametrize("gate_key", ["attn.gate_proj.weight", "attn.gate_proj_weight"])
def test_converted_checkpoint_runs_the_released_computation(tmp_path, gate_key):
    state = released_state(SMALL_CONFIG, gate_key=gate_key)
    src = write_released(tmp_path / "swift.ckpt", state=state)
    target = convert(src, f"{tmp_path}/out/")
    assert target == tmp_path / "out" / "swift"
    net = load_checkpoint(target)
    # every released tensor became a parameter: same count, same total, nothing left over
    assert sum(p.numel() for p in net.parameters()) == sum(t.numel() for t in state.values())
    assert len(net.state_dict()) == len(state)
    assert net.config.label_encoding == "scalar" and net.n_exit_layers == 0

    ref_state = {k.replace("gate_proj_weight", "gate_proj.weight").replace("gate_proj_bias", "gate_proj.bias"): v
                 for k, v in state.items()}
    X, y_cls, y_reg = _task(SMALL_CONFIG)
    n_tr = y_cls.shape[1]
    with torch.no_grad():
        for task, y, regression in ((CLASSIFICATION, y_cls, False), (REGRESSION, y_reg, True)):
            ours = net(X[:, :n_tr], y, X[:, n_tr:], task).prediction.double()
            expected = released_forward(ref_state, SMALL_CONFIG, X, y, regression)
            assert ours.shape == expected.shape
            assert torch.allclose(ours, expected, atol=1e-5, rtol=0), (task, (ours - expected).abs().max())
        # the cached engine (what predict runs) computes the same thing, one table at a time
        engine = TabSwiftEngine(net, chunk_size=4)
        cache = engine.encode_context(X[0, :n_tr], y_cls[0], CLASSIFICATION, n_classes=SMALL_CONFIG["max_classes"])
        logits = engine.predict(X[0, n_tr:], cache).predictions.double()
        expected = released_forward(ref_state, SMALL_CONFIG, X[:1], y_cls[:1], False)[0]
        assert torch.allclose(logits, expected, atol=1e-5, rtol=0)
    # the JSON records where the weights came from
    source = read_checkpoint_info(target)["metadata"]["source"]
    assert source["file"] == "swift.ckpt" and source["released_config"]["icl_num_blocks"] == 2


def test_class_encoding_differs_from_our_default(tmp_path):
    """Guards the one architectural difference: with our embedding table the released weights would not fit,
    and a scalar-encoded class id moves the output when the id changes (a lookup would need a table)."""
    net, _ = released_to_network(write_released(tmp_path / "swift.ckpt"))
    assert tuple(net.label_encoders.classes.weight.shape) == (SMALL_CONFIG["embed_dim"], 1)
    y = torch.tensor([[0.0, 1.0, 2.0]])
    e = net.label_encoders(y, CLASSIFICATION)[0]
    assert torch.allclose(e[2] - e[1], e[1] - e[0], atol=1e-6)  # linear in the id: the released computation


def test_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "code_ran"
    src = write_released(tmp_path / "evil.ckpt", extra_object=RunsCodeWhenUnpickled(str(marker)))
    with pytest.raises(ReleasedCheckpointError, match="arbitrary unpickling") as err:
        convert(src, f"{tmp_path}/out/")
    assert "'exec'" in str(err.value)  # names what the file wanted to run
    assert not marker.exists(), "the file's code ran while loading"
    assert not (tmp_path / "out").exists()


class RunsCodeWhenUnpickled:
    """Unpickling this object calls exec(...): what a malicious checkpoint would do."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('x')",)


def test_shape_mismatch_names_the_tensor(tmp_path):
    state = released_state(SMALL_CONFIG)
    state["icl_predictor.tf_icl.blocks.1.linear1.weight"] = torch.zeros(7, SMALL_CONFIG["embed_dim"])
    with pytest.raises(ReleasedCheckpointError, match=r"icl_predictor\.tf_icl\.blocks\.1\.linear1\.weight.*\(7, 32\)"):
        convert(write_released(tmp_path / "swift.ckpt", state=state), f"{tmp_path}/out/")


def test_leftover_and_missing_tensors_are_named(tmp_path):
    state = released_state(SMALL_CONFIG)
    state["icl_predictor.tf_icl.blocks.0.attn.extra_scale"] = torch.ones(3)
    with pytest.raises(ReleasedCheckpointError, match=r"no place in the network.*blocks\.0\.attn\.extra_scale"):
        convert(write_released(tmp_path / "a.ckpt", state=state), f"{tmp_path}/out/")
    state = released_state(SMALL_CONFIG)
    del state["icl_predictor.reg_decoder.2.bias"]
    with pytest.raises(ReleasedCheckpointError, match=r"missing from the file.*icl_predictor\.reg_decoder\.2\.bias"):
        convert(write_released(tmp_path / "b.ckpt", state=state), f"{tmp_path}/out/")
    with pytest.raises(ReleasedCheckpointError, match="use_headwise_gate"):
        convert(write_released(tmp_path / "c.ckpt", cfg={**SMALL_CONFIG, "use_headwise_gate": True,
                                                          "use_elementwise_gate": False}), f"{tmp_path}/out/")


def test_console_command_and_convert_once(tmp_path, monkeypatch, capsys):
    src = write_released(tmp_path / "swift.ckpt")
    assert main([str(src), str(tmp_path / "out") + "/"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "swift")
    assert resolve_checkpoint(tmp_path / "out") == tmp_path / "out" / "swift"  # the directory is enough
    assert main([str(tmp_path / "missing.ckpt"), str(tmp_path / "o2") + "/"]) == 1

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    first = convert_cached(src)
    stamp = first.with_suffix(".safetensors").stat().st_mtime_ns
    assert resolve_checkpoint(src) == first
    assert first.with_suffix(".safetensors").stat().st_mtime_ns == stamp  # converted once, then reused


def test_released_weights_predict_through_autogluon(tmp_path, monkeypatch):
    from autogluon.tabular import TabularPredictor

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    src = write_released(tmp_path / "swift.ckpt")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=160), "b": rng.normal(size=160),
                       "c": pd.Categorical(rng.choice(["x", "y", "z"], size=160))})
    df["y"] = np.where(df["a"] + (df["c"] == "x") > 0.3, "pos", "neg")
    hp = {"n_estimators": 2, "max_context_rows": 256}
    predictor = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        df.iloc[:120], hyperparameters={"TABSWIFT": {**hp, "checkpoint_path": str(src)}},
        raise_on_model_failure=True, num_cpus=1)
    proba = predictor.predict_proba(df.iloc[120:])
    assert proba.shape == (40, 2) and np.allclose(proba.sum(1), 1.0) and proba.notna().all().all()
    model = predictor._trainer.load_model("TabSwift")
    net = model.model.network
    assert net.config.label_encoding == "scalar" and net.config.n_layers == 2
    converted = load_checkpoint(resolve_checkpoint(src))
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), converted.state_dict().values()))

    # the environment variable is read the same way
    monkeypatch.setenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", str(src))
    p2 = TabularPredictor(label="y", path=str(tmp_path / "ag2"), verbosity=0).fit(
        df.iloc[:120], hyperparameters={"TABSWIFT": hp}, raise_on_model_failure=True, num_cpus=1)
    assert np.allclose(p2.predict_proba(df.iloc[120:]).to_numpy(), proba.to_numpy())


# ---- optional hub download: fails fast offline --------------------------------------------------------------
@pytest.mark.parametrize("case", ["HF_HUB_OFFLINE", "refused", "silent"])
def test_hub_fails_fast_when_offline(tmp_path, monkeypatch, case):
    """Offline flag; nothing listening; a server that accepts connections but never answers (the case
    huggingface_hub itself would retry with back-off for ~30 s)."""
    pytest.importorskip("huggingface_hub")
    import socket

    from autogluon_maya.tabswift.hub import HubUnavailableError

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    monkeypatch.setenv("AUTOGLUON_MAYA_HUB_TIMEOUT", "1")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)  # completes TCP handshakes, never reads or answers
    if case == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        from huggingface_hub import constants  # read from HF_ENDPOINT when huggingface_hub is imported

        monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9" if case == "refused"
                            else f"http://127.0.0.1:{silent.getsockname()[1]}")
    t0 = time.time()
    try:
        with pytest.raises(HubUnavailableError, match="autogluon-maya-convert"):
            resolve_checkpoint("hub")
    finally:
        silent.close()
    assert time.time() - t0 < 5


def test_hub_uses_the_converted_copy_without_network(tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # unreachable: any network use would fail
    target = convert(write_released(tmp_path / "swift.ckpt"), tmp_path / "cache" / "tabswift" / "hub" / "swift")
    assert resolve_checkpoint("hub") == target


# ---- the released size ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_released_size_converts_to_8_203_211_parameters(tmp_path):
    state = released_state(RELEASED_CONFIG)
    assert len(state) == 353
    target = convert(write_released(tmp_path / "swift.ckpt", cfg=RELEASED_CONFIG, state=state), f"{tmp_path}/out/")
    net = load_checkpoint(target)
    assert sum(p.numel() for p in net.parameters()) == 8_203_211
    X, y_cls, _ = _task(RELEASED_CONFIG, B=1, n_tr=40, n_q=8, H=30)
    with torch.no_grad():
        ours = net(X[:, :40], y_cls, X[:, 40:], CLASSIFICATION).prediction.double()
    assert torch.allclose(ours, released_forward(state, RELEASED_CONFIG, X, y_cls, False), atol=1e-5, rtol=0)


# ---- early exit on the released backbone (stage 3) --------------------------------------------------------------
def test_stage3_adds_exit_heads_to_a_converted_release(tmp_path):
    import json

    from autogluon_maya.pretraining.config import PretrainConfig
    from autogluon_maya.pretraining.trainer import train
    from autogluon_maya.tabswift.config import TabSwiftConfig

    state = released_state(SMALL_CONFIG)
    converted = convert(write_released(tmp_path / "swift.ckpt", state=state), f"{tmp_path}/conv/")
    size = TabSwiftConfig(n_layers=2, d_model=32, n_heads=4, n_registers=4, max_features=12, max_classes=5)
    (tmp_path / "size.json").write_text(json.dumps(size.to_dict()))
    run = dict(out_dir=str(tmp_path / "s3"), stage=3, model=str(tmp_path / "size.json"), init_from=str(converted),
               prior="random_mlp", batch_size=4, rows=48, num_workers=0, threads=1, steps=3, log_every=3,
               checkpoint_every=1000, export=str(tmp_path / "s3ckpt"))
    train(PretrainConfig(**run), progress=False)
    net = load_checkpoint(tmp_path / "s3ckpt")
    assert net.n_exit_layers == 1 and net.config.label_encoding == "scalar"
    before = load_checkpoint(converted).state_dict()
    after = net.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "stage 3 changed the released backbone"
    X, y_cls, _ = _task(SMALL_CONFIG)
    with torch.no_grad():  # the final head still computes the release's output; the exit path runs
        out = net(X[:, :14], y_cls, X[:, 14:], CLASSIFICATION, return_layers=True)
        assert torch.allclose(out.prediction.double(), released_forward(state, SMALL_CONFIG, X, y_cls, False), atol=1e-5)
        assert out.exit_logits[0].shape == (2, 6)
    with pytest.raises(ValueError, match="--model released"):  # the size preset must match the checkpoint
        train(PretrainConfig(**{**run, "model": "tiny", "out_dir": str(tmp_path / "bad")}), progress=False)
