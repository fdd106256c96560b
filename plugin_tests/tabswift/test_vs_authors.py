"""Our TabSwift pipeline against the authors' inference code (the oracle: the code ``tabarena`` vendors,
see ``conftest.authors_module``).

``pipeline="authors"`` must reproduce their preprocessing exactly and, given the same view of the table,
their predictions; our default keeps its own outlier clipping and balanced class shifts, and the tests
show those differ where they should.  ``examples/benchmarks/tabswift_vs_authors.py`` measures the
whole pipelines on real tables.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from autogluon_maya.tabswift.config import TINY
from autogluon_maya.tabswift.ensemble import Member, TabSwiftEnsemble, plan_members
from autogluon_maya.tabswift.network import TabSwiftNetwork
from autogluon_maya.tabswift.preprocessing import RowPreprocessor
from autogluon_maya.tabswift.checkpoints_io.released import released_to_network
from plugin_tests.conftest import authors_module
from plugin_tests.tabswift.test_released import SMALL_CONFIG, write_authors_ckpt

pytestmark = pytest.mark.usefixtures("one_torch_thread_seeded")


def _skewed(n=300, seed=0):
    """Heavy tails and a binary column: the outlier clipping acts on a few percent of the cells."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.lognormal(0, 2, size=n), rng.standard_t(2, size=n),
                         rng.integers(0, 2, size=n), rng.exponential(5, size=n) ** 2])
    return X[:200], X[200:]


@pytest.mark.parametrize("norm", ["none", "power"])
def test_authors_style_preprocessing_equals_theirs(norm):
    Pipeline = authors_module("preprocessing").PreprocessingPipeline
    Xtr, Xte = _skewed()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = Pipeline(norm, 4.0).fit(Xtr)
        want_tr, want_te = theirs.X_transformed_, theirs.transform(Xte)
    pre = RowPreprocessor(norm, None, 4.0, style="authors").fit(pd.DataFrame(Xtr))
    assert np.allclose(pre.transform(pd.DataFrame(Xtr)), want_tr, atol=1e-5, rtol=1e-5)
    assert np.allclose(pre.transform(pd.DataFrame(Xte)), want_te, atol=1e-5, rtol=1e-5)
    # our default clips outliers differently (continuous at the bound): it must differ, on the outliers only
    ours = RowPreprocessor(norm, None, 4.0).fit(pd.DataFrame(Xtr))
    differ = ~np.isclose(np.vstack([ours.transform(pd.DataFrame(X)) for X in (Xtr, Xte)]),
                         np.vstack([want_tr, want_te]), atol=1e-4)
    assert 0 < differ.mean() < 0.05, differ.mean()


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_one_view_predictions_equal_the_authors_estimator(tmp_path, task):
    """One member each, the same feature order, no class shift: our ensemble with pipeline="authors" and
    their TabSwiftClassifier / TabSwiftRegressor (on standardized y, as their benchmark adapter feeds it)
    give the same predictions -- preprocessing, row scaling, network and softmax temperature included."""
    ckpt = write_authors_ckpt(tmp_path / "swift.ckpt")
    net, _ = released_to_network(ckpt)
    Xtr, Xte = _skewed()
    rng = np.random.default_rng(1)
    if task == "classification":
        y = (Xtr[:, 0] + 0.3 * rng.normal(size=len(Xtr)) > 0).astype(int) + (Xtr[:, 2] > 1)  # 3 classes
        est = authors_module("classifier").TabSwiftClassifier
    else:
        y = Xtr[:, 0] * 3 + np.log1p(np.abs(Xtr[:, 1]))
        y = (y - y.mean()) / y.std()
        est = authors_module("regressor").TabSwiftRegressor
    theirs = est(n_estimators=1, norm_methods=["power"], class_shift=False, model_path=str(ckpt), device="cpu",
                 allow_auto_download=False, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs.fit(Xtr, y)
        want = theirs.predict_proba(Xte).reshape(len(Xte), -1)
    permutation = theirs.ensemble_generator_.feature_shuffle_patterns_["power"][0]  # their one random order
    for pipeline in ("authors", "ours"):
        ens = TabSwiftEnsemble(net, task, n_estimators=1, norm_methods=("power",), class_shift=False,
                               pipeline=pipeline).fit(pd.DataFrame(Xtr), y)
        ens.members_ = [Member("power", tuple(int(j) for j in permutation), 0)]
        got = (ens.predict_proba(pd.DataFrame(Xte)) if task == "classification"
               else ens.predict(pd.DataFrame(Xte))[:, None])
        if pipeline == "authors":
            assert np.allclose(got, want, atol=1e-5, rtol=0), np.abs(got - want).max()
        else:  # our outlier clipping moves the rows with outliers
            assert np.abs(got - want).max() > 1e-4


def test_authors_style_reduces_wide_tables_before_the_variants():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.lognormal(size=(80, 30)))
    pre = RowPreprocessor("power", max_features=12, style="authors").fit(X)
    out = pre.transform(X)
    assert out.shape == (80, 12) and pre.reducer_ is not None and pre.pca_ is None
    # components are standardized before the variant's own steps: the "none" variant is ~ z-scores
    assert np.allclose(RowPreprocessor("none", 12, style="authors").fit_transform(X).std(0), 1.0, atol=0.05)


def test_member_plans():
    """Ours balances class shifts; the authors' plan draws (permutation, shift) pairs at random from all
    pairs, so with few members one shift can be left out entirely."""
    for seed in range(20):
        ours = plan_members(4, 5, 4, ("none",), np.random.default_rng(seed))
        assert sorted(m.shift for m in ours) == [0, 1, 2, 3]
    plans = [plan_members(4, 5, 4, ("none",), np.random.default_rng(seed), balanced=False) for seed in range(20)]
    assert all(len({(m.permutation, m.shift) for m in p}) == 4 for p in plans)  # distinct pairs
    assert any(len({m.shift for m in p}) < 4 for p in plans)
    with pytest.raises(ValueError, match="pipeline must be one of"):
        TabSwiftEnsemble(TabSwiftNetwork(TINY), "classification", pipeline="theirs")


def test_pipeline_switch_through_autogluon(tmp_path):
    from autogluon.tabular import TabularPredictor

    Xtr, Xte = _skewed()
    df = pd.DataFrame(Xtr, columns=list("abcde")).assign(y=(Xtr[:, 0] > 0).astype(int))
    hp = {"checkpoint_path": str(write_authors_ckpt(tmp_path / "swift.ckpt")), "n_estimators": 2}
    probas = {}
    for pipeline in ("ours", "authors"):
        predictor = TabularPredictor(label="y", path=str(tmp_path / pipeline), verbosity=0).fit(
            df, hyperparameters={"TABSWIFT": {**hp, "pipeline": pipeline}}, raise_on_model_failure=True,
            num_cpus=1)
        assert predictor._trainer.load_model("TabSwift").model.pipeline == pipeline
        probas[pipeline] = predictor.predict_proba(pd.DataFrame(Xte, columns=list("abcde"))).to_numpy()
    assert not np.allclose(probas["ours"], probas["authors"], atol=1e-6)
    with pytest.raises(Exception, match="pipeline must be one of"):
        TabularPredictor(label="y", path=str(tmp_path / "bad"), verbosity=0).fit(
            df, hyperparameters={"TABSWIFT": {**hp, "pipeline": "theirs"}}, raise_on_model_failure=True, num_cpus=1)
