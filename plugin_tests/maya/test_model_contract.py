"""AutoGluon's own model contract (FitHelper.verify_model) for MAYA."""

import pytest
from autogluon.tabular.testing import FitHelper

from autogluon_maya import MayaModel

TINY = {"max_epochs": 3, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "batch_size": 32}


def test_verify_model_all_problem_types():
    """binary, multiclass, regression, quantile; plus bagging (2 folds) and refit_full."""
    FitHelper.verify_model(model_cls=MayaModel, model_hyperparameters=TINY, verify_load_wo_cuda=True)


@pytest.mark.parametrize("problem_type", ["binary", "multiclass", "regression"])
def test_verify_model_bagged_each_type(problem_type):
    FitHelper.verify_model(model_cls=MayaModel, model_hyperparameters=TINY, problem_types=[problem_type],
                           bag="first", refit_full=True, use_larger_toy_datasets=True)
