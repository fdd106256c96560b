"""autogluon_maya: MAYA and TabSwift as AutoGluon-Tabular models.

``import autogluon_maya`` registers the keys so that
``TabularPredictor(...).fit(train, hyperparameters={"MAYA": {}, "TABSWIFT": {}})`` works.
"""

from ._registry import register_models
from .common.ag_model import ray_workers_at_normal_priority
from .maya import MayaModel, maya_search_space
from .portfolio import hyperparameters
from .tabswift.model import TabSwiftModel

__version__ = "0.2.0"
__all__ = ["MayaModel", "TabSwiftModel", "hyperparameters", "maya_search_space", "register_models"]

register_models([MayaModel, TabSwiftModel])
ray_workers_at_normal_priority()
