"""The benchmark protocol P1's table loading (``examples/benchmarks/benchlib/protocol.py``), which the benchmark scripts share."""

import numpy as np
import pandas as pd
import pytest

from benchlib import protocol


def _csv(tmp_path):
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"y": rng.integers(0, 2, 200), "a": rng.normal(size=200), "price": rng.normal(size=200) * 1e3})
    path = tmp_path / "my.csv"
    df.to_csv(path, index=False)
    return path


def test_label_sets_the_target_before_the_task_is_inferred(tmp_path):
    path = _csv(tmp_path)
    assert protocol.load_dataset(path).task == "regression"  # default target: the last column, "price"
    ds = protocol.load_dataset(path, label="y", max_rows=100)
    assert (ds.target, ds.task) == ("y", "binary")
    full = pd.read_csv(path)["y"].value_counts(normalize=True)
    sub = ds.data["y"].value_counts(normalize=True)
    assert (sub - full).abs().max() <= 0.01  # stratified on the chosen label when subsampling


def test_unknown_label_names_the_columns(tmp_path):
    with pytest.raises(KeyError, match="'nope'.*'price'"):
        protocol.load_dataset(_csv(tmp_path), label="nope")


def test_default_datasets_dir_looks_beside_the_checkout_then_beside_the_working_directory(tmp_path, monkeypatch):
    """No ``shared/datasets`` beside the checkout: the working directory's neighbours count; one beside the
    checkout comes first; ``$AUTOGLUON_MAYA_DATASETS`` overrides both."""
    monkeypatch.delenv(protocol.DATASETS_ENV, raising=False)
    (tmp_path / "shared" / "datasets").mkdir(parents=True)
    work = tmp_path / "project"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(protocol, "REPO", tmp_path / "lab" / "checkout")
    assert protocol.default_datasets_dir() == tmp_path / "shared" / "datasets"
    (tmp_path / "lab" / "shared" / "datasets").mkdir(parents=True)
    assert protocol.default_datasets_dir() == tmp_path / "lab" / "shared" / "datasets"
    monkeypatch.setenv(protocol.DATASETS_ENV, str(tmp_path / "elsewhere"))
    assert protocol.default_datasets_dir() == tmp_path / "elsewhere"
