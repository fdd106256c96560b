"""The results tables of README.md and docs/*.md, built from the committed raw results.

    python examples/benchmarks/results_tables.py           # rewrite every marked table in place
    python examples/benchmarks/results_tables.py --check   # list the tables that differ from their files; exit 1 if any

A table in a Markdown file sits between ``<!-- table:NAME -->`` and ``<!-- /table -->``; ``NAME`` is one of
``TABLES``, a function that reads the raw results under ``examples/benchmarks/results/`` (benchmark
``results.jsonl`` rows, CSV and JSON files the scripts wrote) and returns the table's Markdown.  Nothing in
a marked region is typed by hand, so a figure in the docs is always the figure in its file; the test suite
runs ``check`` (``plugin_tests/benchmarking/test_results_tables.py``).

One module per document registers the tables it shows; ``common`` holds what they share (the registry,
reading and formatting the results, and the builders more than one document uses):

``benchmarks``           docs/benchmarks.md
``ensemble_benchmark``   docs/ensemble_benchmark.md (and README.md's ``ensemble-all``)
``experiments``          docs/experiments.md
``maya``                 docs/maya.md
``tabswift``             docs/tabswift.md
``tabswift_vs_authors``  docs/tabswift_vs_authors.md
``tabarena``             docs/tabarena.md

Figures: accuracy with 4 decimals (5 when the value is exact at 5, e.g. 0.97425 on letter's 4,000 test
rows), RMSE with 4 decimals below 10, 2 below 1,000, else whole numbers; a mean over seeds in brackets.
In a benchmark folder with several rows for one (dataset, model, seed), the latest ``ok`` row counts.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import List, Optional

from . import benchmarks, ensemble_benchmark, experiments, maya, tabarena, tabswift, tabswift_vs_authors  # noqa: F401
from .common import REGION, REPO, RESULTS, TABLES, markdown, table  # noqa: F401  (the package's interface)


def render(text: str) -> str:
    """``text`` with every marked region rebuilt; an unknown table name is a KeyError naming it."""
    def fill(m: "re.Match") -> str:
        name = m.group(2)
        if name not in TABLES:
            raise KeyError(f"unknown results table {name!r} (known: {', '.join(sorted(TABLES))})")
        return m.group(1) + TABLES[name]() + m.group(4)
    return REGION.sub(fill, text)


def differences(text: str) -> List[str]:
    """Names of the marked tables in ``text`` whose content differs from what their files give."""
    return [m.group(2) for m in REGION.finditer(text)
            if m.group(2) not in TABLES or TABLES[m.group(2)]() != m.group(3)]


def doc_paths(root: Path = REPO) -> List[Path]:
    """README.md and every docs/*.md: a table placed in a new page is checked without registering the page."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table differs")
    args = ap.parse_args(argv)
    stale = []
    for path in doc_paths():
        text = path.read_text()
        if args.check:
            stale += [f"{path.relative_to(REPO)}: {name}" for name in differences(text)]
        else:
            new = render(text)
            if new != text:
                path.write_text(new)
                print(f"rewrote tables in {path.relative_to(REPO)}")
    if stale:
        print("tables that differ from their results files:\n  " + "\n  ".join(stale), file=sys.stderr)
    return 1 if stale else 0

