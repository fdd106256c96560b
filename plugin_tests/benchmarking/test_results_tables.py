"""Every results table in README.md and docs/ is the table its raw results file gives
(``python -m autogluon_maya.benchmarking.tables`` rebuilds them; ``--check`` is this test)."""

import re

import pytest

from autogluon_maya.benchmarking import tables


def _docs():
    return [p for p in tables.doc_paths() if "<!-- table:" in p.read_text()]


def test_docs_hold_marked_tables():
    names = {m.group(2) for p in _docs() for m in tables.REGION.finditer(p.read_text())}
    assert {"maya-multiclass", "quick", "tabswift-zero-shot"} <= names, names


@pytest.mark.parametrize("path", _docs(), ids=lambda p: p.name)
def test_every_table_matches_its_results_file(path):
    stale = tables.differences(path.read_text())
    assert not stale, (f"{path.name}: {stale} differ from their results files; "
                       "run `python -m autogluon_maya.benchmarking.tables` and commit")


def test_a_hand_edited_figure_is_caught():
    text = tables.render("<!-- table:quick -->\n<!-- /table -->\n")
    assert tables.differences(text) == []
    edited = re.sub(r"\| 0\.8084 \|", "| 0.8184 |", text, count=1)  # MAYA's telco_churn score, typed over
    assert edited != text
    assert tables.differences(edited) == ["quick"]


def test_an_unknown_table_name_is_named():
    assert tables.differences("<!-- table:no-such-table -->\nx\n<!-- /table -->\n") == ["no-such-table"]
    with pytest.raises(KeyError, match="no-such-table"):
        tables.render("<!-- table:no-such-table -->\nx\n<!-- /table -->\n")


def test_a_candidate_pair_names_each_seed_and_pairs_rows_of_the_same_seed(tmp_path, monkeypatch):
    """``ensemble_pair(..., seeds=(0, 1))`` gives one row per (dataset, seed), each comparing the shipped and the
    candidate fit of that seed; with one seed the rows are named by dataset alone."""
    import json

    def row(seed, candidate, val):
        return {"dataset": "letter", "config": "ours", "status": "ok", "seed": seed, "task": "multiclass",
                "ours_add": '{"MAYA": {}}' if candidate else None, "val_score": val, "test_score": val - 0.01,
                "neural_weight": 0.5, "models": {"Maya_BAG_L1": {"val": val, "allotted_s": 100.0}}}

    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "results.jsonl").write_text("\n".join(json.dumps(r) for r in [
        row(0, False, 0.91), row(0, True, 0.92), row(1, True, 0.94), row(1, False, 0.93)]))
    monkeypatch.setattr(tables, "RESULTS", tmp_path)
    tables.rows.cache_clear()
    try:
        both = tables.ensemble_pair("f", "f", candidate=True, seeds=(0, 1))
        one = tables.ensemble_pair("f", "f", candidate=True, seeds=(1,))
    finally:
        tables.rows.cache_clear()
    assert "| letter, seed 0 | 0.9100 → 0.9200 |" in both and "| letter, seed 1 | 0.9300 → 0.9400 |" in both
    assert "| letter | 0.9300 → 0.9400 |" in one and "seed" not in one.split("\n", 2)[2]
