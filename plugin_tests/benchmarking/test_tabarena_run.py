"""``examples/benchmarks/tabarena_run.py``: a run over some of the tables adds to an earlier run's results in
the same folder, and only when the same package made them."""

import json

import pandas as pd
import pytest
import tabarena_run as tr


#: an error whose shortest repr pandas' default CSV parser does not give back (it reads 0.076056338028169)
ERROR = 0.07605633802816902


def _earlier_run(out, tables, package_commit):
    """``results.csv`` and ``settings.json`` as a run over ``tables`` wrote them."""
    rows = [{"table": t, "method": m, "config": f"{m}_c1_default_BAG_L1", "dataset": f"{t}-0", "status": "ok",
             "test_error": ERROR + i, "val_error": ERROR + i} for i, t in enumerate(tables) for m in ("CatBoost", "MAYA")]
    pd.DataFrame(rows).to_csv(out / "results.csv", index=False)
    infos = [{"table": t, "dataset": f"{t}-0", "task": "binary", "train_rows": 80, "test_rows": 20} for t in tables]
    (out / "settings.json").write_text(json.dumps({"settings": {"tables": tables}, "tables": infos,
                                                   "code": {"package_commit": package_commit}}))


def test_a_run_over_other_tables_keeps_the_earlier_tables_rows_and_sizes(tmp_path):
    _earlier_run(tmp_path, ["a", "b"], "abc1234")
    rows, infos = tr.earlier_tables(tmp_path, ["b", "c"], "abc1234")
    assert [i["table"] for i in infos] == ["a"]  # b is refitted by this run: its old rows go
    assert {r["table"] for r in rows} == {"a"} and {r["method"] for r in rows} == {"CatBoost", "MAYA"}
    assert [r["test_error"] for r in rows] == [ERROR, ERROR]  # to the last digit


def test_nothing_is_kept_when_the_run_covers_every_earlier_table_or_there_is_none(tmp_path):
    assert tr.earlier_tables(tmp_path, ["a"], "abc1234") == ([], [])
    _earlier_run(tmp_path, ["a", "b"], "abc1234")
    # another package is fine when nothing of it is kept
    assert tr.earlier_tables(tmp_path, ["a", "b"], "fff0000") == ([], [])


@pytest.mark.parametrize("package_commit", ["fff0000", "abc1234-dirty"])
def test_results_of_another_package_are_not_mixed_in(tmp_path, package_commit):
    _earlier_run(tmp_path, ["a", "b"], "abc1234" if package_commit == "fff0000" else package_commit)
    with pytest.raises(SystemExit, match=r"made by another package: a \(abc1234"):
        tr.earlier_tables(tmp_path, ["b"], package_commit)


def test_each_kept_row_is_checked_by_its_own_package_commit(tmp_path):
    # a later run at fff0000 over every table was stopped before it wrote results.csv: settings.json names
    # fff0000 and a third table, results.csv still holds the rows abc1234 made of a and b
    _earlier_run(tmp_path, ["a", "b"], "abc1234")
    frame = pd.read_csv(tmp_path / "results.csv").assign(package_commit="abc1234")
    frame.to_csv(tmp_path / "results.csv", index=False)
    settings = json.loads((tmp_path / "settings.json").read_text())
    settings["code"]["package_commit"] = "fff0000"
    settings["tables"].append({"table": "c", "dataset": "c-0", "task": "binary", "train_rows": 80, "test_rows": 20})
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    with pytest.raises(SystemExit, match=r"made by another package: a \(abc1234\)"):
        tr.earlier_tables(tmp_path, ["b"], "fff0000")
    # at abc1234 a is kept; c has a size but no row: it is not carried over as a table without results
    rows, infos = tr.earlier_tables(tmp_path, ["b"], "abc1234")
    assert [i["table"] for i in infos] == ["a"] and {r["table"] for r in rows} == {"a"}
