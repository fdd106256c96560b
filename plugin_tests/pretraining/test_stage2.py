"""Stage 2: row counts drawn per batch, a row budget per step, a row-count curriculum,
uninformative columns, one target mode drawn per task -- and resume stays bit-for-bit with all of it."""

import numpy as np
import pytest
import torch

from autogluon_maya.pretraining.config import PretrainConfig
from autogluon_maya.pretraining.data import PriorBatches, TaskShape
from autogluon_maya.tabswift.losses import backbone_loss
from autogluon_maya.pretraining.targets import is_monotone_discretization
from autogluon_maya.pretraining.trainer import STATE_FILE, build_network, train
from autogluon_maya.tabswift.config import TINY

VARIABLE = TaskShape(batch_size=8, rows=256, max_features=12, max_classes=5, min_rows=8, rows_per_batch=512)


def test_rows_vary_per_batch_within_the_range_and_the_row_budget():
    sizes = [VARIABLE.size_of(i, seed=0) for i in range(300)]
    rows = np.array([r for r, _, _ in sizes])
    assert rows.min() >= 8 and rows.max() <= 256
    assert rows.min() < 16 and rows.max() > 128  # log-uniform: both ends of the range are visited
    for r, tasks, support in sizes:
        assert tasks == min(8, max(1, 512 // r))  # short tasks come many to a batch
        assert 2 <= support <= r - 2
    assert min(s for _, _, s in sizes) <= 4  # tiny support sets are in the prior
    assert sizes == [VARIABLE.size_of(i, seed=0) for i in range(300)]  # a function of (seed, index)


def test_row_curriculum_starts_short_and_reaches_the_full_range():
    ramp = TaskShape(rows=256, min_rows=8, ramp_batches=100)
    early = [ramp.size_of(i, 0)[0] for i in range(10)]
    late = [ramp.size_of(i, 0)[0] for i in range(100, 400)]
    ceiling = [8 * 32 ** (i / 100) for i in range(10)]
    assert all(r <= c + 0.5 for r, c in zip(early, ceiling))
    assert max(early) < 16 and max(late) > 128


def test_variable_batches_have_the_drawn_shape_and_unified_targets():
    data = PriorBatches("random_mlp", VARIABLE, seed=3)
    for i in range(6):
        rows, tasks, support = VARIABLE.size_of(i, 3)
        b = data[i]
        assert b["x"].shape == (tasks, rows, 12) and int(b["n_support"]) == support
        for t in range(tasks):
            assert is_monotone_discretization(b["y_reg"][t].numpy(), b["y_cls"][t].numpy())
            assert b["y_cls"][t, :support].unique().numel() == int(b["n_classes"][t])


def test_tabicl_prior_follows_the_drawn_sizes():
    pytest.importorskip("tabicl", reason="the SCM priors need the [pretrain] extra (tabicl>=2.2)")
    shape = TaskShape(batch_size=4, rows=96, max_features=12, max_classes=5, min_rows=12, rows_per_batch=192)
    data = PriorBatches("mix_scm", shape, seed=1)
    for i in range(3):
        rows, tasks, support = shape.size_of(i, 1)
        b = data[i]
        assert b["x"].shape == (tasks, rows, 12) and int(b["n_support"]) == support


def test_noise_columns_are_added_and_keep_the_original_columns():
    clean = PriorBatches("random_mlp", TaskShape(batch_size=6, rows=40, max_features=12, max_classes=5), seed=5)[2]
    noisy_shape = TaskShape(batch_size=6, rows=40, max_features=12, max_classes=5, noise_feature_prob=1.0)
    noisy = PriorBatches("random_mlp", noisy_shape, seed=5)[2]
    assert torch.equal(clean["y_reg"], noisy["y_reg"])  # the same tasks
    assert (clean["n_features"] < 12).all(), "every task must have room for a noise column for this test to mean it"
    for t in range(6):
        d, d2 = int(clean["n_features"][t]), int(noisy["n_features"][t])
        assert d < d2 <= 12  # probability 1: every task got at least one uninformative column
        assert (noisy["x"][t, :, d2:] == 0).all()  # padding stays at the end
        new_cols = [noisy["x"][t, :, j] for j in range(d2)]
        for j in range(d):  # every original column is still there (somewhere: columns are shuffled)
            assert any(torch.equal(clean["x"][t, :, j], c) for c in new_cols)


def test_one_target_mode_is_ce_on_classification_tasks_plus_regression_loss_on_the_others():
    torch.manual_seed(0)
    net = build_network(PretrainConfig(model="tiny", prior="random_mlp")).eval()
    shape = TaskShape(batch_size=8, rows=40, max_features=TINY.max_features, max_classes=TINY.max_classes,
                      one_target_mode=True)
    batch = PriorBatches("random_mlp", shape, seed=0)[1]
    mask = batch["cls_mask"]
    assert 0 < int(mask.sum()) < 8
    sub = lambda rows: {k: (v if v.dim() == 0 else v[rows]) for k, v in batch.items() if k != "cls_mask"}
    with torch.no_grad():
        one = backbone_loss(net, batch)
        cls_part = backbone_loss(net, sub(mask))
        reg_part = backbone_loss(net, sub(~mask))
    assert torch.allclose(one["ce"], cls_part["ce"], atol=1e-6)
    assert torch.allclose(one["mse"] + one["mae"], reg_part["mse"] + reg_part["mae"], atol=1e-6)
    assert torch.allclose(one["loss"], cls_part["ce"] + reg_part["mse"] + reg_part["mae"], atol=1e-6)


def test_stage2_defaults_serve_long_contexts_and_accept_gpu_sized_tasks():
    c = PretrainConfig(stage=2)
    assert c.rows >= 2048 and c.min_rows <= 16 and c.rows_per_step >= c.rows
    assert c.max_prior_features is None  # features up to F_max
    assert PretrainConfig(stage=2, rows=20_000, rows_per_step=40_000).rows == 20_000
    with pytest.raises(ValueError, match="min_rows"):
        PretrainConfig(stage=2, rows=64, min_rows=128)
    with pytest.raises(ValueError, match="target_mode"):
        PretrainConfig(target_mode="neither")
    with pytest.raises(ValueError, match="rows_ramp_steps"):
        PretrainConfig(rows_ramp_steps=10)


STAGE2 = dict(stage=2, model="tiny", prior="random_mlp", rows=64, min_rows=8, rows_per_step=128, batch_size=8,
              micro_batch=4, rows_ramp_steps=4, target_mode="one", noise_feature_prob=0.5, num_workers=0,
              threads=1, log_every=2, checkpoint_every=1000)


def test_stage2_run_resumes_bit_for_bit(tmp_path, one_torch_thread_seeded):
    full = PretrainConfig(out_dir=str(tmp_path / "full"), steps=8, **STAGE2)
    train(full, progress=False)
    cut = dict(out_dir=str(tmp_path / "cut"), steps=8, **STAGE2)
    train(PretrainConfig(time_limit=0.0, **cut), progress=False)  # stops after one step
    assert torch.load(tmp_path / "cut" / STATE_FILE, weights_only=True)["counters"]["step"] == 1
    train(PretrainConfig(**cut), progress=False)
    a = torch.load(tmp_path / "full" / STATE_FILE, weights_only=True)
    b = torch.load(tmp_path / "cut" / STATE_FILE, weights_only=True)
    assert a["counters"]["tasks_seen"] == b["counters"]["tasks_seen"]
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    import csv
    rows = list(csv.DictReader(open(tmp_path / "full" / "metrics.csv")))
    assert len(rows) == 4 and len({r["mean_rows"] for r in rows}) > 1  # task sizes really varied
    # the row budget, not batch_size, set the tasks per step: fewer than 8 * 8 tasks were seen
    assert a["counters"]["tasks_seen"] < 8 * 8
