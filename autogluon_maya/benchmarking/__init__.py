"""Benchmark runner logic behind ``examples/benchmarks/benchmark.py``, kept importable so that tests can reach it.

``results``  JSON-lines storage, result keys and resume (which fits are still to do).
``stats``    score matrices, PAMA, normalized scores; average ranks (bencheval) and the critical-difference
             tests (autorank: Friedman + Nemenyi, or Wilcoxon for two models).
``plots``    the report's figures (matplotlib, Agg backend).
``report``   ``results.md`` + figures from ``results.jsonl``.
``runner``   one fit per child process (protocol P1), with its metrics, timings and peak memory.
``ensemble`` report logic of the GBDT / + MAYA + TabSwift / + TabM + RealMLP ensemble benchmark.
``fit_clock`` an AutoGluon callback recording each model's wall-clock fit time.
``provenance`` the git commits every result row records (which code ran it).

Only ``results`` and ``stats`` are imported here: the rest pulls in matplotlib or AutoGluon.
"""

from .results import Task, append_result, config_hash, latest_by_key, read_results, result_key, todo
from .stats import CDResult, average_ranks, critical_difference, normalized_scores, pama, score_matrix

__all__ = [
    "Task", "append_result", "config_hash", "latest_by_key", "read_results", "result_key", "todo",
    "CDResult", "average_ranks", "critical_difference", "normalized_scores", "pama", "score_matrix",
]
