"""The examples' table loader (``examples/example_data.py``): the names a user can pass and the split."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

_SPEC = importlib.util.spec_from_file_location(
    "example_data", Path(__file__).resolve().parents[1] / "examples" / "example_data.py")
example_data = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(example_data)


def test_every_repository_table_name_loads_with_its_target():
    for folder in sorted(p for p in example_data.REPO_TABLES.iterdir() if p.is_dir()):
        frame, label = example_data.load_table(folder.name, max_rows=50)
        assert len(frame) == 50 and label == frame.columns[-1], folder.name  # targets are the last column


def test_scikit_learn_tables_load_by_name():
    frame, label = example_data.load_table("diabetes")
    assert (len(frame), label) == (442, "target")


def test_a_csv_takes_the_label_given_and_names_the_columns_otherwise(tmp_path):
    path = tmp_path / "my.csv"
    pd.DataFrame({"y": [0, 1] * 10, "a": np.arange(20.0), "price": np.arange(20.0)}).to_csv(path, index=False)
    assert example_data.load_table(str(path))[1] == "price"
    assert example_data.load_table(str(path), label="y")[1] == "y"
    with pytest.raises(SystemExit, match="'nope'.*'price'"):
        example_data.load_table(str(path), label="nope")
    with pytest.raises(SystemExit, match="breast_cancer"):
        example_data.load_table("no_such_table")


def test_split_is_64_16_20_and_stratified_on_a_class_label():
    y = np.array([0] * 900 + [1] * 100)
    frame = pd.DataFrame({"x": np.arange(1000.0), "y": y})
    train, val, test = example_data.split(frame, "y", seed=3)
    assert (len(train), len(val), len(test)) == (640, 160, 200)
    assert [int(part["y"].sum()) for part in (train, val, test)] == [64, 16, 20]
    assert set(train.index).isdisjoint(test.index) and set(val.index).isdisjoint(test.index)
