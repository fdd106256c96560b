"""The package version, in one place: ``pyproject.toml`` reads it when building, ``autogluon_maya`` re-exports it."""

__version__ = "0.2.0"
