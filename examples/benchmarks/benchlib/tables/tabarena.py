"""Tables of docs/tabarena.md: the sections of the reports ``tabarena_compare.py`` and ``tabarena_budgets.py``
write."""

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
#: 300 s against 1,200 s per config (``tabarena_budgets.py``)
BUDGETS = RESULTS / "tabarena_12_1200s" / "budgets.md"
BUDGET_SECTIONS = {"tabarena-budgets": ("Test error", 0),
                   "tabarena-budgets-time": ("Time used", 0),
                   "tabarena-budgets-summary": ("Summary", 0)}

for _name, (_heading, _index) in SECTIONS.items():
    table(_name)(partial(report_table, TABARENA, _heading, _index))
for _name, (_heading, _index) in BUDGET_SECTIONS.items():
    table(_name)(partial(report_table, BUDGETS, _heading, _index))
