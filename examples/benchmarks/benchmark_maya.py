"""Protocol P1 benchmark of MAYA against GBM, CAT and NN_TORCH: ``examples/benchmarks/benchmark.py`` with MAYA's
defaults (4 datasets, seed 0, 600 s per fit, results in ``examples/benchmarks/results/maya_p1/results.jsonl``).

    python examples/benchmarks/benchmark_maya.py                       # the defaults below
    python examples/benchmarks/benchmark_maya.py --seeds 0,1,2         # any benchmark.py option overrides them
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/benchmarks/benchmark.py
from benchmark import main  # noqa: E402

MAYA_P1 = ["--datasets", "california_housing,telco_churn,adult,bank_churn", "--models", "MAYA,GBM,CAT,NN_TORCH",
           "--seeds", "0", "--time-limit", "600", "--out", "examples/benchmarks/results/maya_p1"]

if __name__ == "__main__":
    # the old script took --seed N; it is --seeds N (a list) now
    main(MAYA_P1 + ["--seeds" if a == "--seed" else a for a in sys.argv[1:]])
