"""The benchmark scripts' shared helpers (not part of the installed package: no model imports them).

A script run as ``python examples/benchmarks/X.py`` has this folder's parent first on ``sys.path`` and imports
``benchlib``; the test suite puts that folder on ``sys.path`` (``plugin_tests/conftest.py``).

``protocol`` protocol P1: dataset folders, the 64/16/20 split, the metric.
``p1``       P1 end to end: load, split, fit, score.
``results``  JSON-lines storage, result keys and resume (which fits are still to do).
``stats``    score matrices, PAMA, normalized scores; average ranks (bencheval) and the critical-difference
             tests (autorank: Friedman + Nemenyi, or Wilcoxon for two models).
``plots``    the report's figures (matplotlib, Agg backend).
``report``   ``results.md`` + figures from ``results.jsonl``.
``runner``   one fit per child process (protocol P1), with its metrics, timings and peak memory.
``ensemble`` report logic of the GBDT / + MAYA + TabSwift / + TabM + RealMLP ensemble benchmark.
``ensemble_store``  its result rows: settings, resume keys, file names, package versions.
``ensemble_report`` its report: ``results.md`` and the figures from those rows.
``scaling_point``  one point of the scaling benchmark (``scaling.py``): the synthetic task, the fit in a
             spawned child, its timings, memory and the model's reports.
``scaling_report`` its report: ``results.csv``, ``results.md``, ``scaling.png`` and the exponents.
``fit_clock`` an AutoGluon callback recording each model's wall-clock fit time.
``provenance`` the git commits every result row records (which code ran it).
``tables``   the results tables of README.md and docs/*.md, one module per document (``results_tables.py``).
``repo``     the repository checkout these helpers sit in.
``cpu_timing`` wall-clock and CPU time of calls, peak memory (the TabSwift speed scripts).
``tabswift_speed_report``, ``tabswift_vs_ta_report`` the reports of ``tabswift_speed.py`` and ``tabswift_vs_ta.py``.

Only ``results`` and ``stats`` are imported here: the rest pulls in matplotlib or AutoGluon.
"""

from .results import Task, append_result, config_hash, latest_by_key, read_results, result_key, todo
from .stats import CDResult, average_ranks, critical_difference, normalized_scores, pama, score_matrix

__all__ = [
    "Task", "append_result", "config_hash", "latest_by_key", "read_results", "result_key", "todo",
    "CDResult", "average_ranks", "critical_difference", "normalized_scores", "pama", "score_matrix",
]
