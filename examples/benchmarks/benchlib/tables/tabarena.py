"""Tables of docs/tabarena.md: the sections of the report ``tabarena_compare.py`` writes."""

from __future__ import annotations

from functools import partial

from .common import RESULTS, report_table, table

TABARENA = RESULTS / "tabarena_12" / "results.md"
#: table -> (the report's section, which table under it)
SECTIONS = {"tabarena-leaderboard": ("Leaderboard", 0),
            "tabarena-per-table": ("Test error per table", 0),
            "tabarena-ensembles": ("Simulated ensembles", 0),
            "tabarena-ensembles-per-table": ("Simulated ensembles", 1),
            "tabarena-ensemble-weights": ("Simulated ensembles", 2),
            "tabarena-additions": ("What each addition changes", 0)}

for _name, (_heading, _index) in SECTIONS.items():
    table(_name)(partial(report_table, TABARENA, _heading, _index))
