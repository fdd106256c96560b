"""Which code a benchmark row ran: the git commits of the checkout that holds the imported package.

Every benchmark script records these beside its scores, so that a row can be traced to the code that
produced it and rows of different package versions are never mixed up in one table:

- ``commit``: HEAD, ``-dirty`` when tracked files outside the results folders differ from it;
- ``code_commit``: the last commit that touched anything outside the results folders;
- ``package_commit``: the last commit that touched what a fit depends on (:data:`PACKAGE_PATHS`),
  ``-dirty`` only when those files differ: rows with the same one ran the same models, and an edited doc
  or results file does not make a new version.

A checkout without git (an installed wheel, a tarball) gives ``"unknown"`` instead of failing the run.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path
from typing import Dict, Iterable, Optional

#: the folder every benchmark script writes its results under (relative to the repository root)
RESULTS_DIR = "examples/benchmarks/results"

#: what a benchmark fit depends on beyond AutoGluon: the package, the portfolio helper and the split of P1
#: (``benchlib/protocol.py``); the rest of ``benchlib`` reports and times fits.  ``autogluon_maya/benchmarking`` is
#: where older commits keep these helpers: excluded, so that a commit that changed only them has the package
#: version of the commit before, whichever commit is asked about.
PACKAGE_PATHS = ("autogluon_maya", ":(exclude)autogluon_maya/benchmarking", "pyproject.toml",
                 "examples/stack_with_gbdts.py", "examples/benchmarks/benchlib/protocol.py")


def git(repo: Path, *cmd: str) -> str:
    """Output of ``git -C repo cmd...`` (raises on a failing command or a missing git)."""
    return subprocess.run(["git", "-C", str(repo), *cmd], capture_output=True, text=True, timeout=60,
                          check=True).stdout.strip()


def package_repo() -> Path:
    """The checkout that holds the ``autogluon_maya`` this process imports (``PYTHONPATH`` decides which)."""
    import importlib.util

    spec = importlib.util.find_spec("autogluon_maya")
    return Path(list(spec.submodule_search_locations)[0]).parent


def package_commit(repo: Path, rev: str = "HEAD") -> str:
    """The last commit at or before ``rev`` that changed :data:`PACKAGE_PATHS`."""
    fixed = re.fullmatch(r"[0-9a-f]{7,40}", rev) is not None  # a commit hash; HEAD or a branch moves
    return (_package_commit_at if fixed else _last_package_commit)(Path(repo), rev)


def _last_package_commit(repo: Path, rev: str) -> str:
    return git(repo, "log", "-1", "--format=%h", rev, "--", *PACKAGE_PATHS)


# a commit hash's answer never changes (a report looks up every row written before rows recorded it);
# HEAD's or a branch's does, so only hashes are cached
_package_commit_at = functools.lru_cache(maxsize=None)(_last_package_commit)


def code_version(repo: Optional[Path] = None, exclude: Iterable[str] = (),
                 out: Optional[Path] = None) -> Dict[str, str]:
    """``commit``, ``code_commit`` and ``package_commit`` of ``repo`` (default :func:`package_repo`).

    ``exclude``: further repository-relative folders that, like :data:`RESULTS_DIR`, hold outputs rather
    than code; ``out``: a run's output folder, counted the same where it lies inside ``repo``."""
    repo = Path(repo) if repo is not None else package_repo()
    rel_out = relative_to_repo(out, repo) if out is not None else None
    exclude = [*exclude, *([rel_out] if rel_out else [])]
    excludes = [f":(exclude){p}" for p in (RESULTS_DIR, *exclude)]
    try:
        head = git(repo, "rev-parse", "--short", "HEAD")
        dirty = git(repo, "status", "--porcelain", "--untracked-files=no", "--", ".", *excludes)
        code = git(repo, "log", "-1", "--format=%h", "--", ".", *excludes)
        package = git(repo, "log", "-1", "--format=%h", "--", *PACKAGE_PATHS)  # HEAD moves: not cached
        package_dirty = git(repo, "status", "--porcelain", "--untracked-files=no", "--", *PACKAGE_PATHS)
    except (OSError, subprocess.SubprocessError) as e:
        return {"commit": f"unknown ({type(e).__name__})", "code_commit": "unknown", "package_commit": "unknown"}
    return {"commit": head + ("-dirty" if dirty else ""), "code_commit": code,
            "package_commit": package + ("-dirty" if package_dirty else "")}


def relative_to_repo(path: Path, repo: Optional[Path] = None) -> Optional[str]:
    """``path`` relative to ``repo`` (default :func:`package_repo`), or None when it lies outside."""
    repo = Path(repo) if repo is not None else package_repo()
    try:
        return str(Path(path).resolve().relative_to(repo.resolve()))
    except ValueError:
        return None
