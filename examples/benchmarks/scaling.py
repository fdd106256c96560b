"""How each model's cost grows with training rows and with columns: fit time, predict time, peak memory.

    python examples/benchmarks/scaling.py                                    # the full grid (resumable)
    python examples/benchmarks/scaling.py --models MAYA,GBM --rows 1000,10000 --cols 10 --real ""
    python examples/benchmarks/scaling.py --retry-failed                     # run failures and timeouts again
    python examples/benchmarks/scaling.py --report-only                      # rebuild the report from the results

What one point is: one model fitted the way a user fits it, alone, in its own child process --
``TabularPredictor(label, problem_type, path=<temp>).fit(train, hyperparameters={KEY: {}}, time_limit=T,
num_cpus=N, fit_weighted_ensemble=False)``, no ``tuning_data`` (AutoGluon holds out its own validation rows),
the model's defaults -- then ``predictor.persist()`` and one timed prediction of a query set.

The tasks:

* synthetic regression with a known structure (:func:`synthetic`): standard-normal numeric columns
  ``x0 ... x{c-1}``, target ``y = x0 + 2 sin(x1) + x2 x3 + 0.5 |x4| + N(0, 0.5^2)``; the other columns are noise.
  Rows axis: ``--rows`` (1,000 / 10,000 / 100,000 / 1,000,000) at ``--row-cols`` (10) columns; columns axis:
  ``--cols`` (10 / 100 / 500) at ``--col-rows`` (10,000) rows; a point on both axes is fitted once.  The data
  are generated inside the child (a million rows never pass through a file); the query set is 20,000 rows of
  the same generator with another seed.
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
  small sizes;
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
import math
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from benchlib.protocol import default_datasets_dir  # noqa: E402
from benchlib.provenance import code_version  # noqa: E402
from benchlib.results import Task, append_result, latest_by_key, read_results  # noqa: E402
from benchlib.runner import CHILD_GRACE_S, _peak_rss_mb  # noqa: E402

DEFAULT_MODELS = ("MAYA", "TABSWIFT", "GBM", "CAT", "TABM", "REALMLP")
DEFAULT_ROWS = (1_000, 10_000, 100_000, 1_000_000)
DEFAULT_COLS = (10, 100, 500)
DEFAULT_REAL = ("diamonds", "adult", "electricity")
DEFAULT_OUT = HERE / "results" / "scaling"
QUERY_ROWS = 20_000     # the query set; a real table gives min(this, QUERY_SHARE of its rows)
QUERY_SHARE = 0.20
SEED = 0                # the training data's seed (synthetic: the query set takes SEED + 1)
NOISE_SD = 0.5
SIGNAL_COLS = ("x0", "x1", "x2", "x3", "x4")
TARGET = "y"
LIMIT_SLACK = 1.05      # within_limit: fit_s <= this x time limit
#: AutoGluon's refusals (its own checks), as opposed to a model that broke: the point is ``declined``
DECLINE_TYPES = ("NotEnoughMemoryError", "NotEnoughCudaMemoryError", "TimeLimitExceeded", "InsufficientTime",
                 "NoGPUError", "ConstraintViolationError")
#: phrases of the informational log lines that say why a model was skipped; a warning or an error is always kept
#: (AutoGluon raises NotEnoughMemoryError bare and logs the estimate behind it as a warning)
REASON_PHRASES = ("skipping", "skipped", "lack of time", "time limit exceeded", "constraint")
#: log lines that say nothing of the reason
NOISE_PHRASES = ("detailed traceback", "did not successfully train any models")


# ---- the data ------------------------------------------------------------------------------------------------
def signal(X: pd.DataFrame) -> pd.Series:
    """The noise-free target of :func:`synthetic`: it reads the columns in :data:`SIGNAL_COLS` and no other."""
    return X["x0"] + 2.0 * np.sin(X["x1"]) + X["x2"] * X["x3"] + 0.5 * X["x4"].abs()


def synthetic(n_rows: int, n_cols: int, seed: int) -> pd.DataFrame:
    """``n_cols`` standard-normal columns ``x0 ...`` and the target ``y`` = :func:`signal` + N(0, 0.5^2).

    Deterministic per seed; the rows are drawn row-major, so with one seed a smaller table is the first rows of
    a larger one with the same columns (the training sets of the rows axis are nested; the noise is not)."""
    if n_cols < len(SIGNAL_COLS):
        raise ValueError(f"the synthetic target reads {len(SIGNAL_COLS)} columns: n_cols={n_cols} is too few")
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.standard_normal((int(n_rows), int(n_cols))), columns=[f"x{i}" for i in range(n_cols)])
    X[TARGET] = signal(X) + rng.normal(0.0, NOISE_SD, size=len(X))
    return X


def query_rows(n_rows: int) -> int:
    """Rows a real table of ``n_rows`` holds out as its query set."""
    return min(QUERY_ROWS, round(QUERY_SHARE * n_rows))


# ---- the to-do list ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Table:
    """One task: its name (the result key's ``dataset``), the training rows and feature columns the fit gets."""

    name: str
    kind: str          # "synthetic" | "real"
    rows: int
    cols: int
    problem_type: str

    @property
    def cost(self) -> int:
        return self.rows * self.cols


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
            retry_failed: bool = False) -> list[tuple[Table, Task]]:
    """The points with no result yet; with ``retry_failed`` also those whose latest result failed or timed out
    (a decline stays: it is AutoGluon's answer at that size, and would come again)."""
    done = latest_by_key(rows)
    out = []
    for table, task in points:
        row = done.get(task.key)
        if row is None or (retry_failed and row.get("status") in ("failed", "timeout")):
            out.append((table, task))
    return out


# ---- one point, in the child ---------------------------------------------------------------------------------
class _Capture:
    """AutoGluon's log records kept in memory (message, logger, level, time), for a decline's reason and TabM's
    epoch lines; a ``logging.Handler`` made in the child, where logging is imported anyway."""

    def __init__(self):
        import logging

        class Handler(logging.Handler):
            def __init__(self, records):
                super().__init__(level=1)
                self.records = records

            def emit(self, record):
                try:
                    self.records.append((record.getMessage(), record.name, record.levelno, record.created))
                except Exception:
                    pass

        self.records: list[tuple] = []
        self.handler = Handler(self.records)


TABM_LOGGER = "autogluon.tabular.models.tabm._tabm_internal"


def _setup_logging(capture: _Capture) -> None:
    """AutoGluon logs at its default verbosity (to the point's log file, where the child's output goes); the
    capture listens on AutoGluon's logger, and at level 15 on the two loggers whose level-15 lines it reads:
    the trainer's (a model skipped for lack of time) and TabM's (one line per epoch)."""
    import logging

    logging.getLogger("autogluon").addHandler(capture.handler)
    for name in ("autogluon.tabular.trainer.abstract_trainer", TABM_LOGGER):
        logging.getLogger(name).setLevel(15)


def _load_data(spec: dict) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(training rows, query rows, label) of the point's task."""
    table = Table(**spec["table"])
    if table.kind == "synthetic":
        return (synthetic(table.rows, table.cols, spec["seed"]), synthetic(QUERY_ROWS, table.cols, spec["seed"] + 1),
                TARGET)
    from benchlib.protocol import _safe_strat, load_dataset
    from sklearn.model_selection import train_test_split

    ds = load_dataset(Path(spec["data_dir"]) / table.name)
    strat = _safe_strat(ds.data[ds.target]) if ds.is_classification else None
    train, query = train_test_split(ds.data, test_size=query_rows(len(ds.data)), random_state=spec["seed"],
                                    stratify=strat)
    return train.reset_index(drop=True), query.reset_index(drop=True), ds.target


def _no_model(predictor, capture: _Capture, err: BaseException) -> dict:
    """The status of a fit that left no model: ``declined`` (an AutoGluon check refused it) with the reason it
    logged, else ``failed`` with the error."""
    failures, skipped = [], {}
    try:
        trainer = predictor._trainer
        df = trainer.model_failures()
        failures = [(str(r["exc_type"]), str(r["exc_str"])) for _, r in df.iterrows()] if len(df) else []
        skipped = dict(getattr(trainer, "_models_skipped_by_constraint", {}) or {})
    except Exception:
        pass  # the trainer may not exist when the fit broke before it
    logged = [m.strip().splitlines()[0] for m, _, level, _ in capture.records
              if m.strip() and (level >= 30 or any(p in m.lower() for p in REASON_PHRASES))
              and not any(p in m.lower() for p in NOISE_PHRASES)]
    declined = (any(t in DECLINE_TYPES for t, _ in failures) or bool(skipped)
                or (not failures and any("lack of time" in m or "Skipping" in m for m in logged)))
    parts = [f"{t}: {s}" if s else t for t, s in failures] + [f"skipped: {v}" for v in skipped.values()]
    parts += [m for m in dict.fromkeys(logged) if m not in parts]
    reason = " | ".join(parts) or f"{type(err).__name__}: {err}"
    if declined:
        return {"status": "declined", "reason": reason[:1000]}
    return {"status": "failed", "error": reason[:1000], "traceback": traceback.format_exc()[-3000:]}


def _epochs(key: str, model, capture: _Capture) -> dict:
    """Epochs and seconds per epoch where the model reports them; {} elsewhere.  Never raises."""
    try:
        if key == "MAYA":
            members = (getattr(model, "_fit_summary", None) or {}).get("members") or []
            epochs = sum(int(m.get("epochs") or 0) for m in members if isinstance(m, dict))
            seconds = ((getattr(model, "_fit_info", None) or {}).get("stop") or {}).get("seconds")
            if epochs and seconds:
                # the members train one after another or side by side: the fit's training clock over all their
                # epochs is the seconds one epoch of the fit costs
                return {"epochs": epochs, "s_per_epoch": seconds / epochs, "epochs_source": "MAYA fit summary",
                        "maya_members": len(members)}
        elif key == "TABM":
            # TabM logs a separator line before its epoch loop and one "(val) <score>" line after each epoch
            lines = [(m, t) for m, name, _, t in capture.records if name == TABM_LOGGER]
            starts = [t for m, t in lines if m.startswith("-----")]
            ends = [t for m, t in lines if m.startswith("(val)")]
            if ends:
                start = starts[-1] if starts else None
                return {"epochs": len(ends), "s_per_epoch": (ends[-1] - start) / len(ends) if start else None,
                        "epochs_source": "TabM log"}
        elif key == "REALMLP":
            progress = model.model.alg_interface_.model.progress  # pytabkit's TabNNModule
            epochs = int(progress.epoch)
            if epochs:
                return {"epochs": epochs, "s_per_epoch": float(model.fit_time) / epochs,
                        "epochs_source": "pytabkit progress; AutoGluon's fit time of the model / epochs"}
    except Exception as e:
        return {"epochs_error": f"{type(e).__name__}: {e}"[:200]}
    return {}


def _memory_estimate(predictor, model) -> dict:
    """The model's own memory estimate of its fit, in MB: the value AutoGluon's pre-fit check computed (kept on
    the model), else the estimate called again on AutoGluon's internal training frame (its feature generator's
    output, less the rows it held out), which is what the check is given."""
    try:
        value, source = getattr(model, "_memory_usage_estimate", None), "computed by AutoGluon before the fit"
        if value is None:
            X, y = predictor.load_data_internal("train")
            value, source = model.estimate_memory_usage(X=X, y=y), "estimate_memory_usage on the internal train frame"
        if value is None:
            return {}
        return {"mem_estimate_mb": round(float(value) / 2**20, 1), "mem_estimate_source": source}
    except Exception as e:
        return {"mem_estimate_error": f"{type(e).__name__}: {e}"[:200]}


def _score(predictor, query: pd.DataFrame, label: str, problem_type: str, send) -> dict:
    """Predict the query rows (model persisted first, so that loading is not timed) and score them."""
    from benchlib.p1 import prediction_scores

    predictor.persist()
    X, y = query.drop(columns=[label]), query[label]
    send({"phase": "predict"})
    t0 = time.perf_counter()
    if problem_type == "regression":
        pred, proba = predictor.predict(X), None
    else:
        proba = predictor.predict_proba(X)
    predict_s = time.perf_counter() - t0
    if proba is not None:
        pred = predictor.predict_from_proba(proba)
    scores = prediction_scores(problem_type, y, pred, proba,
                               predictor.positive_class if problem_type == "binary" else None)
    return {"predict_s_per_1k": 1000.0 * predict_s / max(len(X), 1), "query_rows": len(X), **scores}


def measure(spec: dict, send) -> dict:
    """One point: data, fit, prediction, the model's reports.  ``send(dict)`` hands the parent each phase's
    results as soon as they exist, so a child killed later keeps them."""
    from autogluon.tabular import TabularPredictor
    from autogluon.tabular import __version__ as ag_version

    import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)

    capture = _Capture()
    _setup_logging(capture)
    table, key = Table(**spec["table"]), spec["model"]
    train, query, label = _load_data(spec)
    row = {"autogluon_version": ag_version, "mem_before_fit_mb": round(_peak_rss_mb(), 1)}
    send({**row, "phase": "fit"})
    path = spec["path"]
    try:
        predictor = TabularPredictor(label=label, problem_type=table.problem_type, path=os.path.join(path, "ag"))
        t0 = time.perf_counter()
        try:
            predictor.fit(train, hyperparameters={key: spec["hyperparameters"]}, time_limit=spec["time_limit"],
                          num_cpus=spec["num_cpus"], fit_weighted_ensemble=False)
        except Exception as e:
            row.update(_no_model(predictor, capture, e))
            row["fit_s"] = round(time.perf_counter() - t0, 2)
            return row
        fit_s = time.perf_counter() - t0
        name = predictor.model_names()[0]
        model = predictor._trainer.load_model(name)
        trainer = predictor._trainer
        row.update(fit_s=round(fit_s, 2), within_limit=fit_s <= LIMIT_SLACK * spec["time_limit"], ag_model=name,
                   model_fit_s=round(float(model.fit_time), 2) if model.fit_time is not None else None,
                   n_train_internal=getattr(trainer, "_num_rows_train", None),
                   n_val_internal=getattr(trainer, "_num_rows_val", None),
                   mem_fit_peak_mb=round(_peak_rss_mb(), 1))
        row.update(_epochs(key, model, capture))
        send({**row, "phase": "fit done"})
        row.update(_score(predictor, query, label, table.problem_type, send))
        row["mem_peak_mb"] = round(_peak_rss_mb(), 1)
        row.update(_memory_estimate(predictor, model))  # after the peak is read: the fallback loads the train frame
        if row.get("mem_estimate_mb") and row.get("mem_fit_peak_mb"):
            row["mem_estimate_ratio"] = round(row["mem_estimate_mb"] / row["mem_fit_peak_mb"], 3)
        row.update(_context_rows(key, model))
        row["cuda_available"] = bool(sys.modules["torch"].cuda.is_available()) if "torch" in sys.modules else None
        row["status"] = "ok"
        return row
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _context_rows(key: str, model) -> dict:
    """The training rows MAYA or TabSwift attend to when they predict; {} for the other models."""
    try:
        if key == "MAYA":
            return {"context_rows": (getattr(model, "_fit_info", None) or {}).get("context_rows")}
        if key == "TABSWIFT":
            summary = getattr(model, "_fit_summary", None) or {}
            decision = summary.get("fine_tune_decision") or {}
            return {"context_rows": summary.get("context_rows"), "fine_tune_steps": decision.get("steps_run"),
                    "tabswift_weights": (summary.get("weights") or {}).get("source")}
    except Exception as e:
        return {"context_rows_error": f"{type(e).__name__}: {e}"[:200]}
    return {}


def _child(conn, spec: dict) -> None:
    """The spawned child: everything it prints goes to the point's log file; every message to the parent is a
    dict, the last one with ``final``."""
    with open(spec["log_path"], "w", buffering=1) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            result = measure(spec, conn.send)
        except BaseException as e:  # everything, so that the parent always gets a reason
            result = {"status": "failed", "error": f"{type(e).__name__}: {e}"[:1000],
                      "traceback": traceback.format_exc()[-3000:]}
        sys.stdout.flush()
        sys.stderr.flush()
    conn.send({**result, "final": True})
    conn.close()


def run_point(table: Table, task: Task, *, data_dir: Path, out: Path, num_cpus: int,
              hard_timeout: float | None = None) -> dict:
    """Measure one point in a spawned child and return its result row; never raises for a failed fit."""
    hard_timeout = hard_timeout or 2 * task.time_limit + CHILD_GRACE_S
    log_path = out / "logs" / f"{table.name}__{task.model}__{task.time_limit:g}s.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    row = {"dataset": table.name, "model": task.model, "seed": task.seed, "config": task.config,
           "task": table.name, "kind": table.kind, "problem_type": table.problem_type, "rows": table.rows,
           "cols": table.cols, "time_limit": task.time_limit, "num_cpus": num_cpus, "hard_timeout_s": hard_timeout,
           "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "log": str(log_path.relative_to(out)),
           **code_version(out=out)}
    spec = {"table": asdict(table), "model": task.model, "seed": task.seed, "time_limit": task.time_limit,
            "num_cpus": num_cpus, "hyperparameters": dict(task.hyperparameters), "data_dir": str(data_dir),
            "log_path": str(log_path),
            # the predictor's folder, made and removed here: a killed child leaves it behind
            "path": tempfile.mkdtemp(prefix=f"scaling_{table.name}_{task.model}_")}
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, spec), name=f"scaling-{table.name}-{task.model}")
    t0 = time.time()
    proc.start()
    send.close()
    got: dict = {}
    try:
        while True:
            left = hard_timeout - (time.time() - t0)
            if left <= 0 or not recv.poll(left):
                proc.kill()
                got.update(status="timeout", error=f"hard timeout after {hard_timeout:.0f} s, in phase "
                                                   f"{got.get('phase', 'start')!r}")
                break
            try:
                msg = recv.recv()
            except EOFError:
                proc.join(timeout=10)
                code = proc.exitcode
                why = " (killed: out of memory?)" if code == -9 else ""
                got.update(status="failed", error=f"child process died, exit code {code}{why}, in phase "
                                                  f"{got.get('phase', 'start')!r} (its output: {row['log']})")
                break
            got.update(msg)
            if msg.get("final"):
                break
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()
        recv.close()
        shutil.rmtree(spec["path"], ignore_errors=True)
    got.pop("final", None)
    if got.get("status") == "ok":
        got.pop("phase", None)  # kept where the child stopped early: the phase it reached
    row.update(got)
    row["wall_s"] = round(time.time() - t0, 1)
    return row


# ---- the report ----------------------------------------------------------------------------------------------
COSTS = (("fit_s", "fit s"), ("predict_s_per_1k", "predict s / 1k rows"), ("mem_peak_mb", "peak MB"))


def results_frame(rows: Iterable[dict]) -> pd.DataFrame:
    """The latest row of every point, flat (nested values and tracebacks left to the JSONL), cheapest first;
    the columns the report reads are there even with no rows."""
    latest = list(latest_by_key(rows).values())
    flat = [{k: v for k, v in r.items() if k != "traceback" and not isinstance(v, (dict, list))} for r in latest]
    df = pd.DataFrame(flat)
    for col in ("task", "model", "kind", "status", "rows", "cols", "time_limit", *(c for c, _ in COSTS)):
        if col not in df:
            df[col] = pd.Series(dtype=object if col in ("task", "model", "kind", "status") else float)
    df["cost"] = df["rows"] * df["cols"]
    return df.sort_values(["cost", "rows", "task", "model"], kind="mergesort").reset_index(drop=True)


def fit_exponent(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Least-squares slope of log y on log x over the positive pairs; None with fewer than 2 distinct x."""
    pts = [(float(a), float(b)) for a, b in zip(x, y)
           if a is not None and b is not None and np.isfinite(a) and np.isfinite(b) and a > 0 and b > 0]
    if len({a for a, _ in pts}) < 2:
        return None
    lx, ly = np.log([a for a, _ in pts]), np.log([b for _, b in pts])
    return float(np.polyfit(lx, ly, 1)[0])


def exponents(df: pd.DataFrame, axis: str = "rows") -> pd.DataFrame:
    """Per model, the slope of each cost in :data:`COSTS` on ``axis`` over the model's ``ok`` points of ``df``
    (one axis's points), with the sizes they span and how many of them used at least 90 % of the time limit
    (there the fit time measures the limit, not the model)."""
    out = []
    ok = df[df["status"] == "ok"]
    for model, g in ok.groupby("model", sort=False):
        sizes = sorted({int(v) for v in g[axis]})
        rec = {"model": model, "points": len(g), "sizes": sizes,
               "at_limit": int((g["fit_s"] >= 0.9 * g["time_limit"]).sum())}
        for col, _ in COSTS:
            rec[col] = fit_exponent(g[axis], g[col]) if col in g else None
        out.append(rec)
    return pd.DataFrame(out)


def _finite(v) -> float | None:
    """``v`` as a float when it is a finite number (numpy's included), else None."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) and not isinstance(v, (bool, str)) else None


def _num(v, fmt: str = "{:.3g}") -> str:
    f = _finite(v)
    return "—" if f is None else fmt.format(f)


def _fit_cell(r: dict) -> str:
    fit_s, limit = _finite(r.get("fit_s")), _finite(r.get("time_limit"))
    if fit_s is None:
        return f"— ({_num(limit, '{:g}')})"
    over = ", over" if r.get("status") == "ok" and limit and fit_s > LIMIT_SLACK * limit else ""
    return f"{fit_s:.1f} ({_num(limit, '{:g}')}{over})"


def _score_cell(r: dict) -> str:
    rmse, acc, auc = (_finite(r.get(k)) for k in ("rmse", "accuracy", "roc_auc"))
    if rmse is not None:
        return f"RMSE {rmse:.4g}"
    if acc is not None:
        return f"acc {acc:.4f}" + (f", AUC {auc:.4f}" if auc is not None else "")
    return "—"


def _table_md(df: pd.DataFrame) -> tuple[str, list[str]]:
    """A results table, and the notes on its points that did not end ``ok`` (reason, error, phase)."""
    from benchlib.tables.common import markdown

    body, notes = [], []
    for _, r in df.iterrows():
        r = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in r.items()}
        status = str(r.get("status"))
        if status != "ok":
            notes.append(f"- {r['task']} / {r['model']}: **{status}** — {r.get('reason') or r.get('error') or '?'}")
        ctx = r.get("context_rows")
        body.append([r["task"], f"{int(r['rows']):,}", f"{int(r['cols']):,}", r["model"], status, _fit_cell(r),
                     _num(r.get("epochs"), "{:.0f}"), _num(r.get("s_per_epoch")), _num(r.get("predict_s_per_1k")),
                     _num(r.get("mem_peak_mb"), "{:,.0f}"), _num(r.get("mem_estimate_ratio"), "{:.2f}"),
                     _score_cell(r), _num(ctx, "{:,.0f}")])
    header = ["task", "rows", "cols", "model", "status", "fit s (limit)", "epochs", "s / epoch",
              "predict s / 1k rows", "peak MB", "estimate / fit peak", "score on the query rows", "context rows"]
    return markdown(header, body, align="lrrll" + "r" * 8), notes


def _exponent_md(ex: pd.DataFrame, axis: str) -> str:
    from benchlib.tables.common import markdown

    body = []
    for _, r in ex.iterrows():
        sizes = r["sizes"]
        span = f"{sizes[0]:,}–{sizes[-1]:,} ({len(sizes)} sizes)" if len(sizes) > 1 else f"{sizes[0]:,} (1 size)"
        body.append([r["model"], *(_num(r[c], "{:.2f}") for c, _ in COSTS), span, str(r["at_limit"])])
    return markdown(["model", *(f"{label} exponent" for _, label in COSTS), f"over {axis}",
                     "points at ≥ 90 % of the limit"], body)


def plot(df: pd.DataFrame, path: Path, title: str) -> None:
    """Three log-log panels, fit s, predict s per 1,000 rows and peak MB against training rows, one line per
    model over its ``ok`` points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = df[df["status"] == "ok"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, (col, label) in zip(axes, COSTS):
        for i, (model, g) in enumerate(ok.groupby("model", sort=False)):
            g = g.dropna(subset=[col]).sort_values("rows")
            g = g[g[col] > 0]
            if len(g):
                ax.plot(g["rows"], g[col], marker="o", color=f"C{i % 10}", label=model)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, which="both")
        if ok.empty:
            ax.text(0.5, 0.5, "no ok points yet", ha="center", va="center", transform=ax.transAxes)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def report(out: Path, row_cols: int = 10, col_rows: int = 10_000) -> str:
    """Rebuild ``results.csv``, ``results.md`` and ``scaling.png`` from ``results.jsonl``; returns the Markdown."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    df = results_frame(read_results(out / "results.jsonl"))
    if not df.empty:
        df.to_csv(out / "results.csv", index=False)
    synth = df[df["kind"] == "synthetic"]
    rows_axis, cols_axis = synth[synth["cols"] == row_cols], synth[synth["rows"] == col_rows]
    other = synth[(synth["cols"] != row_cols) & (synth["rows"] != col_rows)]
    real = df[df["kind"] == "real"]
    title = f"Rows axis: synthetic regression, {row_cols} columns"
    plot(rows_axis, out / "scaling.png", title + " (ok points)")

    lines = ["# Scaling with rows and columns", ""]
    if df.empty:
        lines.append("No results yet.")
    else:
        def values(col: str, fmt: str) -> str:
            vals = sorted(set(df[col].dropna())) if col in df else []
            return ", ".join(fmt.format(v) for v in vals) or "—"

        counts = ", ".join(f"{n} {s}" for s, n in df["status"].value_counts().items())
        lines += [(f"{len(df)} points ({counts}); time limit {values('time_limit', '{:g} s')}; num_cpus "
                   f"{values('num_cpus', '{:.0f}')}; package commit {values('package_commit', '{}')}."), "",
                  ("One fit per point in its own process, the model at its defaults, no tuning data (AutoGluon holds "
                   "out its validation rows); predict time per 1,000 of the query rows after `persist()`; peak MB "
                   "is the process's resident high-water mark (imports and data included); estimate / fit peak "
                   "divides the model's own pre-fit memory estimate by the peak at the end of the fit.  "
                   "s / epoch: the model's training clock over its epochs (see `epochs_source` in results.csv)."), ""]
        sections = [(title, rows_axis), (f"Columns axis: synthetic regression, {col_rows:,} rows", cols_axis),
                    ("Other synthetic points", other), ("Real tables (full size, query rows held out)", real)]
        for heading, part in sections:
            if part.empty:
                continue
            table, notes = _table_md(part)
            lines += [f"## {heading}", "", table]
            if notes:
                lines += notes + [""]
        for heading, part, axis in ((f"Exponents over training rows ({row_cols} columns)", rows_axis, "rows"),
                                    (f"Exponents over columns ({col_rows:,} rows)", cols_axis, "cols")):
            ex = exponents(part, axis)
            if ex.empty:
                continue
            lines += [f"## {heading}", "",
                      (f"Least-squares slope of log cost on log {axis} over each model's ok points (cost ∝ "
                       f"{axis}^exponent); a fit time at the limit measures the limit, not the model."), "",
                      _exponent_md(ex, axis)]
        lines += ["![fit s, predict s per 1,000 rows and peak MB against training rows](scaling.png)", ""]
    text = "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    return text


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
        todo = pending(points, read_results(out / "results.jsonl"), retry_failed=args.retry_failed)
        print(f"{len(points)} points requested, {len(points) - len(todo)} already in {out / 'results.jsonl'}, "
              f"{len(todo)} to run", flush=True)
        for i, (table, task) in enumerate(todo, 1):
            print(f"[{time.strftime('%H:%M:%S')}] {i}/{len(todo)} {table.name} ({table.rows:,} x {table.cols:,}) / "
                  f"{task.model} ...", flush=True)
            row = run_point(table, task, data_dir=data_dir, out=out, num_cpus=args.num_cpus,
                            hard_timeout=args.hard_timeout)
            append_result(out / "results.jsonl", row)
            detail = row.get("reason") or row.get("error") or ""
            print(f"    {row['status']}: fit {row.get('fit_s')} s, predict {_num(row.get('predict_s_per_1k'))} s/1k, "
                  f"peak {row.get('mem_peak_mb')} MB {_score_cell(row)} {detail[:200]}", flush=True)
    print(report(out, row_cols=args.row_cols, col_rows=args.col_rows))


if __name__ == "__main__":
    main()
