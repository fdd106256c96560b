"""``python -m autogluon_maya.tabswift.export``: the command line of ``checkpoints_io.export``, where the code lives."""

from .checkpoints_io.export import *  # noqa: F401,F403
from .checkpoints_io.export import (ExportError, ExportReport, authors_config, class_line, export_to_authors, main,
                                    to_authors)

__all__ = ["ExportError", "ExportReport", "authors_config", "class_line", "export_to_authors", "main", "to_authors"]

if __name__ == "__main__":
    raise SystemExit(main())
