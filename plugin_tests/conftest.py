"""Shared fixtures: AutoGluon's FitHelper writes ./datasets under the cwd, so every test runs in a tmp dir;
real-data tests find ../shared/datasets (or $AUTOGLUON_MAYA_DATASETS) and skip with a reason otherwise,
except with ``AUTOGLUON_MAYA_REQUIRE_DATA=1`` (set by ``.ci/run``), where a missing dataset fails the test:
CI must not turn the real-data tests into silent skips."""

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
