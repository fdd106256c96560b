"""TabSwift's preprocessing, checkpoint files and inference ensemble.

Networks are TINY (F_max=12, C_max=5) on one thread.  Where a random network cannot show that
bookkeeping is right (class shifts, the class hierarchy), an oracle replaces the ICL pass: it returns
the label of the nearest context row, so any mislabelled column or group shows up as a wrong argmax.
"""

from __future__ import annotations

import logging
import pickle
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya.tabswift import CLASSIFICATION, REGRESSION, TINY, TabSwiftNetwork
from autogluon_maya.tabswift.ensemble import (Member, TabSwiftEnsemble, class_groups, latin_permutations,
                                              plan_members, shift_labels, stratified_subsample, unshift_columns)
from autogluon_maya.tabswift.preprocessing import RowPreprocessor
from autogluon_maya.tabswift.checkpoints_io.format import checkpoint_paths, load_checkpoint, save_checkpoint


pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")


def mixed_frame(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "num": rng.normal(size=n),
        "skewed": np.where(rng.random(n) < 0.2, np.nan, rng.exponential(size=n) * 1e6),
        "inf": np.where(rng.random(n) < 0.1, np.inf, rng.normal(size=n)),
        "color": rng.choice(["red", "green", "blue", None], size=n),
        "size": pd.Categorical(rng.choice(["S", "M", "L"], size=n), categories=["S", "M", "L"]),
        "const": 7.0,
        "empty": np.nan,
    })


def clusters(n_classes, per_class=4, n_features=3, seed=0):
    """Well-separated class clusters: the nearest context row of a context row is itself."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=20, size=(n_classes, n_features))
    y = np.repeat(np.arange(n_classes), per_class)
    return centers[y] + rng.normal(size=(len(y), n_features)), y


class OracleEnsemble(TabSwiftEnsemble):
    """1-nearest-neighbour in place of the network: label-equivariant, so shifts/groups must cancel."""

    def _pass(self, xc, yc, xq, n_classes, key=()):
        d = ((xq[:, None, :] - xc[None, :, :]) ** 2).sum(-1)
        return 10.0 * np.eye(n_classes or 1)[yc[d.argmin(1)]]


# ---- preprocessing --------------------------------------------------------------------------------

@pytest.mark.parametrize("norm", ["none", "power"])
def test_preprocessor_categorical_missing_and_constants(norm):
    X = mixed_frame()
    pre = RowPreprocessor(norm, max_features=12)
    z = pre.fit_transform(X)
    # num, skewed, inf, missing indicators of skewed/inf, color code, size code; const/empty dropped
    assert z.dtype == np.float32 and z.shape == (40, 7) and np.isfinite(z).all()
    unseen = X.iloc[:3].copy()
    unseen["color"] = ["purple", None, "red"]
    unseen["num"] = [1e30, -np.inf, np.nan]
    assert np.isfinite(pre.transform(unseen)).all()


def test_preprocessor_is_fitted_on_context_only():
    X = mixed_frame()
    pre = RowPreprocessor("power", max_features=12)
    z_ctx = pre.fit_transform(X)
    other = mixed_frame(n=15, seed=5)
    other["num"] *= 1000.0  # very different rows must not move the fitted statistics
    z_other = pre.transform(other)
    np.testing.assert_array_equal(pre.transform(X), z_ctx)
    both = pre.transform(pd.concat([other, X], ignore_index=True))  # row-wise: neighbours do not matter
    np.testing.assert_allclose(both[:15], z_other, atol=1e-6)
    np.testing.assert_allclose(both[15:], z_ctx, atol=1e-6)


def test_preprocessor_pca_above_f_max():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 30)) @ rng.normal(size=(30, 30))
    pre = RowPreprocessor("none", max_features=12)
    z = pre.fit_transform(X)
    assert z.shape == (40, 12) and pre.transform(X[:5]).shape == (5, 12)
    np.testing.assert_allclose(z.std(0), 1.0, atol=1e-4)
    # a context smaller than F_max keeps only the components it can estimate
    assert RowPreprocessor("none", max_features=12).fit_transform(X[:6]).shape == (6, 5)


def test_preprocessor_zero_features_is_a_clear_error():
    with pytest.raises(ValueError, match="zero usable features.*constant or entirely missing"):
        RowPreprocessor().fit(pd.DataFrame({"const": [1.0] * 5, "empty": [np.nan] * 5, "cat": ["a"] * 5}))
    with pytest.raises(ValueError, match="zero usable features.*no columns"):
        RowPreprocessor().fit(pd.DataFrame(index=range(4)))


# ---- checkpoint files -----------------------------------------------------------------------------

def _forward(net):
    g = torch.Generator().manual_seed(3)
    xs, xq = torch.randn(10, 6, generator=g), torch.randn(4, 6, generator=g)
    with torch.no_grad():
        return net(xs, torch.arange(10) % 3, xq, CLASSIFICATION).prediction


def test_checkpoint_round_trip(tmp_path):
    net = TabSwiftNetwork(TINY)
    weights, meta = save_checkpoint(net, tmp_path / "tiny", metadata={"steps": 3})
    assert (weights.name, meta.name) == ("tiny.safetensors", "tiny.json")
    loaded = load_checkpoint(tmp_path / "tiny.safetensors")
    assert loaded.config == TINY and not loaded.training
    assert torch.equal(_forward(loaded), _forward(net.eval()))


def test_checkpoint_missing_and_corrupt(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothere.json"):
        load_checkpoint(tmp_path / "nothere")
    weights, meta = save_checkpoint(TabSwiftNetwork(TINY), tmp_path / "tiny")
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="tiny.safetensors failed its checksum"):
        load_checkpoint(tmp_path / "tiny")
    weights.unlink()
    with pytest.raises(FileNotFoundError, match="tiny.safetensors"):
        load_checkpoint(tmp_path / "tiny")


def _rewrite_config(meta, **changes):
    import json

    info = json.loads(meta.read_text())
    info.update(changes)
    meta.write_text(json.dumps(info))


def test_checkpoint_config_weights_mismatch(tmp_path):
    _, meta = save_checkpoint(TabSwiftNetwork(TINY), tmp_path / "tiny")
    _rewrite_config(meta, config=replace(TINY, d_model=32).to_dict())
    with pytest.raises(ValueError, match="do not match the config.*wrong shapes.*file .*16.* vs config .*32"):
        load_checkpoint(tmp_path / "tiny")
    _rewrite_config(meta, config=replace(TINY, early_exit=False).to_dict())
    with pytest.raises(ValueError, match="unexpected keys.*exit_heads"):
        load_checkpoint(tmp_path / "tiny")
    _rewrite_config(meta, config=replace(TINY, n_layers=4).to_dict())
    with pytest.raises(ValueError, match="missing keys.*blocks.3"):
        load_checkpoint(tmp_path / "tiny")


def test_checkpoint_pickle_is_refused(tmp_path):
    from autogluon_maya.tabswift.checkpoints_io.format import sha256_file

    weights, meta = save_checkpoint(TabSwiftNetwork(TINY), tmp_path / "tiny")
    with open(weights, "wb") as f:  # a pickle renamed .safetensors, with a matching checksum
        pickle.dump({k: v.numpy() for k, v in TabSwiftNetwork(TINY).state_dict().items()}, f)
    _rewrite_config(meta, sha256=sha256_file(weights))
    with pytest.raises(ValueError, match="tiny.safetensors is not a valid safetensors file"):
        load_checkpoint(checkpoint_paths(tmp_path / "tiny.json")[0])


# ---- ensemble bookkeeping --------------------------------------------------------------------------

def test_members_are_seeded_latin_and_shifted():
    sq = latin_permutations(5, np.random.default_rng(0))
    assert all(sorted(r) == list(range(5)) for r in sq) and all(sorted(c) == list(range(5)) for c in sq.T)
    a = plan_members(7, 5, 3, ("none", "power"), np.random.default_rng(1))
    assert a == plan_members(7, 5, 3, ("none", "power"), np.random.default_rng(1)) and len(a) == 7
    assert [m.norm for m in a[:2]] == ["none", "power"]  # each (permutation, shift) under both variants
    assert (a[0].permutation, a[0].shift) == (a[1].permutation, a[1].shift)
    assert len({(m.permutation, m.shift) for m in a}) == 4
    assert len(plan_members(16, 1, 2, ("none", "power"), np.random.default_rng(0))) == 4  # 1 perm x 2 shifts x 2


def test_shift_bookkeeping():
    y = np.array([0, 1, 2, 3])
    shifted = shift_labels(y, 3, 4)
    assert shifted.tolist() == [3, 0, 1, 2]
    scores_shifted = np.eye(4)[shifted]  # a network that recognises each (shifted) label
    np.testing.assert_array_equal(unshift_columns(scores_shifted, 3), np.eye(4))


@pytest.mark.parametrize("shift", [0, 1, 4])
def test_single_member_shift_is_undone(shift):
    X, y = clusters(5)
    ens = OracleEnsemble(TabSwiftNetwork(TINY), CLASSIFICATION, n_estimators=1, norm_methods=("none",)).fit(X, y)
    ens.members_ = [Member("none", tuple(range(3)), shift)]
    assert (ens.predict(X) == y).all()


def test_class_groups():
    assert class_groups(25, 10) == [(0, 9), (9, 17), (17, 25)]
    assert class_groups(101, 10)[0] == (0, 11) and len(class_groups(101, 10)) == 10
    assert class_groups(6, 5) == [(0, 3), (3, 6)]


def test_hierarchy_reaches_every_class_with_oracle():
    X, y = clusters(30)  # C_max=5: 30 -> 5 groups of 6 -> 2 groups of 3 (two levels of recursion)
    ens = OracleEnsemble(TabSwiftNetwork(TINY), CLASSIFICATION, n_estimators=3).fit(X, y)
    p = ens.predict_proba(X)
    assert p.shape == (120, 30)
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-12)
    assert (p.argmax(1) == y).all()


def test_subsampling_keeps_every_class_and_logs(caplog):
    y = np.repeat([0, 1, 2, 3], [200, 60, 3, 1])
    idx = stratified_subsample(y, 50, np.random.default_rng(0))
    assert len(idx) == 50 and len(np.unique(idx)) == 50 and set(y[idx]) == {0, 1, 2, 3}
    X = np.random.default_rng(0).normal(size=(len(y), 3))
    ens = TabSwiftEnsemble(TabSwiftNetwork(TINY), CLASSIFICATION, n_estimators=1, max_context_rows=50)
    log = logging.getLogger("autogluon.ext.autogluon_maya.tabswift.ensemble")
    log.addHandler(caplog.handler)  # AutoGluon's "autogluon" logger does not propagate to the root
    try:
        with caplog.at_level(logging.INFO, logger=log.name):
            ens.fit(X, y)
    finally:
        log.removeHandler(caplog.handler)
    assert len(ens.y_context_) == 50 and set(ens.y_context_) == {0, 1, 2, 3}
    assert "subsampled from 264 to 50 rows" in caplog.text


# ---- ensemble with the real (random) network -------------------------------------------------------

def _table(n=30, n_classes=3, seed=0):
    X = mixed_frame(n, seed).drop(columns=["const", "empty"])
    return X, np.arange(n) % n_classes


def test_probabilities_and_context_order_invariance():
    X, y = _table()
    Xq = mixed_frame(8, seed=9)
    net = TabSwiftNetwork(TINY)
    p = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=4).fit(X, y).predict_proba(Xq)
    assert p.shape == (8, 3) and (p > 0).all()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-9)
    perm = np.random.default_rng(1).permutation(len(y))
    perm = perm[np.argsort(X["color"].to_numpy()[perm] != "red", kind="stable")]  # "red" rows first
    # categories must appear in another order too: codes by first appearance would break invariance
    assert list(X["color"].iloc[perm].dropna().unique()) != list(X["color"].dropna().unique())
    p_perm = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=4).fit(X.iloc[perm], y[perm]).predict_proba(Xq)
    np.testing.assert_allclose(p_perm, p, atol=1e-5)
    p_seed = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=4, random_state=1).fit(X, y).predict_proba(Xq)
    assert not np.allclose(p_seed, p, atol=1e-5)  # the seed does change the members


def test_25_classes_through_the_hierarchy():
    net = TabSwiftNetwork(replace(TINY, max_classes=10))  # 25 -> groups of 9/8/8, as in the reference
    X, y = clusters(25, per_class=2)
    p = TabSwiftEnsemble(net, CLASSIFICATION, n_estimators=2).fit(X, y).predict_proba(X[:7])
    assert p.shape == (7, 25) and np.isfinite(p).all() and (p > 0).all()
    np.testing.assert_allclose(p.sum(1), 1.0, atol=1e-9)


def test_regression_returns_target_scale():
    X, _ = _table()
    y = np.random.default_rng(2).normal(size=len(X))
    net = TabSwiftNetwork(TINY)
    pred = TabSwiftEnsemble(net, REGRESSION, n_estimators=2).fit(X, y).predict(X.iloc[:6])
    scaled = TabSwiftEnsemble(net, REGRESSION, n_estimators=2).fit(X, 1000.0 * y - 50.0).predict(X.iloc[:6])
    np.testing.assert_allclose(scaled, 1000.0 * pred - 50.0, rtol=1e-4, atol=1e-2)
    const = TabSwiftEnsemble(net, REGRESSION, n_estimators=2).fit(X, np.full(len(X), 3.5)).predict(X.iloc[:4])
    np.testing.assert_array_equal(const, 3.5)


def test_ensemble_settings_record_and_changes_on_top():
    """``TabSwiftEnsemble(network, task, settings, **changes)``: the record's values, with the changes on top; a
    field the record does not have is an error naming it."""
    from autogluon_maya.tabswift.ensemble import EnsembleSettings

    net = TabSwiftNetwork(TINY)
    ens = TabSwiftEnsemble(net, CLASSIFICATION, EnsembleSettings(n_estimators=3, max_context_rows=70),
                           max_context_rows=50, random_state=4)
    assert (ens.n_estimators, ens.max_context_rows, ens.random_state) == (3, 50, 4)
    with pytest.raises(TypeError, match="n_members"):
        TabSwiftEnsemble(net, CLASSIFICATION, n_members=2)
