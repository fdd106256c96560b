"""The repository checkout these helpers sit in.

They are not installed with the package: they always live in a working tree, so the checkout is the nearest
folder above them that holds ``pyproject.toml`` (or ``.git``), wherever the package itself is imported from.
"""

from __future__ import annotations

from pathlib import Path


def find_repo(start: Path) -> Path:
    """The nearest folder at or above ``start`` that holds ``pyproject.toml`` or ``.git``."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    raise FileNotFoundError(f"no repository checkout (a folder holding pyproject.toml or .git) at or above {start}")


#: the checkout that holds ``examples/benchmarks/benchlib``
REPO = find_repo(Path(__file__).parent)
