"""Shared fixtures: AutoGluon's FitHelper writes ./datasets under the cwd, so every test runs in a tmp dir;
real-data tests find ../shared/datasets (or $AUTOGLUON_MAYA_DATASETS) and skip with a reason otherwise,
except with ``AUTOGLUON_MAYA_REQUIRE_DATA=1`` (set by ``.ci/run``), where a missing dataset fails the test:
CI must not turn the real-data tests into silent skips.  The authors' TabSwift inference code, the test
oracle for the released-checkpoint tests, is found the same way: ../shared/reference/tabswift_upstream
(or $AUTOGLUON_MAYA_REFERENCE/tabswift_upstream)."""

import os
from pathlib import Path

import pandas as pd
import pytest

import autogluon_maya  # noqa: F401  (registers the models)

REPO = Path(__file__).resolve().parents[1]
REQUIRE_DATA_ENV = "AUTOGLUON_MAYA_REQUIRE_DATA"


def datasets_dir() -> Path:
    """Beside this checkout, not ``protocol.default_datasets_dir()``: tests run in a tmp cwd, and with a
    non-editable install that function cannot see the checkout the tests come from."""
    env = os.environ.get("AUTOGLUON_MAYA_DATASETS")
    return Path(env) if env else REPO.parent / "shared" / "datasets"


def missing_data(reason: str):
    """Skip a test whose real data is absent, or fail it when the run requires the data."""
    if os.environ.get(REQUIRE_DATA_ENV, "") not in ("", "0"):
        pytest.fail(f"{reason} ({REQUIRE_DATA_ENV} is set, so real-data tests must not be skipped)")
    pytest.skip(reason)


def reference_dir() -> Path:
    """Folder holding third-party reference code used as a test oracle (never imported by the package)."""
    env = os.environ.get("AUTOGLUON_MAYA_REFERENCE")
    return Path(env) if env else REPO.parent / "shared" / "reference"


TABSWIFT_AUTHORS = "tabswift_upstream"


def tabswift_authors():
    """The authors' TabSwift inference package (MIT, see its README), imported from ``reference_dir()``
    under the name ``tabswift_upstream``; skips (or fails, with AUTOGLUON_MAYA_REQUIRE_DATA=1) when it is
    absent.  Returns ``(TabSwift, TabSwiftClassifier, TabSwiftRegressor)``."""
    import importlib
    import importlib.util
    import sys

    folder = reference_dir() / TABSWIFT_AUTHORS
    if not (folder / "model" / "tabswift.py").is_file():
        missing_data(f"the authors' TabSwift code (test oracle) not found at {folder} (set AUTOGLUON_MAYA_REFERENCE "
                     f"to the folder that holds {TABSWIFT_AUTHORS}/)")
    if TABSWIFT_AUTHORS not in sys.modules:
        spec = importlib.util.spec_from_file_location(TABSWIFT_AUTHORS, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[TABSWIFT_AUTHORS] = package
        spec.loader.exec_module(package)
    try:
        model = importlib.import_module(f"{TABSWIFT_AUTHORS}.model.tabswift")
        classifier = importlib.import_module(f"{TABSWIFT_AUTHORS}.classifier")
        regressor = importlib.import_module(f"{TABSWIFT_AUTHORS}.regressor")
    except ImportError as err:  # a dependency of the oracle: declared in the `test` extra
        missing_data(f"the authors' TabSwift code at {folder} needs {err.name!r} (pip install -e '.[test]')")
    return model.TabSwift, classifier.TabSwiftClassifier, regressor.TabSwiftRegressor


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def one_torch_thread_seeded():
    """Component tests use tiny tensors: one torch thread is fastest on 2 cores; restore the count after."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


@pytest.fixture
def load_dataset():
    """Load ``name`` from the shared datasets, optionally a seeded subsample of ``n`` rows."""

    def _load(name: str, n: int | None = None, seed: int = 0):
        import json

        folder = datasets_dir() / name
        if not (folder / "data.csv.gz").exists():
            missing_data(f"real dataset {name!r} not found at {folder} (set AUTOGLUON_MAYA_DATASETS)")
        df = pd.read_csv(folder / "data.csv.gz")
        meta = json.loads((folder / "meta.json").read_text())
        if n is not None and len(df) > n:
            df = df.sample(n=n, random_state=seed).reset_index(drop=True)
        return df, meta

    return _load
