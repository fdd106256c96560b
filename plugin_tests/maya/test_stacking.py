"""MAYA bagged (parallel Ray folds by default), stacked with LightGBM, and refit_full, on a real table."""

import numpy as np
import pytest
from autogluon.tabular import TabularPredictor

from autogluon_maya.maya.schedule import effective_batch_size
from plugin_tests.resources import fit_on_cores


def test_auto_batch_gives_small_tables_at_least_eight_steps_per_epoch():
    assert effective_batch_size("auto", 13_000, 256) == 256
    assert effective_batch_size("auto", 300, 256) == 37  # 300 // 8
    assert effective_batch_size("auto", 100, 256) == 32  # never below 32 ...
    assert effective_batch_size("auto", 20, 256) == 20  # ... nor above the table
    assert effective_batch_size("auto", 3, 256) == 3


@pytest.mark.parametrize("problem_type, rows", [("multiclass", 128), ("regression", 256)])
def test_auto_batch_is_the_tasks_and_does_not_grow_with_the_number_of_classes(tmp_path, problem_type, rows):
    """The table's auto batch (defaults.AUTO_BATCH_ROWS): 128 rows for classification, 256 for regression, with
    no more rows for more classes (letter's 26 classes scored lower at 32 rows per class, docs/maya.md)."""
    import pandas as pd

    from autogluon_maya import MayaModel

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(3000, 3)), columns=["a", "b", "c"])
    y = pd.Series(rng.integers(0, 26, size=3000) if problem_type == "multiclass" else rng.normal(size=3000))
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type=problem_type,
                      hyperparameters={"max_epochs": 1, "hidden_size": 16, "num_heads": 2, "num_layers": 1,
                                       "ensemble_members": 1})
    fit_on_cores(model, 1, X=X, y=y)
    assert model._fit_summary["batch_size"] == effective_batch_size("auto", 3000, rows) == rows
    assert effective_batch_size("auto", 600, 128) == 75  # the small-table rule still lowers it


def test_explicit_batch_size_is_used_as_given_capped_only_by_the_rows():
    assert effective_batch_size(256, 300, 128) == 256  # not lowered to 300 // 8
    assert effective_batch_size(4096, 1000, 128) == 1000  # the paper's sizes on a small table: one batch
    assert effective_batch_size(16, 100, 128) == 16
    assert effective_batch_size(1, 3, 128) == 2  # a 1-row batch has no context


def test_bagged_stacked_with_gbm_and_refit_full():
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True).frame
    train, test = data.iloc[:450], data.iloc[450:]
    pred = TabularPredictor(label="target", path="ag", verbosity=0).fit(
        train, hyperparameters={"MAYA": {"max_epochs": 10}, "GBM": {}}, num_bag_folds=2, num_stack_levels=1,
        time_limit=300)
    names = set(pred.model_names())
    assert {"Maya_BAG_L1", "Maya_BAG_L2", "LightGBM_BAG_L1", "WeightedEnsemble_L3"} <= names, names
    lb = pred.leaderboard(test, silent=True).set_index("model")
    assert lb.loc["Maya_BAG_L1", "score_test"] > 0.9  # learned, not the 63% majority class
    refit = pred.refit_full()
    assert refit["Maya_BAG_L1"] == "Maya_BAG_L1_FULL"
    p_full = pred.predict_proba(test.drop(columns="target"), model="Maya_BAG_L2_FULL")
    assert np.isfinite(p_full.to_numpy()).all() and len(p_full) == len(test)
