"""Tables of docs/tabswift_vs_authors.md: the report ``tabswift_vs_ta.py`` writes."""

from __future__ import annotations

from .common import RESULTS, report_table, table


@table("tabswift-vs-ta")
def tabswift_vs_ta(sub: str = "") -> str:
    """The table ``examples/benchmarks/tabswift_vs_ta.py`` writes from its results.json (``--report-only``)."""
    return report_table(RESULTS / "tabswift_vs_ta" / sub / "results.md")


table("tabswift-vs-ta-released")(lambda: tabswift_vs_ta("released_24x192"))
