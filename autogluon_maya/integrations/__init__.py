"""Optional integrations with other tools.  Nothing is imported here: each integration is a submodule that
imports its tool when it is used, e.g. ``from autogluon_maya.integrations import tabarena``."""
