"""One benchmark fit under protocol P1, run in a fresh child process, and the loop over the to-do list.

Why a child process per fit (``multiprocessing``, spawn): a crash (segfault, out-of-memory kill)
becomes a recorded failure instead of ending the run; the peak memory read in the child belongs to
that fit alone; and nothing (threads, caches, leaked memory) carries over from one model to the next.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import resource
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Iterable, List, Optional

from .provenance import code_version
from .results import Task, _jsonable, append_result, read_results, todo

CHILD_GRACE_S = 600.0  # hard timeout = 3 x time limit + this: AutoGluon's time limit is soft


def proc_status_mb(field: str) -> Optional[float]:
    """A memory line of this process's ``/proc/self/status`` (``VmHWM``, ``VmRSS``, ...) in MB; None where
    there is no such file (not Linux) or line."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def _peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB.

    On Linux ``VmHWM`` from /proc is used: ``ru_maxrss`` of a spawned child also includes the parent's
    resident size at fork time (the kernel carries the high-water mark across exec), which would hide
    a small fit behind the driver's own memory.  Elsewhere ``ru_maxrss`` (bytes on macOS, KB else)."""
    peak = proc_status_mb("VmHWM")
    if peak is not None:
        return peak
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024.0


def start_child(target: Callable, spec: dict, name: str):
    """``target(conn, spec)`` started in a spawned child process; returns the process and the receiving end of
    its one-way pipe."""
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=target, args=(send, spec), name=name)
    proc.start()
    send.close()
    return proc, recv


def _fit(spec: dict) -> dict:
    """Protocol P1 for one model; runs in the child.  Returns the measured part of a result row."""
    from autogluon.tabular import __version__ as ag_version

    from .p1 import p1_data, p1_fit

    data = p1_data(Path(spec["data_dir"]) / spec["dataset"], seed=spec["seed"], max_rows=spec["max_rows"])
    row = {"n_rows": len(data.dataset.data), "n_train": len(data.train), "n_val": len(data.val),
           "n_test": len(data.test), "autogluon_version": ag_version, "mem_before_fit_mb": round(_peak_rss_mb(), 1)}
    path = tempfile.mkdtemp(prefix=f"bench_{data.name}_{spec['model']}_")
    try:
        ag_key = spec["model"].split("@")[0]  # "KEY@variant": same AutoGluon model, another configuration
        fit = p1_fit(data, {ag_key: spec["hyperparameters"]}, time_limit=spec["time_limit"],
                     num_cpus=spec["num_cpus"], num_gpus=0, path=path)
        row["fit_s"] = round(fit.fit_s, 2)
        row["mem_fit_peak_mb"] = round(_peak_rss_mb(), 1)
        row["ru_maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
        name = fit.model_name
        row["ag_model"] = name
        row.update(fit.score(name))
        row.update(_model_summary(fit.predictor, name))
        row["mem_peak_mb"] = round(_peak_rss_mb(), 1)
        row["status"] = "ok"
        return row
    finally:
        shutil.rmtree(path, ignore_errors=True)


SUMMARY_KEYS = ("epochs", "best_epoch", "batch_size", "stop_reason", "members_stop")


def _model_summary(predictor, name: str) -> dict:
    """What the model says of its own fit (MAYA's epochs, stop reason, members), so a result can be
    explained without refitting; empty for models that keep no summary (also bagged models, whose
    summaries live in their folds)."""
    try:
        summary = getattr(predictor._trainer.load_model(name), "_fit_summary", None) or {}
        out = {f"fit_{k}": summary[k] for k in SUMMARY_KEYS if k in summary}
        members = summary.get("members")
        if isinstance(members, list):  # MAYA: one dict per network; TabSwift: "members" is a count
            keys = ("num_layers", "epochs", "best_epoch", "stop_reason", "train_seconds")
            out["fit_members"] = [{k: m[k] for k in keys if k in m} for m in members if isinstance(m, dict)]
        elif members is not None:
            out["fit_members"] = members
        decision = summary.get("fine_tune_decision")
        if isinstance(decision, dict):  # TabSwift: fine-tuned or not, the rule, steps, both validation scores
            out["fit_fine_tune"] = {k: decision.get(k) for k in ("fine_tuned", "rule", "steps_run", "best_step",
                                                                  "zero_shot_val_score", "fine_tuned_val_score")}
        out = _jsonable(out)
        json.dumps(out)  # a row must stay writable
        return out
    except Exception as e:  # a summary is a courtesy: it must never cost the fit's result
        return {"fit_summary_error": f"{type(e).__name__}: {e}"[:200]}


def _child(conn, spec: dict) -> None:
    try:
        result = _fit(spec)
    except BaseException as e:  # everything, so that the parent always gets a reason
        result = {"status": f"error: {type(e).__name__}: {e}"[:500], "traceback": traceback.format_exc()[-4000:]}
    conn.send(result)
    conn.close()


def dataset_task(data_dir: str | Path, dataset: str) -> Optional[str]:
    """The task from the dataset's meta.json, without loading the data (the parent stays small)."""
    try:
        return json.loads((Path(data_dir) / dataset / "meta.json").read_text())["task"]
    except (OSError, KeyError, ValueError):
        return None


def run_task(task: Task, data_dir: str | Path, num_cpus: int = 2, hard_timeout: Optional[float] = None,
             results_dir: Optional[Path] = None) -> dict:
    """Fit ``task`` in a spawned child and return its full result row; never raises for a failed fit.
    ``results_dir``: where the rows go, counted as results rather than code in the row's code version."""
    row = {"dataset": task.dataset, "model": task.model, "seed": int(task.seed), "config": task.config,
           "task": dataset_task(data_dir, task.dataset), "time_limit": float(task.time_limit),
           "max_rows": task.max_rows, "hyperparameters": task.hyperparameters, "num_cpus": num_cpus,
           "started": time.strftime("%Y-%m-%dT%H:%M:%S"), **code_version(out=results_dir)}
    spec = {"data_dir": str(data_dir), "dataset": task.dataset, "model": task.model, "seed": int(task.seed),
            "time_limit": float(task.time_limit), "max_rows": task.max_rows,
            "hyperparameters": task.hyperparameters, "num_cpus": num_cpus}
    hard_timeout = hard_timeout or 3 * float(task.time_limit) + CHILD_GRACE_S
    t0 = time.time()
    proc, recv = start_child(_child, spec, f"bench-{task.dataset}-{task.model}")
    try:
        if recv.poll(hard_timeout):
            try:
                result = recv.recv()
            except EOFError:
                proc.join(timeout=10)
                result = {"status": f"error: child process died (exit code {proc.exitcode})"}
        else:
            result = {"status": f"error: hard timeout after {hard_timeout:.0f}s"}
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()
        recv.close()
    row.update(result)
    row["wall_s"] = round(time.time() - t0, 1)
    return row


def run_benchmark(tasks: Iterable[Task], data_dir: str | Path, results_path: str | Path, num_cpus: int = 2,
                  retry_failed: bool = False, hard_timeout: Optional[float] = None,
                  log: Callable[[str], None] = print, redo_before: Optional[str] = None) -> List[dict]:
    """Run every task not yet in ``results_path``, appending each row as soon as it is done."""
    tasks = list(tasks)
    pending = todo(tasks, read_results(results_path), retry_failed=retry_failed, redo_before=redo_before)
    log(f"{len(tasks)} fits requested, {len(tasks) - len(pending)} already in {results_path}, {len(pending)} to run")
    rows = []
    for i, task in enumerate(pending, 1):
        log(f"[{time.strftime('%H:%M:%S')}] {i}/{len(pending)} {task.dataset} / {task.model} / seed {task.seed} "
            f"(config {task.config}) ...")
        row = run_task(task, data_dir, num_cpus=num_cpus, hard_timeout=hard_timeout,
                       results_dir=Path(results_path).parent)
        append_result(results_path, row)
        rows.append(row)
        scores = ", ".join(f"{k} {row[k]:.4f}" for k in ("accuracy", "roc_auc", "rmse")
                           if isinstance(row.get(k), float))
        log(f"    {row['status'][:200]}" + (f": {scores}, fit {row.get('fit_s')} s, "
                                            f"peak {row.get('mem_fit_peak_mb')} MB" if scores else ""))
    return rows
