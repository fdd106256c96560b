"""MAYA: network (``network``), batch and time planning (``schedule``), training (``trainer``), the fitted networks
(``fitted``) and the AutoGluon model (``model``)."""

from .model import MayaModel
from .search_space import TABLE12, maya_search_space

__all__ = ["MayaModel", "TABLE12", "maya_search_space"]
