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
