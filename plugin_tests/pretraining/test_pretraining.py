"""Pretraining pipeline: loss goes down, bit-for-bit resume, unified targets, frozen stage 3."""

import numpy as np
import pytest
import torch

from autogluon_maya.pretraining.config import PretrainConfig
from autogluon_maya.pretraining.data import PriorBatches, TaskShape
from autogluon_maya.tabswift.losses import backbone_loss, masked_logits
from autogluon_maya.pretraining.targets import discretize, is_monotone_discretization
from autogluon_maya.pretraining.trainer import STATE_FILE, train
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint

TINY_RUN = dict(model="tiny", prior="random_mlp", batch_size=4, rows=48, num_workers=0, threads=1,
                log_every=5, checkpoint_every=1000)


def cfg(tmp_path, name, **kw):
    return PretrainConfig(out_dir=str(tmp_path / name), **{**TINY_RUN, **kw})


# ---- unified targets ------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(20))
def test_class_target_is_a_monotone_discretization_with_every_class_in_support(seed):
    rng = np.random.default_rng(seed)
    y = rng.standard_normal(200) ** 3  # skewed, like SCM outputs
    n_support = int(rng.integers(20, 180))
    classes, k = discretize(y, n_support, 10, rng)
    assert 1 <= k <= 10
    assert is_monotone_discretization(y, classes)
    assert set(np.unique(classes[:n_support])) == set(range(k))  # every id shown in the context
    assert set(np.unique(classes)) <= set(range(k))


def test_monotonicity_check_rejects_a_non_monotone_labelling():
    y = np.arange(6.0)
    assert is_monotone_discretization(y, np.array([2, 2, 0, 0, 1, 1]))  # relabelled bins: fine
    assert not is_monotone_discretization(y, np.array([0, 1, 0, 1, 0, 1]))


def test_constant_target_gives_a_single_class():
    classes, k = discretize(np.zeros(50), 25, 10, np.random.default_rng(0))
    assert k == 1 and (classes == 0).all()


def test_batches_are_a_function_of_seed_and_index():
    data = PriorBatches("random_mlp", TaskShape(batch_size=3, rows=32, max_features=12, max_classes=5), seed=7)
    a, b, c = data[4], data[4], data[5]
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(a["x"], c["x"])
    n = int(a["n_support"])
    for task in range(3):  # unified targets on every task of the batch
        assert is_monotone_discretization(a["y_reg"][task].numpy(), a["y_cls"][task].numpy())
        assert a["y_cls"][task, :n].unique().numel() == int(a["n_classes"][task])


def test_a_task_with_a_nan_target_becomes_a_constant_one_class_task():
    from autogluon_maya.pretraining.data import unify

    y = torch.randn(3, 20)
    y[1] = float("nan")  # what tabicl returned for one task of batch 151 (seed 0)
    x = torch.randn(3, 20, 5)
    x[2, 0, 0] = float("inf")
    batch = unify(x, y, torch.tensor([5, 5, 5]), 10, 4, np.random.default_rng(0))
    assert torch.isfinite(batch["y_reg"]).all() and torch.isfinite(batch["x"]).all()
    assert (batch["y_reg"][1] == 0).all() and int(batch["n_classes"][1]) == 1
    assert torch.equal(batch["y_reg"][0], y[0])  # healthy tasks untouched


def test_tabicl_prior_batches_carry_unified_targets():
    pytest.importorskip("tabicl", reason="the SCM priors need the [pretrain] extra (tabicl>=2.2)")
    data = PriorBatches("mix_scm", TaskShape(batch_size=4, rows=64, max_features=12, max_classes=5), seed=0)
    a, b = data[0], data[0]
    assert torch.equal(a["x"], b["x"]) and torch.equal(a["y_cls"], b["y_cls"])  # seeded per index
    assert a["x"].shape == (4, 64, 12)
    for task in range(4):
        d = int(a["n_features"][task])
        assert (a["x"][task, :, d:] == 0).all()  # zero padding beyond the active features
        assert abs(float(a["y_reg"][task].mean())) < 1e-3  # standardized regression target
        assert is_monotone_discretization(a["y_reg"][task].numpy(), a["y_cls"][task].numpy())


def test_logits_beyond_the_task_class_count_are_masked():
    logits = torch.zeros(2, 3, 5)
    masked = masked_logits(logits, torch.tensor([2, 5]))
    p = masked.softmax(-1)
    assert torch.allclose(p[0, :, :2].sum(-1), torch.ones(3)) and (p[0, :, 2:] == 0).all()
    assert torch.allclose(p[1], torch.full((3, 5), 0.2))


# ---- training loop ----------------------------------------------------------------------------------
def test_stage1_lowers_the_loss_on_a_fixed_problem(tmp_path, one_torch_thread_seeded):
    held_out = PriorBatches("random_mlp", TaskShape(batch_size=16, rows=48, max_features=12, max_classes=5),
                            seed=123)[0]
    c = cfg(tmp_path, "run", steps=150, lr=3e-3, export=str(tmp_path / "ckpt"))
    from autogluon_maya.pretraining.trainer import build_network

    with torch.no_grad():
        before = float(backbone_loss(build_network(c).eval(), held_out)["loss"])
    train(c, progress=False)
    with torch.no_grad():
        after = float(backbone_loss(load_checkpoint(tmp_path / "ckpt").eval(), held_out)["loss"])
    assert after < 0.95 * before  # measured 3.11 -> 2.77 (seeded, one thread)
    assert (tmp_path / "run" / "metrics.csv").read_text().count("\n") == 1 + 150 // 5
    assert (tmp_path / "run" / "loss.png").stat().st_size > 1000


def test_resume_is_bit_for_bit(tmp_path, one_torch_thread_seeded):
    full = cfg(tmp_path, "full", steps=6)
    train(full, progress=False)
    # same run interrupted after its first step (time_limit=0 stops after one step), then resumed
    train(cfg(tmp_path, "cut", steps=6, time_limit=0.0), progress=False)
    first = torch.load(tmp_path / "cut" / STATE_FILE, weights_only=True)
    assert first["counters"]["step"] == 1
    train(cfg(tmp_path, "cut", steps=6), progress=False)
    a = torch.load(tmp_path / "full" / STATE_FILE, weights_only=True)
    b = torch.load(tmp_path / "cut" / STATE_FILE, weights_only=True)
    assert b["counters"]["step"] == 6
    for k in a["model"]:
        assert torch.equal(a["model"][k], b["model"][k]), k
    assert a["scheduler"] == b["scheduler"]
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    assert all(torch.equal(sa[i]["exp_avg_sq"], sb[i]["exp_avg_sq"]) for i in sa)


def test_resume_refuses_a_different_run(tmp_path, one_torch_thread_seeded):
    train(cfg(tmp_path, "run", steps=1), progress=False)
    with pytest.raises(ValueError, match="different run"):
        train(cfg(tmp_path, "run", steps=1, lr=0.5), progress=False)


def test_stage3_trains_exit_heads_and_leaves_the_backbone_unchanged(tmp_path, one_torch_thread_seeded):
    train(cfg(tmp_path, "s1", steps=3, export=str(tmp_path / "s1ckpt")), progress=False)
    before = load_checkpoint(tmp_path / "s1ckpt").state_dict()
    train(cfg(tmp_path, "s3", stage=3, steps=4, lr=1e-2, init_from=str(tmp_path / "s1ckpt"),
              export=str(tmp_path / "s3ckpt")), progress=False)
    after = load_checkpoint(tmp_path / "s3ckpt").state_dict()
    exit_keys = [k for k in before if k.startswith(("layer_heads", "exit_heads"))]
    assert exit_keys
    for k in before:
        if k in exit_keys:
            continue
        assert torch.equal(before[k], after[k]), f"backbone weight {k} changed in stage 3"
    assert any(not torch.equal(before[k], after[k]) for k in exit_keys)


def test_cli_types_and_stage_defaults():
    from autogluon_maya.pretraining.cli import parse_args

    a = parse_args(["--stage", "2", "--steps", "5", "--lr", "1e-3", "--time-limit", "9.5"])
    assert (a.stage, a.steps, a.lr, a.time_limit) == (2, 5, 1e-3, 9.5)
    c = PretrainConfig(stage=2)
    assert c.rows > PretrainConfig(stage=1).rows  # stage 2 = longer contexts
    with pytest.raises(ValueError, match="multiple"):
        PretrainConfig(batch_size=6, micro_batch=4)


@pytest.mark.slow
def test_ray_train_two_cpu_workers(tmp_path):
    pytest.importorskip("ray.train")
    from autogluon_maya.pretraining.distributed import train_with_ray

    c = cfg(tmp_path, "ray", steps=3)
    result = train_with_ray(c, num_workers=2, use_gpu=False, cpus_per_worker=1)
    assert result.error is None
    state = torch.load(tmp_path / "ray" / STATE_FILE, weights_only=True)
    assert state["counters"]["step"] == 3 and state["counters"]["tasks_seen"] == 3 * 4 * 2


def test_narrow_prior_tasks_and_stop_after(tmp_path, one_torch_thread_seeded):
    """max_prior_features < F_max: batches are narrower than F_max and the network pads them;
    stop_after ends the run early at exactly that step, and the run resumes past it later."""
    c = cfg(tmp_path, "narrow", steps=4, max_prior_features=6, stop_after=2)
    train(c, progress=False)
    assert torch.load(tmp_path / "narrow" / STATE_FILE, weights_only=True)["counters"]["step"] == 2
    train(cfg(tmp_path, "narrow", steps=4, max_prior_features=6), progress=False)
    assert torch.load(tmp_path / "narrow" / STATE_FILE, weights_only=True)["counters"]["step"] == 4
    batch = PriorBatches("random_mlp", TaskShape(batch_size=2, rows=16, max_features=6), seed=0)[0]
    assert batch["x"].shape[-1] == 6


def test_curriculum_prior_alternates_random_mlp_and_scm_batches():
    pytest.importorskip("tabicl", reason="the SCM priors need the [pretrain] extra (tabicl>=2.2)")
    from autogluon_maya.pretraining.data import _seed_for, random_mlp_batch

    shape = TaskShape(batch_size=4, rows=32, max_features=10, max_classes=4)
    data = PriorBatches("mix_scm+random_mlp", shape, seed=5)
    easy = random_mlp_batch(shape, np.random.default_rng(_seed_for(5, 2)))
    assert torch.equal(data[2]["x"], easy["x"])  # even index: the random-MLP batch of that index
    assert torch.equal(data[3]["x"], PriorBatches("mix_scm", shape, seed=5)[3]["x"])  # odd: the SCM batch
