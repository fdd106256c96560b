"""How each model's cost grows with training rows and with columns: fit time, predict time, peak memory.

    python examples/benchmarks/scaling.py                                    # the full grid (resumable)
    python examples/benchmarks/scaling.py --models MAYA,GBM --rows 1000,10000 --cols 10 --real ""
    python examples/benchmarks/scaling.py --retry-failed                     # run failures and timeouts again
    python examples/benchmarks/scaling.py --remeasure-memory --only adult    # run again points lacking the model's own peak
    python examples/benchmarks/scaling.py --again --models MAYA              # MAYA's points again, after a change to it
    python examples/benchmarks/scaling.py --report-only                      # rebuild the report from the results

What one point is: one model fitted the way a user fits it, alone, in its own child process --
``TabularPredictor(label, problem_type, path=<temp>).fit(train, hyperparameters={KEY: {}}, time_limit=T,
num_cpus=N, fit_weighted_ensemble=False)``, no ``tuning_data`` (AutoGluon holds out its own validation rows),
the model's defaults -- then ``predictor.persist()`` and one timed prediction of a query set.

The tasks:

* synthetic regression with a known structure (:func:`benchlib.scaling_point.synthetic`): standard-normal
  numeric columns ``x0 ... x{c-1}``, target ``y = x0 + 2 sin(x1) + x2 x3 + 0.5 |x4| + N(0, 0.5^2)``; the other
  columns are noise.  Rows axis: ``--rows`` (1,000 / 10,000 / 100,000 / 1,000,000) at ``--row-cols`` (10)
  columns; columns axis: ``--cols`` (10 / 100 / 500) at ``--col-rows`` (10,000) rows; a point on both axes is
  fitted once.  The data are generated inside the child (a million rows never pass through a file); the query
  set is 20,000 rows of the same generator with another seed.
* real tables at full size (``--real``: diamonds, adult, electricity), folders of ``data.csv.gz`` + ``meta.json``
  under ``--data-dir`` (default ``$AUTOGLUON_MAYA_DATASETS``), read with ``benchlib.protocol.load_dataset``; the
  query set, min(20,000, 20 % of the rows), is held out before the fit (seeded, stratified for classification).

The to-do list runs cheapest first (training rows x columns ascending), one fit at a time, so a run cut short
leaves a complete small end.  Each point records (one JSON line, keyed by task, model and time limit):

* ``status``: ``ok``; ``declined`` when AutoGluon fitted no model because a check of its own refused it
  (memory estimate, time left, a model constraint), with the reason it logged; ``failed`` with the error (an
  exception, or a child that died, e.g. killed out of memory); ``timeout`` when the hard limit
  (``--hard-timeout``, default 2 x time limit + 600 s) killed the child -- the phases it finished are kept;
* ``fit_s`` (the ``fit`` call's wall clock) and ``within_limit`` (``fit_s <= 1.05 x time limit``);
* ``epochs`` and ``s_per_epoch`` where the model reports them (``epochs_source`` says how): MAYA from its fit
  summary (epochs over its kept members, its training clock), TabM from the epoch lines it logs, RealMLP from
  pytabkit's training progress (AutoGluon's fit time of the model over the epochs); null for the trees and
  TabSwift (which has no epochs; its fine-tuning steps are in ``fine_tune_steps``);
* ``predict_s_per_1k``: seconds per 1,000 query rows, the model persisted in memory first;
* memory: the child's peak resident size (``/proc`` VmHWM) before the fit, after it and after the prediction,
  and the model's own estimate -- the number AutoGluon's pre-fit memory check computed
  (``model.estimate_memory_usage``, kept on the fitted model as ``_memory_usage_estimate``; where it is absent,
  the estimate called again on AutoGluon's internal training frame) -- with ``mem_estimate_ratio`` =
  estimate / fit peak.  The peak counts the whole child (imports, the data, the query set), which dominates at
  small sizes.  The model's own share is read apart: the resident size when AutoGluon calls the model's ``fit``
  and the peak during that call (the high-water mark is reset at the call), ``model_fit_increase_mb`` their
  difference and ``mem_estimate_model_ratio`` = estimate / that increase -- the quantity the estimate bounds;
* the score on the query rows: RMSE (regression), accuracy and ROC-AUC (classification);
* ``context_rows`` for MAYA and TabSwift (the training rows their predictions attend to), and which weights
  TabSwift loaded (``tabswift_weights``: released or shipped);
* the code version (``benchlib.provenance``) and the AutoGluon version.

Outputs in ``--out`` (default ``examples/benchmarks/results/scaling``): ``results.jsonl`` (a rerun skips the
points it has; ``--retry-failed`` runs failures and timeouts again, a decline is AutoGluon's answer and stays),
``logs/<task>__<model>__<limit>s.log`` (everything the child printed and AutoGluon logged; a rerun overwrites it),
and the report, rebuilt after every run and by ``--report-only``: ``results.csv`` (one row per point),
``results.md`` (a table per axis, then exponents: the least-squares slope of log cost on log rows per model,
over its ``ok`` points) and ``scaling.png`` (fit s, predict s per 1,000 rows and peak MB against training rows
on the rows axis, log-log, one line per model).  Points fitted with another ``--num-cpus`` or on another
machine belong in another ``--out``: the key does not tell them apart.

Cost: the default grid is 6 models x 9 tasks = 54 fits of up to 120 s each, plus the child's start-up, the
data, AutoGluon's preprocessing and the predictions, which at a million rows take minutes of their own: about
3 hours on 2 cores, and up to a few GB of memory at the largest points.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:  # benchlib sits beside this script
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.protocol import default_datasets_dir
from benchlib.results import Task, append_result, latest_by_key, read_results
from benchlib.runner import CHILD_GRACE_S
from benchlib.scaling_point import Table, query_rows, run_point
from benchlib.scaling_report import point_line, report

HERE = Path(__file__).resolve().parent
DEFAULT_MODELS = ("MAYA", "TABSWIFT", "GBM", "CAT", "TABM", "REALMLP")
DEFAULT_ROWS = (1_000, 10_000, 100_000, 1_000_000)
DEFAULT_COLS = (10, 100, 500)
DEFAULT_REAL = ("diamonds", "adult", "electricity")
DEFAULT_OUT = HERE / "results" / "scaling"
SEED = 0                # the training data's seed (synthetic: the query set takes SEED + 1)


# ---- the to-do list ------------------------------------------------------------------------------------------
def synthetic_name(rows: int, cols: int) -> str:
    return f"synthetic_r{rows}_c{cols}"


def synthetic_tables(rows: Sequence[int], cols: Sequence[int], row_cols: int, col_rows: int) -> list[Table]:
    """The rows axis (``rows`` at ``row_cols`` columns) and the columns axis (``cols`` at ``col_rows`` rows),
    a point on both once."""
    sizes = [(r, row_cols) for r in rows] + [(col_rows, c) for c in cols]
    unique = list(dict.fromkeys((int(r), int(c)) for r, c in sizes))
    return [Table(synthetic_name(r, c), "synthetic", r, c, "regression") for r, c in unique]


def real_table(data_dir: Path, name: str) -> Table | None:
    """A dataset folder's task and training size from its meta.json (the data read only where it lacks the
    counts); None when the folder is not there."""
    folder = Path(data_dir) / name
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    n, f = meta.get("n_rows"), meta.get("n_features")
    if n is None or f is None:
        from benchlib.protocol import load_dataset

        ds = load_dataset(folder)
        n, f = len(ds.data), ds.data.shape[1] - 1
    return Table(name, "real", int(n) - query_rows(int(n)), int(f), meta["task"])


def point_task(table: Table, model: str, time_limit: float) -> Task:
    """The result key of one point: (task, model, seed, config hash of the time limit)."""
    return Task(dataset=table.name, model=model, seed=SEED, time_limit=float(time_limit))


def todo_list(tables: Iterable[Table], models: Sequence[str], time_limit: float) -> list[tuple[Table, Task]]:
    """Every (table, model) point, cheapest first: rows x columns, then rows, the table, the models' order."""
    order = sorted(tables, key=lambda t: (t.cost, t.rows, t.name))
    return [(t, point_task(t, m, time_limit)) for t in order for m in models]


def pending(points: Iterable[tuple[Table, Task]], rows: Iterable[dict],
            retry_failed: bool = False, remeasure_memory: bool = False,
            again: bool = False) -> list[tuple[Table, Task]]:
    """The points with no result yet; with ``retry_failed`` also those whose latest result failed or timed out
    (a decline stays: it is AutoGluon's answer at that size, and would come again); with ``remeasure_memory``
    also the ``ok`` points that lack the model's own memory reading (``model_fit_peak_mb``); with ``again`` every
    point (after a change to the model: the latest result wins)."""
    done = latest_by_key(rows)
    out = []
    for table, task in points:
        row = done.get(task.key)
        if (again or row is None or (retry_failed and row.get("status") in ("failed", "timeout"))
                or (remeasure_memory and row.get("status") == "ok" and row.get("model_fit_peak_mb") is None)):
            out.append((table, task))
    return out


# ---- the command ---------------------------------------------------------------------------------------------
def _ints(text: str) -> list[int]:
    return [int(v.replace("_", "")) for v in text.split(",") if v.strip()]


def _names(text: str) -> list[str]:
    return [v.strip() for v in text.split(",") if v.strip()]


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="folder of dataset folders (default $AUTOGLUON_MAYA_DATASETS, else ./datasets)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="output folder (default examples/benchmarks/results/scaling)")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help=f"AutoGluon model keys (default {','.join(DEFAULT_MODELS)})")
    ap.add_argument("--rows", default=",".join(map(str, DEFAULT_ROWS)),
                    help=f"rows axis: training rows (default {','.join(map(str, DEFAULT_ROWS))})")
    ap.add_argument("--row-cols", type=int, default=10, help="columns of the rows axis (default 10)")
    ap.add_argument("--cols", default=",".join(map(str, DEFAULT_COLS)),
                    help=f"columns axis: column counts (default {','.join(map(str, DEFAULT_COLS))})")
    ap.add_argument("--col-rows", type=int, default=10_000, help="training rows of the columns axis (default 10000)")
    ap.add_argument("--real", default=",".join(DEFAULT_REAL),
                    help=f"real tables under --data-dir (default {','.join(DEFAULT_REAL)}; '' for none)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per fit (default 120)")
    ap.add_argument("--num-cpus", type=int, default=2, help="num_cpus of each fit (default 2)")
    ap.add_argument("--hard-timeout", type=float, default=None,
                    help=f"kill a child after this many seconds (default 2 x time limit + {CHILD_GRACE_S:.0f})")
    ap.add_argument("--only", default="", help="comma-separated task names (e.g. synthetic_r1000_c10,adult)")
    ap.add_argument("--retry-failed", action="store_true", help="run again the points that failed or timed out")
    ap.add_argument("--again", action="store_true",
                    help="run the selected points again even where they have a result (the latest result wins)")
    ap.add_argument("--remeasure-memory", action="store_true",
                    help="run again the ok points that lack the model's own memory reading (the latest result wins)")
    ap.add_argument("--report-only", action="store_true", help="no fitting: rebuild the report from results.jsonl")
    return ap.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    out = args.out
    if not args.report_only:
        data_dir = args.data_dir or default_datasets_dir()
        tables = synthetic_tables(_ints(args.rows), _ints(args.cols), args.row_cols, args.col_rows)
        for name in _names(args.real):
            t = real_table(data_dir, name)
            if t is None:
                print(f"{name}: no meta.json under {data_dir}; left out", flush=True)
            else:
                tables.append(t)
        if args.only:
            only = set(_names(args.only))
            tables = [t for t in tables if t.name in only]
        points = todo_list(tables, _names(args.models), args.time_limit)
        todo = pending(points, read_results(out / "results.jsonl"), retry_failed=args.retry_failed,
                       remeasure_memory=args.remeasure_memory, again=args.again)
        print(f"{len(points)} points requested, {len(points) - len(todo)} already in {out / 'results.jsonl'}, "
              f"{len(todo)} to run", flush=True)
        for i, (table, task) in enumerate(todo, 1):
            print(f"[{time.strftime('%H:%M:%S')}] {i}/{len(todo)} {table.name} ({table.rows:,} x {table.cols:,}) / "
                  f"{task.model} ...", flush=True)
            row = run_point(table, task, data_dir=data_dir, out=out, num_cpus=args.num_cpus,
                            hard_timeout=args.hard_timeout)
            append_result(out / "results.jsonl", row)
            print(point_line(row), flush=True)
    print(report(out, row_cols=args.row_cols, col_rows=args.col_rows))


if __name__ == "__main__":
    main()
