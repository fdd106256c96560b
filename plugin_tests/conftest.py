"""Shared fixtures.  AutoGluon's FitHelper writes ./datasets under the cwd, so every test runs in a tmp dir.

Real-data tests read the small public tables that ship in ``plugin_tests/data`` (source, licence and
checksums in its README): a missing or altered table fails the test, never skips it.  The authors' TabSwift
inference code, the oracle of the released-checkpoint tests, comes from the ``tabarena`` package (declared in
the ``test`` extra); when it cannot be imported the tests that need it fail."""

import hashlib
import importlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest

# TABSWIFT's default checkpoint_path="auto" takes the authors' released weights, downloading them at the first use
# on a machine; default-configured fits in the suite use the shipped checkpoint on every machine (a value set by
# the caller, e.g. a candidate checkpoint under evaluation, is kept)
os.environ.setdefault("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", "shipped")

import autogluon_maya  # noqa: E402,F401  (registers the models)

from plugin_tests.resources import torch_threads_unchanged  # noqa: E402,F401  (autouse: a test must not leave the torch thread count changed)

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"

# the benchmark helpers (``benchlib``) live beside the scripts that use them, outside the installed package;
# appended, so that nothing in that folder shadows an installed module
BENCHMARKS = REPO / "examples" / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.append(str(BENCHMARKS))

#: where tabarena vendors the authors' TabSwift code (upstream LAMDA-Tabular/TabSwift, MIT)
TABSWIFT_AUTHORS = "tabarena.models.tabswift._vendor"


@lru_cache(maxsize=None)
def _checksums() -> dict:
    sums = DATA / "SHA256SUMS"
    if not sums.is_file():
        pytest.fail(f"{sums} is missing: the test tables ship with the repository")
    return {name: digest for digest, name in (line.split() for line in sums.read_text().splitlines() if line)}


def shipped_table(name: str) -> Path:
    """Path of a shipped table's ``data.csv.gz``, its checksum verified; fails the test otherwise."""
    path = DATA / name / "data.csv.gz"
    want = _checksums().get(f"{name}/data.csv.gz")
    if want is None or not path.is_file():
        pytest.fail(f"test table {name!r} is not shipped in {DATA} (listed there: {sorted(_checksums())})")
    got = hashlib.sha256(path.read_bytes()).hexdigest()
    if got != want:
        pytest.fail(f"test table {path} does not match its checksum in SHA256SUMS ({got} != {want})")
    return path


def tabswift_authors():
    """The authors' TabSwift inference code as vendored by ``tabarena``: returns
    ``(TabSwift, TabSwiftClassifier, TabSwiftRegressor)``; fails the test when tabarena is not installed."""
    return (authors_module("model.tabswift").TabSwift, authors_module("classifier").TabSwiftClassifier,
            authors_module("regressor").TabSwiftRegressor)


def authors_module(name: str):
    """A module of the authors' TabSwift code, e.g. ``authors_module("preprocessing")``."""
    try:
        return importlib.import_module(f"{TABSWIFT_AUTHORS}.{name}")
    except ImportError as err:
        pytest.fail(f"the authors' TabSwift code (test oracle) could not be imported from {TABSWIFT_AUTHORS}: "
                    f"{err} (pip install -e '.[test]' installs tabarena)")


@pytest.fixture(scope="session", autouse=True)
def _no_hub_downloads():
    """No test reaches the internet: "auto" never downloads (``AUTOGLUON_MAYA_HUB_DOWNLOAD=0``, inherited by the
    subprocesses tests start) unless a test turns downloads on against a hub it serves on 127.0.0.1."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AUTOGLUON_MAYA_HUB_DOWNLOAD", "0")
        yield


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def one_torch_thread_seeded():
    """Component tests use tiny tensors: one torch thread is fastest on 2 cores; restore the count after."""
    import torch

    previous, rng = torch.get_num_threads(), torch.get_rng_state()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
        torch.set_rng_state(rng)


@pytest.fixture
def load_dataset():
    """Load a shipped table ``name`` (``plugin_tests/data``), optionally a seeded subsample of ``n`` rows."""

    def _load(name: str, n: int | None = None, seed: int = 0):
        df = pd.read_csv(shipped_table(name))
        meta = json.loads((DATA / name / "meta.json").read_text())
        if n is not None and len(df) > n:
            df = df.sample(n=n, random_state=seed).reset_index(drop=True)
        return df, meta

    return _load


@pytest.fixture(scope="session", autouse=True)
def ray_workers_at_normal_priority():
    """The suite fits bagged models beside whatever else runs on the machine: their Ray fold workers run at normal
    priority (the package's opt-in; Ray's default niceness 15 starves them beside busy processes).  Set before the
    first test starts Ray, and the environment restored when the session ends."""
    from autogluon_maya.common.fold_worker import RAY_NICENESS_ENV

    before = os.environ.get(RAY_NICENESS_ENV)
    autogluon_maya.ray_workers_at_normal_priority()
    yield
    if before is None:
        os.environ.pop(RAY_NICENESS_ENV, None)
    else:
        os.environ[RAY_NICENESS_ENV] = before
