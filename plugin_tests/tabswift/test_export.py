"""Our checkpoint -> the authors' ``swift.ckpt`` layout (``autogluon_maya.tabswift.checkpoints_io.export``).

The round trip ours -> authors -> ours (through the converter, ``released.convert``) must give back our
network's outputs; the authors' own ``TabSwift`` module (as ``tabarena`` vendors it, the test oracle) must
load the file with strict ``load_state_dict`` and compute the same outputs; what the format can not hold
(a class table off a line, widths the authors' module fixes) is refused with the cause in the message.
The shipped checkpoint is used where trained weights matter: its class table is far from a line, which
is the case the refusal exists for.
"""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
import torch

from autogluon_maya.tabswift.config import TINY
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.checkpoints_io.export import ExportError, export_to_authors, main, to_authors
from autogluon_maya.tabswift.network import CLASSIFICATION, REGRESSION, TabSwiftNetwork
from autogluon_maya.tabswift.checkpoints_io.released import convert
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint, save_checkpoint
from plugin_tests.conftest import tabswift_authors

pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")
N_SUPPORT, N_QUERY = 48, 16


@pytest.fixture(scope="module")
def shipped():
    return load_checkpoint(SHIPPED_CHECKPOINT)


def _table(n_classes, width=7, batch=2, seed=3):
    """x (B, n_support + n_query, width) and y (B, n_support): class ids with every class present, or a
    standardized target (what our engine feeds the network)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, N_SUPPORT + N_QUERY, width, generator=g)
    if n_classes is None:
        return x, torch.randn(batch, N_SUPPORT, generator=g)
    y = torch.randint(0, n_classes, (batch, N_SUPPORT), generator=g)
    y[:, :n_classes] = torch.arange(n_classes)
    return x, y


def _ours(net, x, y, n_classes):
    task = REGRESSION if n_classes is None else CLASSIFICATION
    with torch.no_grad():
        out = net(x[:, :N_SUPPORT], y, x[:, N_SUPPORT:], task).prediction.double()
    return out if n_classes is None else out[..., :n_classes]


def _authors(module, x, y, n_classes):
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # their autocast(device_type="cuda") warns on a CPU-only torch
        out = module(x.clone(), y.float(), return_logits=True, if_regression=n_classes is None)
    return out.squeeze(-1).double() if n_classes is None else out.double()


def _random_network(config, seed=0) -> TabSwiftNetwork:
    net = TabSwiftNetwork(config)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) / max(1, p.shape[-1]) ** 0.5)
    return net.eval()


# ---- the round trip and the authors' module ----------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, None], ids=["binary", "regression"])
def test_round_trip_through_the_converter_reproduces_our_outputs(shipped, tmp_path, n_classes):
    report = export_to_authors(SHIPPED_CHECKPOINT, tmp_path / "swift.ckpt", binary_only=True)
    back = load_checkpoint(convert(report.path, f"{tmp_path}/back/"))
    assert back.config.label_encoding == "scalar" and back.n_exit_layers == 0
    x, y = _table(n_classes)
    want, got = _ours(shipped, x, y, n_classes), _ours(back, x, y, n_classes)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5, rtol=0), (got - want).abs().max()


@pytest.mark.parametrize("n_classes", [2, None], ids=["binary", "regression"])
def test_authors_module_loads_the_file_strictly_and_computes_our_outputs(shipped, tmp_path, n_classes):
    TabSwift = tabswift_authors()[0]
    report = export_to_authors(SHIPPED_CHECKPOINT, tmp_path / "swift.ckpt", binary_only=True)
    ckpt = torch.load(report.path, map_location="cpu", weights_only=True)
    assert set(ckpt) == {"config", "state_dict"}
    module = TabSwift(**ckpt["config"])
    module.load_state_dict(ckpt["state_dict"], strict=True)  # raises on a missing or unexpected key
    x, y = _table(n_classes)
    want, got = _ours(shipped, x, y, n_classes), _authors(module.eval(), x, y, n_classes)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=1e-5, rtol=0), (got - want).abs().max()
    # the early-exit heads have no place there, and the report says so
    assert report.dropped and all(k.startswith(("layer_heads.", "exit_heads.")) for k in report.dropped)
    assert len(report.dropped) == sum(k.startswith(("layer_heads.", "exit_heads.")) for k in shipped.state_dict())


def test_a_converted_release_exports_back_to_the_same_file(tmp_path):
    """Scalar class encoder (what the converter builds from a release): every class count is exact, and
    release -> ours -> release returns the original config and tensors bit for bit (d = 32 written as the
    authors' default split embed_dim x row_num_cls = 8 x 4, which the export keeps)."""
    TabSwift = tabswift_authors()[0]
    config = {"max_classes": 5, "max_dim": 12, "embed_dim": 8, "proj_dim": 12, "col_num_blocks": 3, "col_nhead": 4,
              "col_num_inds": 128, "row_num_blocks": 3, "row_nhead": 8, "row_num_cls": 4, "row_rope_base": 100000.0,
              "icl_num_blocks": 2, "icl_nhead": 4, "ff_factor": 2, "dropout": 0.0, "activation": "gelu",
              "norm_first": True, "use_headwise_gate": False, "use_elementwise_gate": True, "register_tokens": 4}
    module = TabSwift(**config)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) / max(1, p.shape[-1]) ** 0.5)
    torch.save({"config": config, "state_dict": module.state_dict()}, tmp_path / "swift.ckpt")
    ours = convert(tmp_path / "swift.ckpt", f"{tmp_path}/ours/")
    report = export_to_authors(ours, tmp_path / "again.ckpt")
    assert report.class_encoding == "copied" and report.exact_for_multiclass and not report.dropped
    again = torch.load(report.path, map_location="cpu", weights_only=True)
    assert again["config"] == config
    original = module.state_dict()
    assert set(again["state_dict"]) == set(original)
    assert all(torch.equal(again["state_dict"][k], original[k]) for k in original)


def test_a_class_table_on_a_line_is_exact_for_every_class_count(tmp_path):
    net = _random_network(TINY)
    with torch.no_grad():
        a, b = torch.randn(2, TINY.d_model, generator=torch.Generator().manual_seed(5))
        net.label_encoders.classes.weight.copy_(a + torch.arange(TINY.max_classes)[:, None] * b)
    save_checkpoint(net, tmp_path / "lined")
    report = export_to_authors(tmp_path / "lined", f"{tmp_path}/out/")
    assert report.path == tmp_path / "out" / "lined.ckpt"
    assert report.class_encoding == "exact" and report.exact_for_multiclass
    back = load_checkpoint(convert(report.path, f"{tmp_path}/back/"))
    x, y = _table(4, width=5)
    assert torch.allclose(_ours(back, x, y, 4), _ours(net, x, y, 4), atol=1e-5, rtol=0)


# ---- what can not be exported ------------------------------------------------------------------------------
def test_a_class_table_off_a_line_is_refused_naming_the_cause(shipped, tmp_path):
    with pytest.raises(ExportError, match=r"does not lie on a line.*Linear\(1, d\).*two classes only"
                                          r".*binary_only=True") as err:
        export_to_authors(SHIPPED_CHECKPOINT, tmp_path / "swift.ckpt")
    assert "unexplained" in str(err.value)
    assert not (tmp_path / "swift.ckpt").exists()
    # binary_only is what it says: exact for two classes (tests above), not for three
    _, state, report = to_authors(shipped, binary_only=True)
    assert report.class_encoding == "binary only" and not report.exact_for_multiclass
    assert report.class_line_unexplained > 0.5
    module = tabswift_authors()[0](**report.config)
    module.load_state_dict(state, strict=True)
    x, y = _table(3)
    assert (_authors(module.eval(), x, y, 3) - _ours(shipped, x, y, 3)).abs().max() > 1e-2


@pytest.mark.parametrize("change, named", [({"head_hidden_factor": 3}, "head_hidden_factor"),
                                           ({"layer_norm_eps": 1e-6}, "layer_norm_eps")])
def test_widths_the_authors_module_fixes_are_refused(tmp_path, change, named):
    net = _random_network(replace(TINY, label_encoding="scalar", **change))
    with pytest.raises(ExportError, match=named):
        export_to_authors(net, tmp_path / "swift.ckpt")
    assert not (tmp_path / "swift.ckpt").exists()


def test_command_line(tmp_path, capsys):
    assert main([str(SHIPPED_CHECKPOINT), str(tmp_path / "swift.ckpt")]) == 1
    assert "does not lie on a line" in capsys.readouterr().out
    assert main([str(SHIPPED_CHECKPOINT), str(tmp_path / "swift.ckpt"), "--binary-only"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "swift.ckpt")
    assert set(torch.load(tmp_path / "swift.ckpt", weights_only=True)) == {"config", "state_dict"}
