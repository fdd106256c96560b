"""``examples/benchmarks/tabarena_run.py``: a run over some of the tables or some of the methods adds to an
earlier run's results in the same folder, per (table, method); rows of the package's own methods are mixed only
when the same package made them, the registry methods' rows whatever commit wrote them.  ``--methods`` builds only
the named configs."""

import json

import pandas as pd
import pytest
import tabarena_run as tr


#: an error whose shortest repr pandas' default CSV parser does not give back (it reads 0.076056338028169)
ERROR = 0.07605633802816902


def _earlier_run(out, tables, package_commit, methods=("CatBoost", "MAYA")):
    """``results.csv`` and ``settings.json`` as a run over ``tables`` and ``methods`` wrote them."""
    rows = [{"table": t, "method": m, "config": f"{m}_c1_default_BAG_L1", "dataset": f"{t}-0", "status": "ok",
             "test_error": ERROR + i, "val_error": ERROR + i} for i, t in enumerate(tables) for m in methods]
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
    with pytest.raises(SystemExit, match=r"made by another package: a/MAYA \(abc1234"):
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
    with pytest.raises(SystemExit, match=r"made by another package: a/MAYA \(abc1234\)"):
        tr.earlier_tables(tmp_path, ["b"], "fff0000")
    # at abc1234 a is kept; c has a size but no row: it is not carried over as a table without results
    rows, infos = tr.earlier_tables(tmp_path, ["b"], "abc1234")
    assert [i["table"] for i in infos] == ["a"] and {r["table"] for r in rows} == {"a"}


# ---- per (table, method) ----------------------------------------------------------------------------------
def test_a_run_over_some_methods_keeps_the_other_methods_rows_of_the_same_table(tmp_path):
    _earlier_run(tmp_path, ["a", "b"], "abc1234", methods=("CatBoost", "LightGBM", "TabM", "MAYA"))
    rows, infos = tr.earlier_tables(tmp_path, ["a"], "abc1234", methods=("TabM", "MAYA"))
    kept = {(r["table"], r["method"]) for r in rows}
    # a's TabM and MAYA are refitted; a's trees and all of b stay
    assert kept == {("a", "CatBoost"), ("a", "LightGBM"), ("b", "CatBoost"), ("b", "LightGBM"), ("b", "TabM"),
                    ("b", "MAYA")}
    # sizes come from settings.json for b only: the run rebuilds a's task and its sizes
    assert [i["table"] for i in infos] == ["b"]
    assert {r["test_error"] for r in rows if r["table"] == "a"} == {ERROR}  # to the last digit


def test_a_registry_row_of_another_commit_is_kept_an_own_row_of_another_commit_is_refused(tmp_path):
    _earlier_run(tmp_path, ["a"], "abc1234", methods=("CatBoost", "TabM", "MAYA", "TabSwift"))
    # a run of MAYA at fff0000 keeps CatBoost and TabM (registry methods) of abc1234, but refuses TabSwift's row:
    # two versions of the package's models would sit in one results.csv
    with pytest.raises(SystemExit, match=r"made by another package: a/TabSwift \(abc1234\)") as refused:
        tr.earlier_tables(tmp_path, ["a"], "fff0000", methods=("MAYA",))
    assert "CatBoost" not in str(refused.value) and "TabM" not in str(refused.value)
    # refitting both own methods leaves only registry rows of abc1234: kept
    rows, _ = tr.earlier_tables(tmp_path, ["a"], "fff0000", methods=("MAYA", "TabSwift"))
    assert {r["method"] for r in rows} == {"CatBoost", "TabM"}
    assert {r["package_commit"] for r in rows} == {"abc1234"}


def test_a_run_of_registry_methods_alone_keeps_own_rows_of_any_commit(tmp_path):
    _earlier_run(tmp_path, ["a", "b"], "abc1234", methods=("CatBoost", "MAYA"))
    rows, infos = tr.earlier_tables(tmp_path, ["b"], "fff0000-dirty", methods=("CatBoost",))
    assert {(r["table"], r["method"]) for r in rows} == {("a", "CatBoost"), ("a", "MAYA"), ("b", "MAYA")}
    assert [i["table"] for i in infos] == ["a"]


def test_merged_rows_are_ordered_by_table_then_method_whichever_run_wrote_them():
    kept = [{"table": "b", "method": "MAYA"}, {"table": "a", "method": "CatBoost"}, {"table": "a", "method": "MAYA"}]
    new = [{"table": "a", "method": "TabM"}, {"table": "c", "method": "CatBoost"}]
    merged = tr.merged_rows(kept, new, ["a", "b", "c"])
    assert [(r["table"], r["method"]) for r in merged] == [("a", "CatBoost"), ("a", "TabM"), ("a", "MAYA"),
                                                           ("b", "MAYA"), ("c", "CatBoost")]


def test_the_table_order_keeps_earlier_tables_in_place_and_appends_new_ones(tmp_path):
    assert tr.table_order(tmp_path, ["x", "y"]) == ["x", "y"]
    _earlier_run(tmp_path, ["a", "b"], "abc1234")
    assert tr.table_order(tmp_path, ["c", "a"]) == ["a", "b", "c"]


def test_methods_are_parsed_to_labels_in_their_order():
    assert tr.parse_methods("maya, tabm") == ("TabM", "MAYA")
    assert tr.parse_methods(",".join(tr.METHODS)) == tr.METHODS
    with pytest.raises(ValueError, match="unknown RF"):
        tr.parse_methods("MAYA,RF")
    assert tr.parse_args(["--smoke"]).methods == tr.METHODS


@pytest.mark.parametrize("smoke", [False, True])
def test_methods_builds_only_the_named_configs_and_the_same_configs_as_the_full_list(tmp_path, smoke):
    pytest.importorskip("tabarena")
    build = {"time_limit": 300, "num_cpus": 2, "num_gpus": 0, "smoke": smoke, "parallel_folds": False,
             "models_dir": tmp_path / "models", "verbosity": 0}
    full = {e.name: e for e in tr.build_experiments(**build)}
    assert [tr.label_of(n) for n in full] == list(tr.METHODS)
    some = tr.build_experiments(**build, methods=("XGBoost", "MAYA"))
    assert [tr.label_of(e.name) for e in some] == ["XGBoost", "MAYA"]
    for e in some:  # the same name, hyperparameters (seeds included) and fold count as in the full list
        assert e._locals == full[e.name]._locals


def test_cached_results_are_those_of_the_fits_results_csv_reports(tmp_path):
    pytest.importorskip("tabarena")
    from tabarena.utils.cache import CacheFunctionPickle

    def cache(config, error):
        CacheFunctionPickle(cache_name="results", cache_path=tmp_path / "data" / config / "a-0" / "0_0",
                            verbose=False).save_cache({"framework": config, "metric_error": error})

    cache("CatBoost_c1", ERROR)
    cache("MAYA_c1", ERROR + 1)  # another fit than the row reports (e.g. the row came from another machine)
    rows = [{"table": "a", "method": m, "config": f"{m}_c1", "dataset": "a-0", "status": "ok", "test_error": ERROR}
            for m in ("CatBoost", "MAYA", "TabM")]  # TabM: no cache on this disk
    assert [r["framework"] for r in tr.cached_results(tmp_path, rows)] == ["CatBoost_c1"]
