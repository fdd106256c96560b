"""One point of the scaling benchmark (``examples/benchmarks/scaling.py``): one model fitted alone in a spawned
child process on one table, with its fit time, prediction time, peak memory and the model's own reports.

``run_point`` is the parent's side: it starts the child, receives each phase's results as they come, and turns a
hard timeout or a dead child into a result row.  ``measure`` is the child's side: the data (the synthetic task
is generated here, so that a million rows never pass through a file), the fit, the prediction and the readings.
The child's target (``_child``) lives in this module so that a spawned process imports it by name."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .provenance import code_version
from .results import Task
from .runner import CHILD_GRACE_S, _peak_rss_mb, proc_status_mb, start_child

QUERY_ROWS = 20_000     # the query set; a real table gives min(this, QUERY_SHARE of its rows)
QUERY_SHARE = 0.20
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


# ---- the task of one point -----------------------------------------------------------------------------------
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


# ---- one point in its own process: the child's side, then the parent's (run_point) ---------------------------
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
                except Exception:  # noqa: BLE001, S110  (a record that cannot be read is not kept)
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
    from sklearn.model_selection import train_test_split

    from .protocol import _safe_strat, load_dataset

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
    except Exception:  # noqa: BLE001, S110
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
    except Exception as e:  # noqa: BLE001  (a reading of the model never fails the point)
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
    except Exception as e:  # noqa: BLE001
        return {"mem_estimate_error": f"{type(e).__name__}: {e}"[:200]}


def _rss_mb() -> float | None:
    """This process's resident size now, in MB (Linux ``VmRSS``); None elsewhere."""
    return proc_status_mb("VmRSS")


def _reset_peak_rss() -> bool:
    """Reset this process's resident high-water mark to its resident size now (Linux: ``5`` written to
    ``/proc/self/clear_refs``); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def watch_model_fit(key: str) -> dict:
    """Read the model's own memory: the resident size when AutoGluon calls the model's ``fit`` and the peak
    during that call, which is what the model's pre-fit estimate claims to bound (AutoGluon compares the
    estimate with the memory available at that moment).  The model class's ``fit`` is wrapped in this child
    process only.  Resetting the high-water mark loses the process's earlier peak, so it is kept in
    ``peak_before_model_mb`` (:func:`whole_peak_mb` puts the two together).  Returns the dict the wrapper fills."""
    from autogluon.tabular.registry import ag_model_registry

    cls = ag_model_registry.key_to_cls(key)
    reading: dict = {}
    original = cls.fit

    def fit(self, *args, **kwargs):
        before = _peak_rss_mb()
        start = _rss_mb()
        if start is None or not _reset_peak_rss():
            return original(self, *args, **kwargs)
        try:
            return original(self, *args, **kwargs)
        finally:
            peak = _peak_rss_mb()
            reading.update(peak_before_model_mb=max(before, reading.get("peak_before_model_mb", 0.0)),
                           model_fit_start_mb=round(start, 1), model_fit_peak_mb=round(peak, 1),
                           model_fit_increase_mb=round(peak - start, 1))

    cls.fit = fit
    return reading


def whole_peak_mb(reading: dict) -> float:
    """The process's peak so far, counting the part before :func:`watch_model_fit` reset the high-water mark."""
    return max(_peak_rss_mb(), reading.get("peak_before_model_mb", 0.0))


def _score(predictor, query: pd.DataFrame, label: str, problem_type: str, send) -> dict:
    """Predict the query rows (model persisted first, so that loading is not timed) and score them."""
    from .p1 import prediction_scores

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
    watch = watch_model_fit(key)
    try:
        predictor = TabularPredictor(label=label, problem_type=table.problem_type, path=os.path.join(path, "ag"))
        t0 = time.perf_counter()
        try:
            predictor.fit(train, hyperparameters={key: spec["hyperparameters"]}, time_limit=spec["time_limit"],
                          num_cpus=spec["num_cpus"], fit_weighted_ensemble=False)
        except Exception as e:  # noqa: BLE001  (a fit that left no model is a result: declined or failed)
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
                   mem_fit_peak_mb=round(whole_peak_mb(watch), 1),
                   **{k: v for k, v in watch.items() if k != "peak_before_model_mb"})
        row.update(_epochs(key, model, capture))
        send({**row, "phase": "fit done"})
        row.update(_score(predictor, query, label, table.problem_type, send))
        row["mem_peak_mb"] = round(whole_peak_mb(watch), 1)
        row.update(_memory_estimate(predictor, model))  # after the peak is read: the fallback loads the train frame
        if row.get("mem_estimate_mb") and row.get("mem_fit_peak_mb"):
            row["mem_estimate_ratio"] = round(row["mem_estimate_mb"] / row["mem_fit_peak_mb"], 3)
        if row.get("mem_estimate_mb") and row.get("model_fit_increase_mb"):
            row["mem_estimate_model_ratio"] = round(row["mem_estimate_mb"] / row["model_fit_increase_mb"], 3)
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
    except Exception as e:  # noqa: BLE001
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
        except BaseException as e:  # noqa: BLE001  (everything, so that the parent always gets a reason)
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
    t0 = time.time()
    proc, recv = start_child(_child, spec, f"scaling-{table.name}-{task.model}")
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
