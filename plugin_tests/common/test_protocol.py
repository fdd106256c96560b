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


def test_default_datasets_dir_is_the_variable_else_datasets_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv(protocol.DATASETS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert protocol.default_datasets_dir() == tmp_path / "datasets"
    monkeypatch.setenv(protocol.DATASETS_ENV, str(tmp_path / "elsewhere"))
    assert protocol.default_datasets_dir() == tmp_path / "elsewhere"
