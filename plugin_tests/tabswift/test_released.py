"""The authors' released TabSwift checkpoint (``swift.ckpt``): safe reading, the complete mapping onto
``TabSwiftNetwork``, the released computation, conversion, AutoGluon use, early exit without exit heads,
and the hub path (offline: from a pre-filled local cache; failing fast when nothing is cached).

The real ``swift.ckpt`` is not reachable here, so its stand-in is made the way the authors made theirs:
their own ``TabSwift(**config)`` module (their inference code as the ``tabarena`` package vendors it,
the test oracle, see ``conftest.tabswift_authors``), seeded random weights, saved as
``{"config": ..., "state_dict": ...}``.  The released size (24 blocks, d = 192) is built once per module;
smaller files for the AutoGluon and hub tests use a small config.  Our outputs must equal the authors'
forward pass to 1e-5, through the one-pass network and through the cached engine.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya.tabswift.checkpoints_io.choice import resolve_checkpoint
from autogluon_maya.tabswift.checkpoints_io.format import checkpoint_paths, load_checkpoint, read_checkpoint_info
from autogluon_maya.tabswift.checkpoints_io.released import (ReleasedCheckpointError, convert, convert_cached, main,
                                                             released_to_network)
from autogluon_maya.tabswift.engine import TabSwiftEngine
from autogluon_maya.tabswift.network import CLASSIFICATION, REGRESSION
from plugin_tests.conftest import tabswift_authors
from plugin_tests.tabswift.loopback_hub import LoopbackHub

pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")
CLOSED_PORT = "http://127.0.0.1:9"  # nothing listens there: any network use fails at once


@pytest.fixture(autouse=True)
def _no_remembered_hub_failures():
    """Failed hub attempts and the weights "auto" chose are remembered for the process; every test starts and
    ends without either."""
    from autogluon_maya.tabswift.checkpoints_io.hub import forget_failures
    from autogluon_maya.tabswift.checkpoints_io.choice import forget_auto_choice

    forget_failures()
    forget_auto_choice()
    yield
    forget_failures()
    forget_auto_choice()


@pytest.fixture
def nothing_cached(tmp_path, monkeypatch):
    """checkpoint_path="auto" on a machine with nothing to find: our cache and the hub's local cache empty,
    $AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT and HF_HUB_OFFLINE unset, downloads on, the hub a closed local port.
    Returns the hub's local cache folder."""
    from huggingface_hub import constants

    monkeypatch.delenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.setenv("AUTOGLUON_MAYA_HUB_DOWNLOAD", "1")
    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("AUTOGLUON_MAYA_HUB_TIMEOUT", "2")
    # huggingface_hub reads these when it is first imported: set what it derived
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setattr(constants, "ENDPOINT", CLOSED_PORT)
    return tmp_path / "hf" / "hub"

#: the released config dict (the authors' released configuration), incl. the inert TabICL leftovers
RELEASED_CONFIG = {"max_classes": 10, "max_dim": 100, "embed_dim": 192, "proj_dim": 100, "col_num_blocks": 3,
                   "col_nhead": 4, "col_num_inds": 128, "row_num_blocks": 3, "row_nhead": 8, "row_num_cls": 1,
                   "row_rope_base": 100000.0, "icl_num_blocks": 24, "icl_nhead": 4, "ff_factor": 2, "dropout": 0.0,
                   "activation": "gelu", "norm_first": True, "use_headwise_gate": False,
                   "use_elementwise_gate": True, "register_tokens": 64}
SMALL_CONFIG = {**RELEASED_CONFIG, "max_classes": 5, "max_dim": 12, "proj_dim": 12, "embed_dim": 32,
                "icl_num_blocks": 2, "register_tokens": 4}
N_SUPPORT, N_QUERY = 40, 8


# ---- files written by the authors' module -------------------------------------------------------------------
def authors_module(cfg: dict, seed: int = 0) -> torch.nn.Module:
    """The authors' ``TabSwift(**cfg)`` with every tensor drawn from a seeded generator: their init zeroes
    the output projections (every block would be the identity) and leaves the registers uninitialized."""
    TabSwift = tabswift_authors()[0]
    module = TabSwift(**cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() > 1:  # weights ~ 1/sqrt(fan_in) keep 24 residual blocks at a sane scale
                p.copy_(torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)
            else:  # biases around 0, LayerNorm scales around 1
                scale = ("norm" in name or ".ln." in name) and name.endswith("weight")
                p.copy_(0.1 * torch.randn(p.shape, generator=g) + (1.0 if scale else 0.0))
    return module.eval()


def write_authors_ckpt(path: Path, cfg: dict = SMALL_CONFIG, seed: int = 0, edit=None) -> Path:
    """Save like ``swift.ckpt``; ``edit(state_dict)`` may damage the state first."""
    state = dict(authors_module(cfg, seed).state_dict())
    if edit is not None:
        edit(state)
    torch.save({"config": dict(cfg), "state_dict": state}, path)
    return path


def authors_forward(module, X: torch.Tensor, y: torch.Tensor, regression: bool) -> torch.Tensor:
    """The authors' forward: X (B, n_support + n_query, H), y (B, n_support) -> the queries' logits over
    the classes present (B, Q, C) or regression outputs (B, Q)."""
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # their autocast(device_type="cuda") warns on a CPU-only torch
        out = module(X.clone(), y.float(), return_logits=True, if_regression=regression)
    return out.squeeze(-1).double() if regression else out.double()


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """The released size, built once: the authors' module, its swift.ckpt, and our converted network."""
    folder = tmp_path_factory.mktemp("released")
    module = authors_module(RELEASED_CONFIG)
    src = folder / "swift.ckpt"
    torch.save({"config": dict(RELEASED_CONFIG), "state_dict": module.state_dict()}, src)
    target = convert(src, f"{folder}/out/")
    return SimpleNamespace(module=module, src=src, target=target, net=load_checkpoint(target))


def _table(n_classes, width, seed=1, batch=2):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(batch, N_SUPPORT + N_QUERY, width, generator=g)
    if n_classes is None:
        return X, 3.0 + 2.0 * torch.randn(batch, N_SUPPORT, generator=g)  # not standardized on purpose
    y = torch.randint(0, n_classes, (batch, N_SUPPORT), generator=g)
    y[:, :n_classes] = torch.arange(n_classes)  # every class present (the authors slice to the classes seen)
    return X, y


# ---- conversion and the forward pass, at the released size ----------------------------------------------------
def test_released_size_converts_completely(released):
    state = released.module.state_dict()
    assert len(state) == 353 and sum(t.numel() for t in state.values()) == 8_203_211
    net = released.net
    assert sum(p.numel() for p in net.parameters()) == 8_203_211 and len(net.state_dict()) == 353
    assert net.config.label_encoding == "scalar" and net.n_exit_layers == 0
    assert (net.config.n_layers, net.config.d_model, net.config.n_registers) == (24, 192, 64)
    source = read_checkpoint_info(released.target)["metadata"]["source"]
    assert source["file"] == "swift.ckpt" and source["released_config"] == RELEASED_CONFIG


@pytest.mark.parametrize("width", [12, 100], ids=["narrow", "F_max"])
@pytest.mark.parametrize("n_classes", [2, 3, 10, None], ids=["2cls", "3cls", "10cls", "regression"])
def test_converted_network_computes_the_authors_forward(released, n_classes, width):
    X, y = _table(n_classes, width)
    regression = n_classes is None
    task = REGRESSION if regression else CLASSIFICATION
    expected = authors_forward(released.module, X, y, regression)
    net = released.net
    with torch.no_grad():
        for masked in (True, False):  # the one-pass network, with the explicit mask and with sliced keys
            ours = net(X[:, :N_SUPPORT], y, X[:, N_SUPPORT:], task, masked=masked).prediction.double()
            if not regression:
                ours = ours[..., :n_classes]
            assert ours.shape == expected.shape
            assert torch.allclose(ours, expected, atol=1e-5, rtol=0), (masked, (ours - expected).abs().max())

    # the cached engine (what predict runs), one table at a time, queries in chunks of 3.  For regression it
    # standardizes the context targets and maps the output back: the authors' forward on standardized y.
    engine = TabSwiftEngine(net, chunk_size=3)
    for b in range(X.shape[0]):
        cache = engine.encode_context(X[b, :N_SUPPORT], y[b], task, n_classes=n_classes)
        got = engine.predict(X[b, N_SUPPORT:], cache).predictions.double()
        if regression:
            mean, std = y[b].double().mean(), y[b].double().std(unbiased=False)
            want = authors_forward(released.module, X[b:b + 1], ((y[b:b + 1] - mean) / std), True)[0] * std + mean
        else:
            want = expected[b]
        assert torch.allclose(got, want, atol=1e-5 * max(1.0, float(want.abs().max())), rtol=0), \
            (b, (got - want).abs().max())


# ---- damaged files are refused, naming the tensor ------------------------------------------------------------------
def test_renamed_tensor_is_named(tmp_path):
    def rename(state):
        state["icl_predictor.tf_icl.blocks.1.attn.gate_proj.weight"] = state.pop(
            "icl_predictor.tf_icl.blocks.1.attn.attn_gate.weight")

    with pytest.raises(ReleasedCheckpointError) as err:
        convert(write_authors_ckpt(tmp_path / "swift.ckpt", edit=rename), f"{tmp_path}/out/")
    message = str(err.value)
    assert "1 released tensors with no place in the network: ['icl_predictor.tf_icl.blocks.1.attn.gate_proj.weight']" \
        in message
    assert "1 tensors the network needs are missing from the file: " \
           "['icl_predictor.tf_icl.blocks.1.attn.attn_gate.weight']" in message
    assert not (tmp_path / "out").exists()


def test_misshaped_tensor_is_named(tmp_path):
    def cut(state):
        key = "icl_predictor.tf_icl.blocks.1.linear1.weight"
        state[key] = state[key][:7]

    with pytest.raises(ReleasedCheckpointError, match=r"'icl_predictor\.tf_icl\.blocks\.1\.linear1\.weight' has shape "
                                                      r"\(7, 32\).*needs \(64, 32\)"):
        convert(write_authors_ckpt(tmp_path / "swift.ckpt", edit=cut), f"{tmp_path}/out/")


def test_config_the_network_cannot_compute_is_refused(tmp_path):
    src = tmp_path / "swift.ckpt"
    state = authors_module(SMALL_CONFIG).state_dict()
    for bad, match in (({"use_elementwise_gate": False, "use_headwise_gate": True}, "use_headwise_gate"),
                       ({"row_num_cls": 2}, "has shape"),  # d = 2 x 32: no tensor fits
                       ({"proj_dim": 11}, "proj_dim"),
                       ({"new_knob": 1}, r"does not know \['new_knob'\]")):
        torch.save({"config": {**SMALL_CONFIG, **bad}, "state_dict": state}, src)
        with pytest.raises(ReleasedCheckpointError, match=match):
            convert(src, f"{tmp_path}/out/")


def test_missing_config_keys_take_the_authors_defaults(tmp_path):
    """``row_num_cls`` and ``proj_dim`` are used: a config without ``row_num_cls`` means the authors' default
    of 4 CLS tokens (d = 4 x embed_dim), so a d = 32 file built with row_num_cls=1 no longer fits."""
    cfg = {k: v for k, v in SMALL_CONFIG.items() if k != "row_num_cls"}
    src = tmp_path / "swift.ckpt"
    torch.save({"config": cfg, "state_dict": authors_module(SMALL_CONFIG).state_dict()}, src)
    with pytest.raises(ReleasedCheckpointError, match="d_model=128"):
        convert(src, f"{tmp_path}/out/")
    cfg = {**cfg, "embed_dim": 8}  # 8 x 4 CLS tokens = the same d = 32: the authors' module builds it too
    torch.save({"config": cfg, "state_dict": authors_module(SMALL_CONFIG).state_dict()}, src)
    assert load_checkpoint(convert(src, f"{tmp_path}/out/")).config.d_model == 32
    tabswift_authors()[0](**cfg).load_state_dict(authors_module(SMALL_CONFIG).state_dict())


def test_class_encoding_is_the_released_scalar(tmp_path):
    """The one architectural difference from our default: the class id enters as a float through
    Linear(1, d), so its embedding is linear in the id (a lookup table would need C_max rows)."""
    net, _ = released_to_network(write_authors_ckpt(tmp_path / "swift.ckpt"))
    assert tuple(net.label_encoders.classes.weight.shape) == (SMALL_CONFIG["embed_dim"], 1)
    e = net.label_encoders(torch.tensor([[0.0, 1.0, 2.0]]), CLASSIFICATION)[0]
    assert torch.allclose(e[2] - e[1], e[1] - e[0], atol=1e-6)


# ---- safe loading ------------------------------------------------------------------------------------------
class RunsCodeWhenUnpickled:
    """Unpickling this object calls exec(...): what a malicious checkpoint would do."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('x')",)


def test_pickle_that_would_run_code_is_refused(tmp_path):
    marker = tmp_path / "code_ran"
    src = tmp_path / "evil.ckpt"
    torch.save({"config": dict(SMALL_CONFIG), "state_dict": {}, "extra": RunsCodeWhenUnpickled(str(marker))}, src)
    with pytest.raises(ReleasedCheckpointError, match="arbitrary unpickling") as err:
        convert(src, f"{tmp_path}/out/")
    assert "'exec'" in str(err.value)  # names what the file wanted to run
    assert not marker.exists(), "the file's code ran while loading"
    assert not (tmp_path / "out").exists()


def test_console_command_and_convert_once(tmp_path, monkeypatch, capsys):
    src = write_authors_ckpt(tmp_path / "swift.ckpt")
    assert main([str(src), str(tmp_path / "out") + "/"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "swift")
    assert resolve_checkpoint(tmp_path / "out") == tmp_path / "out" / "swift"  # the directory is enough
    assert main([str(tmp_path / "missing.ckpt"), str(tmp_path / "o2") + "/"]) == 1

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    first = convert_cached(src)
    stamp = first.with_suffix(".safetensors").stat().st_mtime_ns
    assert resolve_checkpoint(src) == first
    assert first.with_suffix(".safetensors").stat().st_mtime_ns == stamp  # converted once, then reused


# ---- through AutoGluon ---------------------------------------------------------------------------------------
def _binary_frame(n=160, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                       "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n))})
    df["y"] = np.where(df["a"] + (df["c"] == "x") > 0.3, "pos", "neg")
    return df


def test_released_weights_predict_through_autogluon(tmp_path, monkeypatch):
    from autogluon.tabular import TabularPredictor

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    src = write_authors_ckpt(tmp_path / "swift.ckpt")
    df = _binary_frame()
    hp = {"n_estimators": 2, "max_context_rows": 256, "fine_tune": False}  # the weights must be the file's
    predictor = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        df.iloc[:120], hyperparameters={"TABSWIFT": {**hp, "checkpoint_path": str(src)}},
        raise_on_model_failure=True, num_cpus=1)
    proba = predictor.predict_proba(df.iloc[120:])
    assert proba.shape == (40, 2) and np.allclose(proba.sum(1), 1.0) and proba.notna().all().all()
    net = predictor._trainer.load_model("TabSwift").model.network
    assert net.config.label_encoding == "scalar" and net.config.n_layers == 2
    converted = load_checkpoint(resolve_checkpoint(src))
    assert all(torch.equal(a, b) for a, b in zip(net.state_dict().values(), converted.state_dict().values()))

    # the environment variable is read the same way
    monkeypatch.setenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", str(src))
    p2 = TabularPredictor(label="y", path=str(tmp_path / "ag2"), verbosity=0).fit(
        df.iloc[:120], hyperparameters={"TABSWIFT": hp}, raise_on_model_failure=True, num_cpus=1)
    assert np.allclose(p2.predict_proba(df.iloc[120:]).to_numpy(), proba.to_numpy())


def _logged_fit(caplog, path, train, tuning, hp, **fit_kw):
    """A TabularPredictor fit at verbosity 2 whose log lines land in ``caplog``."""
    from autogluon.tabular import TabularPredictor

    ag_logger = logging.getLogger("autogluon")  # does not propagate to the root logger caplog listens on
    ag_logger.addHandler(caplog.handler)
    try:
        with caplog.at_level(logging.INFO, logger="autogluon"):
            return TabularPredictor(label="y", path=str(path), verbosity=2).fit(
                train, tuning_data=tuning, hyperparameters={"TABSWIFT": hp}, raise_on_model_failure=True,
                num_cpus=1, **fit_kw)
    finally:
        ag_logger.removeHandler(caplog.handler)


@pytest.mark.parametrize("tau", [0.05, "auto"])
def test_tau_on_released_weights_trains_exit_heads_on_the_table(tmp_path, monkeypatch, caplog, tau):
    """The release has no exit heads: with tau set the fit adds fresh ones and trains them on the user's rows
    with the backbone frozen (the released weights stay exactly as converted), then uses them -- an explicit
    tau is checked on validation (tau_max_loss=1 accepts any loss here, so it is kept), "auto" chooses among
    the candidates (all accepted: the lowest, 0.5, wins)."""
    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    src = write_authors_ckpt(tmp_path / "swift.ckpt")
    df = _binary_frame(160)
    hp = {"n_estimators": 1, "checkpoint_path": str(src), "tau": tau, "tau_max_loss": 1.0, "fine_tune": False,
          "fine_tune_exit_steps": 3, "fine_tune_episodes_per_step": 1, "fine_tune_rows": 64}
    predictor = _logged_fit(caplog, tmp_path / "ag", df.iloc[:90], df.iloc[90:120], hp)
    assert "training them on this table with the backbone frozen" in caplog.text
    assert "exit heads trained on this table (3 steps" in caplog.text
    model = predictor._trainer.load_model("TabSwift")  # what was saved: the trained heads came back with it
    s = model._fit_summary
    assert s["exit_retrain_steps"] == 3 and s["exit_heads"] == "trained on this table"
    assert "early_exit_off" not in s
    net = model.model.network
    assert net.n_exit_layers == SMALL_CONFIG["icl_num_blocks"] - 1 and not net.exit_heads_stale
    released_state = load_checkpoint(resolve_checkpoint(src)).state_dict()
    assert all(torch.equal(v, net.state_dict()[k]) for k, v in released_state.items()), "the backbone changed"
    expected_tau = 0.05 if tau == 0.05 else 0.5
    assert model.model.tau == expected_tau and model.params_trained["tau"] == expected_tau
    assert model.get_info()["tabswift_early_exit"]["tau"] == expected_tau
    if tau == "auto":
        assert [row[0] for row in s["tau_table"]][-1] == 0.5  # chosen on validation, every candidate tried
    else:  # the heads decide exits: at tau=0.05 queries leave after block 1 of 2
        model.predict_proba(predictor.transform_features(df.iloc[120:].drop(columns="y")))
        assert model.model.last_mean_exit_layer < SMALL_CONFIG["icl_num_blocks"]


@pytest.mark.parametrize("tau", [0.9, "auto"])
def test_tau_on_released_weights_without_exit_head_training_declines_and_says_why(tmp_path, monkeypatch, caplog,
                                                                                  tau):
    """fine_tune_exit_steps=0 (the same path as a time limit that leaves no time to train them): the fit runs
    without early exit -- predictions equal those without tau, no heads are saved -- and the log and the
    model's info say why."""
    from autogluon.tabular import TabularPredictor

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    src = write_authors_ckpt(tmp_path / "swift.ckpt")
    df = _binary_frame(120)
    hp = {"n_estimators": 1, "checkpoint_path": str(src), "fine_tune": False}
    predictor = _logged_fit(caplog, tmp_path / "ag", df.iloc[:90], df.iloc[90:105],
                            {**hp, "tau": tau, "fine_tune_exit_steps": 0})
    reason = "the checkpoint has no exit heads and fine_tune_exit_steps=0"
    assert f"early exit turned off (tau={tau!r} not used)" in caplog.text and reason in caplog.text
    model = predictor._trainer.load_model("TabSwift")
    assert model.model.tau is None and model.params_trained["tau"] is None
    assert model.get_info()["tabswift_early_exit"] == {"tau": None, "exit_heads": "dropped", "early_exit_off": reason}
    assert model.model.network.n_exit_layers == 0
    plain = TabularPredictor(label="y", path=str(tmp_path / "plain"), verbosity=0).fit(
        df.iloc[:90], tuning_data=df.iloc[90:105], hyperparameters={"TABSWIFT": hp}, raise_on_model_failure=True,
        num_cpus=1)
    assert np.allclose(predictor.predict_proba(df.iloc[105:]), plain.predict_proba(df.iloc[105:]))


# ---- the hub path ------------------------------------------------------------------------------------------
def _prefill_hub_cache(hub_cache: Path, src: Path, repo_id: str, filename: str) -> Path:
    """Lay ``src`` out the way huggingface_hub caches a downloaded file: ``models--<org>--<name>/`` with the
    content under ``blobs/<sha256>``, ``snapshots/<commit>/<filename>`` linking to it, ``refs/main`` naming
    the commit."""
    repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    commit = hashlib.sha1(b"a commit").hexdigest()
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / digest).write_bytes(src.read_bytes())
    (repo / "snapshots" / commit).mkdir(parents=True)
    (repo / "snapshots" / commit / filename).symlink_to(Path("..") / ".." / "blobs" / digest)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return repo


def test_hub_offline_from_a_prefilled_cache_downloads_converts_fits_and_predicts(tmp_path, monkeypatch):
    """checkpoint_path="hub" as a user without internet runs it: HF_HUB_OFFLINE=1 and the hub's local cache
    already holding swift.ckpt.  Any network use would fail (the endpoint is a closed local port)."""
    import huggingface_hub
    from autogluon.tabular import TabularPredictor
    from huggingface_hub import constants

    from autogluon_maya.tabswift.checkpoints_io.hub import FILENAME, REPO_ID

    hf_home = tmp_path / "hf"
    src = write_authors_ckpt(tmp_path / "swift.ckpt", seed=3)
    repo = _prefill_hub_cache(hf_home / "hub", src, REPO_ID, FILENAME)
    monkeypatch.setenv("HF_HOME", str(hf_home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads HF_HOME / HF_HUB_OFFLINE when it is first imported: set what it derived from them
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_home / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    cached = huggingface_hub.scan_cache_dir(hf_home / "hub")
    assert [r.repo_id for r in cached.repos] == [REPO_ID]  # the layout is one huggingface_hub recognizes

    df = _binary_frame()
    predictor = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        df.iloc[:120], hyperparameters={"TABSWIFT": {"n_estimators": 2, "checkpoint_path": "hub", "fine_tune": False}},
        raise_on_model_failure=True, num_cpus=1)
    proba = predictor.predict_proba(df.iloc[120:])
    assert proba.shape == (40, 2) and np.allclose(proba.sum(1), 1.0)

    converted = tmp_path / "cache" / "tabswift" / "hub" / "swift"
    source = read_checkpoint_info(converted)["metadata"]["source"]
    assert source["sha256"] == hashlib.sha256(src.read_bytes()).hexdigest()  # the cached file, converted
    # the fit loaded the converted weights (its record names that file and digest); they are the authors' own.
    # The model itself may hold no network: random weights can lose to the class prior, and a model that
    # predicts the prior drops its network
    weights = predictor._trainer.load_model("TabSwift").get_info()["tabswift_weights"]
    assert weights["sha256"] == read_checkpoint_info(converted)["sha256"]
    assert Path(weights["file"]) == checkpoint_paths(converted)[0]
    net = load_checkpoint(converted)
    expected = authors_module(SMALL_CONFIG, seed=3).state_dict()
    assert torch.equal(net.blocks[1].gate.weight, expected["icl_predictor.tf_icl.blocks.1.attn.attn_gate.weight"])
    assert sorted(p.name for p in (repo / "blobs").iterdir()) == [source["sha256"]]  # nothing else was fetched


@pytest.mark.parametrize("case", ["HF_HUB_OFFLINE", "refused", "silent"])
def test_hub_fails_fast_when_offline(tmp_path, monkeypatch, case):
    """Offline flag with an empty cache; nothing listening; a server that accepts connections but never
    answers (the case huggingface_hub itself would retry with back-off for ~30 s)."""
    import socket

    from huggingface_hub import constants

    from autogluon_maya.tabswift.checkpoints_io.hub import HubUnavailableError

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty hub cache
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setenv("AUTOGLUON_MAYA_HUB_TIMEOUT", "1")
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(4)  # completes TCP handshakes, never reads or answers
    if case == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
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
    from huggingface_hub import constants

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")  # unreachable: any network use would fail
    target = convert(write_authors_ckpt(tmp_path / "swift.ckpt"), tmp_path / "cache" / "tabswift" / "hub" / "swift")
    assert resolve_checkpoint("hub") == target


# ---- checkpoint_path="auto" (the default) --------------------------------------------------------------------------
def _sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("case", ["HF_HUB_OFFLINE", "downloads_off", "closed_port", "no_huggingface_hub"])
def test_auto_falls_back_to_the_shipped_weights_within_seconds(nothing_cached, monkeypatch, case):
    import sys

    from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
    from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights

    expected = {"HF_HUB_OFFLINE": "HF_HUB_OFFLINE is set and LAMDA-Tabular/TabSwift/swift.ckpt is not in the local "
                                  "Hugging Face hub cache",
                "downloads_off": "LAMDA-Tabular/TabSwift/swift.ckpt is not on this machine; run "
                                 "`autogluon-maya-prefetch`",
                "closed_port": f"the model hub {CLOSED_PORT} is unreachable",
                "no_huggingface_hub": "huggingface_hub is not installed"}[case]
    if case == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    elif case == "downloads_off":
        monkeypatch.setenv("AUTOGLUON_MAYA_HUB_DOWNLOAD", "0")
    elif case == "no_huggingface_hub":
        monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # `import huggingface_hub` fails as if absent
    t0 = time.time()
    choice = choose_weights("auto")
    assert time.time() - t0 < 5
    assert (choice.path, choice.source, choice.fallback) == (SHIPPED_CHECKPOINT, "shipped", True)
    assert choice.reason.startswith("the authors' released weights are not available (") and expected in choice.reason
    record = choice.record()
    assert record["sha256"] == _sha256(SHIPPED_CHECKPOINT.with_suffix(".safetensors"))
    assert (record["source"], record["requested"]) == ("shipped", "auto")


class DeadHub:
    """A local port that accepts connections, counts them and hangs up without answering: a hub that is
    there but does not serve (the probe fails at once, and every attempt is seen)."""

    def __init__(self):
        import socket

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.connections += 1
            conn.close()

    def close(self):
        import socket

        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)


def test_bagged_auto_fit_with_downloads_off_never_asks_the_hub_and_records_the_shipped_weights(
        nothing_cached, monkeypatch, caplog, tmp_path):
    """A 2-fold bag fits three models (two folds, then refit_folds' model on all rows), and refit_full one more:
    "auto" with nothing on this machine and downloads switched off takes the shipped weights in each without a
    single connection to the hub (a listening port that counts them), the refits by name.  The log says which
    weights and why; the kept models' info records source, sha256 and the decision they repeat."""
    from huggingface_hub import constants

    from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT

    monkeypatch.setenv("AUTOGLUON_MAYA_HUB_DOWNLOAD", "0")
    hub = DeadHub()
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    df = _binary_frame(160)
    try:
        predictor = _logged_fit(caplog, tmp_path / "ag", df, None, {"n_estimators": 1, "max_context_rows": 64},
                                num_bag_folds=2)
        predictor.refit_full()  # one more model, from the kept one's hyperparameters and params_trained
    finally:
        hub.close()
    assert hub.connections == 0
    absent = "checkpoint_path='auto': the authors' released weights are not available (LAMDA-Tabular/TabSwift/" \
             "swift.ckpt is not on this machine"
    assert caplog.text.count("TabSwift weights: shipped") == 3
    assert caplog.text.count(absent) == 3  # the first fold, the second, the refit (repeating)
    children = predictor.model_info("TabSwift_BAG_L1")["children_info"]
    (child,) = children.values()
    weights = child["tabswift_weights"]
    assert weights["source"] == "shipped" and weights["requested"] == "shipped"
    assert weights["sha256"] == _sha256(SHIPPED_CHECKPOINT.with_suffix(".safetensors"))
    assert weights["repeats"].startswith(absent)
    assert child["hyperparameters"]["checkpoint_path"] == "shipped"  # given to it by name
    (full,) = predictor.model_info("TabSwift_BAG_L1_FULL")["children_info"].values()
    assert full["hyperparameters"]["checkpoint_path"] == "shipped"  # and passed on by name
    assert full["tabswift_weights"]["repeats"].startswith(absent)


def test_auto_uses_the_released_weights_in_the_local_hub_cache(nothing_cached, monkeypatch, caplog, tmp_path):
    """The hub's local cache holds swift.ckpt (a stand-in written by the authors' module); the hub itself is a
    closed port and HF_HUB_OFFLINE is not set, so the cache must be read before any network use.  "auto"
    converts and uses it, says so, and records both digests; afterwards the converted copy is used."""
    from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
    from autogluon_maya.tabswift.checkpoints_io.hub import FILENAME, REPO_ID
    from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights, forget_auto_choice

    src = write_authors_ckpt(tmp_path / "swift.ckpt", seed=5)
    _prefill_hub_cache(nothing_cached, src, REPO_ID, FILENAME)
    df = _binary_frame(120)
    predictor = _logged_fit(caplog, tmp_path / "ag", df.iloc[:90], df.iloc[90:], {"n_estimators": 1, "fine_tune": False})
    assert ("TabSwift weights: released" in caplog.text and "checkpoint_path='auto': the authors' released weights: "
            "found in the local Hugging Face hub cache" in caplog.text)
    model = predictor._trainer.load_model("TabSwift")
    converted = tmp_path / "cache" / "tabswift" / "hub" / "swift"
    weights = model.get_info()["tabswift_weights"]
    assert (weights["source"], weights["requested"]) == ("released", "auto")
    assert weights["sha256"] == _sha256(converted.with_suffix(".safetensors"))
    assert weights["converted_from"] == {"file": "swift.ckpt", "sha256": _sha256(src)}
    assert model.params_trained["checkpoint_path"] == "hub"  # a refit loads the same weights
    expected = authors_module(SMALL_CONFIG, seed=5).state_dict()
    assert torch.equal(model.model.network.blocks[0].gate.weight,
                       expected["icl_predictor.tf_icl.blocks.0.attn.attn_gate.weight"])

    again = choose_weights("auto")  # the process's first answer, kept
    assert (again.path, again.source) == (converted, "released") and "hub cache" in again.reason
    forget_auto_choice()  # as a later process: the converted copy
    again = choose_weights("auto")
    assert (again.path, again.source) == (converted, "released") and "converted copy in" in again.reason
    # the explicit choices stay explicit; None is the shipped checkpoint
    assert choose_weights("shipped").path == SHIPPED_CHECKPOINT == choose_weights(None).path
    assert choose_weights("hub").path == converted
    # the environment variable replaces "auto" and None, not an explicit choice
    monkeypatch.setenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", "shipped")
    assert choose_weights("auto").path == SHIPPED_CHECKPOINT == choose_weights(None).path
    assert choose_weights("hub").path == converted


# ---- early exit on the released backbone (stage 3) --------------------------------------------------------------
def test_stage3_adds_exit_heads_to_a_converted_release(tmp_path):
    import json

    from autogluon_maya.pretraining.config import PretrainConfig
    from autogluon_maya.pretraining.trainer import train
    from autogluon_maya.tabswift.config import TabSwiftConfig

    converted = convert(write_authors_ckpt(tmp_path / "swift.ckpt"), f"{tmp_path}/conv/")
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
    X, y = _table(5, 6)
    with torch.no_grad():  # the final head still computes the release's output; the exit path runs
        out = net(X[:, :N_SUPPORT], y, X[:, N_SUPPORT:], CLASSIFICATION, return_layers=True)
        expected = authors_forward(authors_module(SMALL_CONFIG), X, y, False)
        assert torch.allclose(out.prediction.double(), expected, atol=1e-5)
        assert out.exit_logits[0].shape == (2, N_QUERY)
    with pytest.raises(ValueError, match="--model released"):  # the size preset must match the checkpoint
        train(PretrainConfig(**{**run, "model": "tiny", "out_dir": str(tmp_path / "bad")}), progress=False)


def _serve_from(monkeypatch, url: str) -> None:
    """Point huggingface_hub at ``url``, both values it derives from ``HF_ENDPOINT`` when first imported."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")


def test_prefetch_downloads_once_and_auto_then_uses_the_released_weights_offline(nothing_cached, monkeypatch,
                                                                                 tmp_path, capsys):
    """Before, with downloads switched off (an image built ahead of time): "auto" takes the shipped weights and
    asks the hub nothing.  ``autogluon-maya-prefetch`` downloads swift.ckpt (a local hub serves a stand-in written
    by the authors' module) in its own call and converts it; the same process's next "auto" uses it, and so does
    one whose hub is then gone."""
    from autogluon_maya import prefetch_weights
    from autogluon_maya.tabswift.checkpoints_io.choice import prefetch_main as main
    from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights, forget_auto_choice

    monkeypatch.setenv("AUTOGLUON_MAYA_HUB_DOWNLOAD", "0")
    src = write_authors_ckpt(tmp_path / "swift.ckpt", seed=4)
    hub = LoopbackHub(src.read_bytes())
    _serve_from(monkeypatch, hub.url)
    try:
        before = choose_weights("auto")
        asked_before = hub.requests()
        assert main([]) == 0
        converted = Path(capsys.readouterr().out.strip().splitlines()[-1])
        after = choose_weights("auto")
        asked = hub.requests()
        assert prefetch_weights() == converted  # already there: no second download
    finally:
        hub.stop()
    assert before.source == "shipped" and asked_before == 0
    assert asked > 0 and hub.requests() == asked
    assert (after.path, after.source) == (converted, "released") and "converted copy in" in after.reason
    assert read_checkpoint_info(converted)["metadata"]["source"]["sha256"] == _sha256(src)
    forget_auto_choice()  # a later process: the hub is gone, the converted copy serves
    assert choose_weights("auto").path == converted


def test_auto_keeps_its_first_answer_for_the_process(nothing_cached, monkeypatch, tmp_path):
    """The released file lands in the hub's local cache after a first "auto" chose the shipped weights (another
    process fetched it): the rest of this process (a bag's next folds) still takes the shipped ones, and a
    prefetch in this process makes "auto" look again."""
    from autogluon_maya.tabswift.checkpoints_io.hub import FILENAME, REPO_ID
    from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights, prefetch_weights

    first = choose_weights("auto")
    _prefill_hub_cache(nothing_cached, write_authors_ckpt(tmp_path / "swift.ckpt"), REPO_ID, FILENAME)
    second = choose_weights("auto")
    assert first.source == second.source == "shipped"
    prefetch_weights()  # converts the cached file; no network needed
    assert choose_weights("auto").source == "released"


@pytest.mark.parametrize("how", ["download", "hub_cache"])
def test_a_released_file_that_is_not_the_pinned_one_is_refused(nothing_cached, monkeypatch, tmp_path, how):
    """With a sha256 pinned, a downloaded or cached swift.ckpt with other content is never converted: "hub" fails
    naming both digests, "auto" falls back to the shipped weights; the pinned file itself converts."""
    from autogluon_maya.tabswift.checkpoints_io import hub as hub_module
    from autogluon_maya.tabswift.checkpoints_io.hub import FILENAME, REPO_ID, HubUnavailableError
    from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights, forget_auto_choice

    src = write_authors_ckpt(tmp_path / "swift.ckpt", seed=6)
    changed = tmp_path / "changed" / "swift.ckpt"
    changed.parent.mkdir()
    changed.write_bytes(src.read_bytes() + b"\0")
    monkeypatch.setattr(hub_module, "RELEASED_SHA256", _sha256(src))
    server = None
    if how == "download":
        server = LoopbackHub(changed.read_bytes())
        _serve_from(monkeypatch, server.url)
    else:
        _prefill_hub_cache(nothing_cached, changed, REPO_ID, FILENAME)
    refused = f"has sha256 {_sha256(changed)}, not the pinned {_sha256(src)}"
    try:
        if how == "download":
            with pytest.raises(HubUnavailableError, match=refused):
                resolve_checkpoint("hub")
        else:  # "hub" passes over the refused cached file to download the pinned one: here the hub is closed
            with pytest.raises(HubUnavailableError, match="unreachable"):
                resolve_checkpoint("hub")
        auto = choose_weights("auto")
        assert auto.source == "shipped"
        assert how == "download" or refused in auto.reason, auto.reason
    finally:
        if server is not None:
            server.stop()
    hub_folder = tmp_path / "cache" / "tabswift" / "hub"  # (the lock file of the download may be there)
    assert not hub_folder.exists() or not [p for p in hub_folder.iterdir() if not p.name.endswith(".lock")]
    monkeypatch.setenv("AUTOGLUON_MAYA_RELEASED_SHA256", _sha256(changed))  # a user pins the file they audited
    forget_auto_choice()  # the refused file stayed in the hub's local cache: pinned now, it converts
    chosen = choose_weights("auto")
    assert chosen.source == "released", chosen.reason
    assert read_checkpoint_info(chosen.path)["metadata"]["source"]["sha256"] == _sha256(changed)
