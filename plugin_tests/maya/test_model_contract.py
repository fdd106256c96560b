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


def test_memory_estimate_grows_with_rows_features_and_width():
    import numpy as np
    import pandas as pd

    def est(n, f, **hp):
        X = pd.DataFrame(np.zeros((n, f)), columns=[f"c{i}" for i in range(f)])
        return MayaModel._estimate_memory_usage_static(X=X, hyperparameters=hp, num_classes=2)

    assert est(10_000, 10) > est(1_000, 10)
    assert est(1_000, 50) > est(1_000, 10)
    assert est(1_000, 10, hidden_size=256) > est(1_000, 10)
    # a search space in place of a value is read at its default instead of crashing
    from autogluon.common import space
    assert est(1_000, 10, hidden_size=space.Int(32, 512, default=64)) == est(1_000, 10)
    # the first block of a deeper encoder runs attention and the FFN over every token, a one-block encoder only
    # the [CLS] row (measured: +981 MiB against +154 MiB on 2,000 x 50, binary, the first two members at once)
    # the linear token: an embedding adds the same bytes to both sides of the ratio
    pair = {"num_embeddings": None, "parallel_members": "auto"}
    assert est(2_000, 50, num_layers=2, **pair) > 4 * est(2_000, 50, **pair)


def test_memory_estimate_adds_torch_only_before_its_first_import(monkeypatch):
    import sys

    import numpy as np
    import pandas as pd

    from autogluon_maya.common.ag_model import TORCH_IMPORT_BYTES

    X = pd.DataFrame(np.zeros((1_000, 10)))
    imported = MayaModel._estimate_memory_usage_static(X=X, num_classes=2)
    monkeypatch.delitem(sys.modules, "torch")
    assert MayaModel._estimate_memory_usage_static(X=X, num_classes=2) == imported + TORCH_IMPORT_BYTES
