"""MAYA through AutoGluon's Ray Tune backend with the Table 12 search space."""

import time

import pytest
from autogluon.common import space
from autogluon.tabular import TabularPredictor

import autogluon_maya


def test_two_trial_ray_hpo_returns_distinct_configs():
    pytest.importorskip("ray")
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True).frame.sample(300, random_state=0)
    hp = autogluon_maya.maya_search_space()
    # keep every Table 12 dimension searchable but cheap: narrow the width, few epochs
    hp.update(hidden_size=space.Int(8, 32, default=16), num_layers=space.Int(1, 2, default=1),
              num_branch=space.Int(1, 2, default=1), max_epochs=3)
    pred = TabularPredictor(label="target", path="ag", verbosity=0).fit(
        data, hyperparameters={"MAYA": hp}, fit_weighted_ensemble=False, time_limit=240,
        hyperparameter_tune_kwargs={"num_trials": 2, "scheduler": "local", "searcher": "random"})
    names = pred.model_names()
    assert len(names) == 2 and all(n.startswith("Maya/") for n in names), names
    info = pred.info()["model_info"]
    configs = [{k: v for k, v in info[n]["hyperparameters"].items() if k in autogluon_maya.maya.TABLE12} for n in names]
    assert configs[0] != configs[1]
    # the hidden size each trial trained is a multiple of its number of heads
    for n in names:
        trained = {**info[n]["hyperparameters"], **info[n]["hyperparameters_fit"]}
        assert trained["hidden_size"] % trained["num_heads"] == 0
    assert pred.predict(data.drop(columns="target").head(5)).shape == (5,)


def test_two_trials_over_the_papers_full_space_end_within_the_time_limit():
    """The paper's Table 12 space (the GPU space): a trial may sample 16 layers x 8 branches x width 256 x batch
    4,096, which a CPU cannot train in its share; it must be shrunk or skipped, never overrun the search."""
    pytest.importorskip("ray")
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True).frame.sample(300, random_state=0)
    limit = 60
    t0 = time.time()
    pred = TabularPredictor(label="target", path="ag_full", verbosity=0).fit(
        data, hyperparameters={"MAYA": autogluon_maya.maya_search_space(device="gpu")}, fit_weighted_ensemble=False,
        time_limit=limit, hyperparameter_tune_kwargs={"num_trials": 2, "scheduler": "local", "searcher": "random"})
    elapsed = time.time() - t0
    assert elapsed <= limit * 1.05 + 2, elapsed
    names = pred.model_names()
    assert 1 <= len(names) <= 2 and all(n.startswith("Maya/") for n in names), names
