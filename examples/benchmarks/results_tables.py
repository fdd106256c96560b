"""Rebuild the results tables of README.md and docs/*.md from the committed results files.

    python examples/benchmarks/results_tables.py           # rewrite every marked table in place
    python examples/benchmarks/results_tables.py --check   # list the tables that differ from their files; exit 1 if any

Runs from any working directory.  How each table is built: ``benchlib/tables/`` (one module per document).
"""

import sys

from benchlib.tables import main

if __name__ == "__main__":
    sys.exit(main())
