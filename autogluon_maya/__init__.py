"""autogluon_maya: MAYA and TabSwift as AutoGluon-Tabular models.

``import autogluon_maya`` registers the keys so that
``TabularPredictor(...).fit(train, hyperparameters={"MAYA": {}, "TABSWIFT": {}})`` works.

Public API: the model classes ``MayaModel`` and ``TabSwiftModel`` (usable as keys too), the portfolios
``hyperparameters(preset)`` and ``preset_doc(preset)``, and the search spaces ``maya_search_space()`` and
``tabswift_search_space()``; ``prefetch_weights()`` fetches and converts the authors' released TabSwift weights once,
so that ``checkpoint_path="auto"`` uses them offline; ``ray_workers_at_normal_priority()`` (opt-in) starts
AutoGluon's Ray fold workers at normal priority.  The import registers the two keys and changes nothing else.
"""

from ._registry import register_models, register_package_models
from .common.fold_worker import ray_workers_at_normal_priority
from .maya import MayaModel, maya_search_space
from .portfolio import hyperparameters, preset_doc
from .tabswift.model import TabSwiftModel
from .tabswift.checkpoints_io.choice import prefetch_weights
from .tabswift.search_space import tabswift_search_space
from .version import __version__

__all__ = ["MayaModel", "TabSwiftModel", "hyperparameters", "maya_search_space", "prefetch_weights", "preset_doc",
           "ray_workers_at_normal_priority", "register_models", "tabswift_search_space"]

register_package_models()
