"""MAYA: network (``network``), training/inference (``trainer``) and the AutoGluon model (``model``)."""

from .model import MayaModel
from .search_space import TABLE12, maya_search_space

__all__ = ["MayaModel", "TABLE12", "maya_search_space"]
