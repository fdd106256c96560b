"""Tiny and wide tables with the shipped checkpoint.

- Tiny: 24 training rows (12 per class) of a real binary table must beat the majority rate, and a
  network that prefers class id 0 must predict exactly what the unbiased one does: the balanced class
  shifts cancel such a preference, shifts drawn at random did not (ensemble.py docstring).
- Wide: 57 informative + 400 noise columns must score within 5 points of the informative columns alone
  (PCA to F_max did not: 0.68-0.71 vs 0.86-0.88).
"""

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.ensemble import TabSwiftEnsemble, plan_members
from autogluon_maya.tabswift.network import CLASSIFICATION
from autogluon_maya.tabswift.preprocessing import screen_columns
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint


@pytest.fixture(scope="module")
def shipped():
    return load_checkpoint(SHIPPED_CHECKPOINT)


def _xy(load_dataset, name):
    df, meta = load_dataset(name)
    y = pd.factorize(df.pop(meta["target"]), sort=True)[0]
    return df, y


# ---- bookkeeping ------------------------------------------------------------------------------------
@pytest.mark.parametrize("n_estimators,n_classes", [(8, 2), (6, 3), (16, 2), (5, 4)])
def test_class_shifts_are_balanced(n_estimators, n_classes):
    for seed in range(20):
        members = plan_members(n_estimators, 9, n_classes, ("none", "power"), np.random.default_rng(seed))
        pairs = [(m.permutation, m.shift) for m in members[::2]]
        counts = np.bincount([s for _, s in pairs], minlength=n_classes)
        assert counts.max() - counts.min() <= 1, (seed, counts)
        assert len(set(pairs)) == len(pairs)  # distinct (permutation, shift) pairs


def test_wide_tables_give_each_member_its_own_subset_of_at_most_f_max_columns():
    members = plan_members(8, 30, 2, ("none", "power"), np.random.default_rng(0), max_features=12)
    subsets = {frozenset(m.permutation) for m in members}
    assert all(len(m.permutation) == 12 == len(set(m.permutation)) for m in members)
    assert len(subsets) == 4  # 4 (columns, shift) pairs x 2 norms


def test_screening_keeps_the_informative_columns_and_falls_back_to_all():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((300, 40))
    y = (x[:, 3] + x[:, 17] ** 3 + 0.5 * rng.standard_normal(300) > 0).astype(int)
    kept = screen_columns(x, y, classification=True)
    assert {3, 17} <= set(kept[:2].tolist()) and len(kept) < 8
    assert len(screen_columns(rng.standard_normal((300, 40)), y, classification=True)) == 40  # nothing passes
    y_reg = np.exp(x[:, 5]) + 0.1 * rng.standard_normal(300)
    assert screen_columns(x, y_reg, classification=False)[0] == 5


# ---- real tables, shipped checkpoint -----------------------------------------------------------------
def test_24_row_binary_table_beats_the_majority_rate(load_dataset, shipped, one_torch_thread_seeded):
    """Two claims on 16 draws of 12 + 12 rows of qsar_biodeg (majority class 0.66):

    - the ensemble beats the majority rate (measured, 16 draws x 300 queries: 0.731, majority 0.674);
    - a network that prefers class id 0 -- the fault the balanced shifts exist for, seen with an earlier
      checkpoint on contexts smaller than its prior's -- predicts exactly what the unbiased one does.
      Here the preference is a +1 logit on id 0 (one unshifted member then predicts id 0 for ~90 % of the
      queries). With every shift equally often the ensemble adds the same amount to every class's mean
      logit, which the softmax cancels; with shifts drawn at random (as before) a draw with unequal
      counts leans toward one class (label-swap asymmetry 0.14 mean |dp| measured, vs 0.017)."""
    import copy

    X, y = _xy(load_dataset, "qsar_biodeg")
    biased = copy.deepcopy(shipped)
    with torch.no_grad():
        biased.head.cls[-1].bias[0] += 1.0
    accs, majority = [], []
    for seed in range(16):  # mean over draws: one draw of 24 rows is a noisy estimate either way
        rng = np.random.default_rng(seed)
        train = np.concatenate([rng.choice(np.flatnonzero(y == c), 12, replace=False) for c in (0, 1)])
        test = rng.choice(np.setdiff1d(np.arange(len(y)), train), 300, replace=False)
        proba = {}
        for name, net in (("shipped", shipped), ("prefers id 0", biased)):
            ens = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=8, random_state=seed)
            proba[name] = ens.fit(X.iloc[train], y[train], n_classes=2).predict_proba(X.iloc[test])
        gap = float(np.abs(proba["prefers id 0"] - proba["shipped"]).max())
        assert gap < 1e-5, f"draw {seed}: a preference for class id 0 moved the probabilities by {gap:.3f}"
        accs.append(float((proba["shipped"].argmax(1) == y[test]).mean()))
        majority.append(max(y[test].mean(), 1 - y[test].mean()))
    assert np.mean(accs) > np.mean(majority), (np.round(accs, 3), np.mean(majority))


def test_400_noise_columns_cost_at_most_5_points(load_dataset, shipped, one_torch_thread_seeded):
    X, y = _xy(load_dataset, "spambase")  # 57 informative columns
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    train, test = idx[:512], idx[512:912]
    noise = pd.DataFrame(rng.standard_normal((len(y), 400)), columns=[f"noise{i}" for i in range(400)])
    wide = pd.concat([X, noise], axis=1)

    def accuracy(table, **kw):
        ens = TabSwiftEnsemble(shipped, CLASSIFICATION, n_estimators=8, **kw).fit(table.iloc[train], y[train], n_classes=2)
        return float((ens.predict(table.iloc[test]) == y[test]).mean())

    informative, noisy = accuracy(X), accuracy(wide)
    assert noisy >= informative - 0.05, (informative, noisy)
