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

from .results import Task, _jsonable, append_result, read_results, todo

CHILD_GRACE_S = 600.0  # hard timeout = 3 x time limit + this: AutoGluon's time limit is soft


def _peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB.

    On Linux ``VmHWM`` from /proc is used: ``ru_maxrss`` of a spawned child also includes the parent's
    resident size at fork time (the kernel carries the high-water mark across exec), which would hide
    a small fit behind the driver's own memory.  Elsewhere ``ru_maxrss`` (bytes on macOS, KB else)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024.0


def roc_auc(y_true, proba, positive_class=None) -> Optional[float]:
    """ROC-AUC from ``predict_proba`` (a DataFrame, one column per class), computed with sklearn.

    Binary: the AUC of the positive class.  Multiclass: one-vs-rest macro average, i.e. the mean of
    the per-class AUCs (what ``roc_auc_score(multi_class="ovr", average="macro")`` returns); done
    class by class so that a class absent from the test part is skipped rather than an error, and
    float32 probabilities that do not sum exactly to 1 are accepted.  None when undefined."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y_true)
    classes = [positive_class] if positive_class is not None else list(proba.columns)
    aucs = []
    for c in classes:
        hit = y == c
        if hit.all() or not hit.any():
            continue
        aucs.append(roc_auc_score(hit, proba[c].to_numpy()))
    return float(np.mean(aucs)) if aucs else None


def _fit(spec: dict) -> dict:
    """Protocol P1 for one model; runs in the child.  Returns the measured part of a result row."""
    import numpy as np
    from sklearn.metrics import accuracy_score

    import autogluon_maya  # noqa: F401  (registers MAYA)
    from autogluon.tabular import TabularPredictor, __version__ as ag_version
    from autogluon_maya.common.protocol import load_dataset, p1_metric, p1_split

    ds = load_dataset(Path(spec["data_dir"]) / spec["dataset"], max_rows=spec["max_rows"], seed=spec["seed"])
    train, val, test = p1_split(ds, spec["seed"])
    row = {"n_rows": len(ds.data), "n_train": len(train), "n_val": len(val), "n_test": len(test),
           "autogluon_version": ag_version, "mem_before_fit_mb": round(_peak_rss_mb(), 1)}
    path = tempfile.mkdtemp(prefix=f"bench_{ds.name}_{spec['model']}_")
    try:
        predictor = TabularPredictor(label=ds.target, problem_type=ds.task, eval_metric=p1_metric(ds.task),
                                     path=path, verbosity=0)
        t0 = time.perf_counter()
        ag_key = spec["model"].split("@")[0]  # "KEY@variant": same AutoGluon model, another configuration
        predictor.fit(train, tuning_data=val, hyperparameters={ag_key: spec["hyperparameters"]},
                      time_limit=spec["time_limit"], fit_weighted_ensemble=False, num_cpus=spec["num_cpus"],
                      num_gpus=0, raise_on_model_failure=True)
        row["fit_s"] = round(time.perf_counter() - t0, 2)
        row["mem_fit_peak_mb"] = round(_peak_rss_mb(), 1)
        row["ru_maxrss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
        name = predictor.model_names()[0]
        row["ag_model"] = name
        try:
            predictor.persist(models=[name])  # time inference, not loading from disk
        except Exception:
            pass
        x_test, y_test = test.drop(columns=[ds.target]), test[ds.target]
        t0 = time.perf_counter()
        if ds.is_classification:
            proba = predictor.predict_proba(x_test, model=name)
            pred_s = time.perf_counter() - t0
            y_pred = predictor.predict_from_proba(proba)
            row["accuracy"] = float(accuracy_score(y_test, y_pred))
            row["roc_auc"] = roc_auc(y_test, proba, predictor.positive_class if ds.task == "binary" else None)
        else:
            y_pred = predictor.predict(x_test, model=name)
            pred_s = time.perf_counter() - t0
            row["rmse"] = float(np.sqrt(np.mean((np.asarray(y_pred, float) - y_test.to_numpy(float)) ** 2)))
        row["predict_s_per_1k"] = round(1000.0 * pred_s / max(len(test), 1), 5)
        lb = predictor.leaderboard(silent=True).set_index("model")
        row["val_score"] = abs(float(lb.loc[name, "score_val"])) if ds.task == "regression" else \
            float(lb.loc[name, "score_val"])
        row.update(_model_summary(predictor, name))
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


def run_task(task: Task, data_dir: str | Path, num_cpus: int = 2, hard_timeout: Optional[float] = None) -> dict:
    """Fit ``task`` in a spawned child and return its full result row; never raises for a failed fit."""
    row = {"dataset": task.dataset, "model": task.model, "seed": int(task.seed), "config": task.config,
           "task": dataset_task(data_dir, task.dataset), "time_limit": float(task.time_limit),
           "max_rows": task.max_rows, "hyperparameters": task.hyperparameters, "num_cpus": num_cpus,
           "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    spec = {"data_dir": str(data_dir), "dataset": task.dataset, "model": task.model, "seed": int(task.seed),
            "time_limit": float(task.time_limit), "max_rows": task.max_rows,
            "hyperparameters": task.hyperparameters, "num_cpus": num_cpus}
    hard_timeout = hard_timeout or 3 * float(task.time_limit) + CHILD_GRACE_S
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, spec), name=f"bench-{task.dataset}-{task.model}")
    t0 = time.time()
    proc.start()
    send.close()
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
                  log: Callable[[str], None] = print) -> List[dict]:
    """Run every task not yet in ``results_path``, appending each row as soon as it is done."""
    tasks = list(tasks)
    pending = todo(tasks, read_results(results_path), retry_failed=retry_failed)
    log(f"{len(tasks)} fits requested, {len(tasks) - len(pending)} already in {results_path}, {len(pending)} to run")
    rows = []
    for i, task in enumerate(pending, 1):
        log(f"[{time.strftime('%H:%M:%S')}] {i}/{len(pending)} {task.dataset} / {task.model} / seed {task.seed} "
            f"(config {task.config}) ...")
        row = run_task(task, data_dir, num_cpus=num_cpus, hard_timeout=hard_timeout)
        append_result(results_path, row)
        rows.append(row)
        scores = ", ".join(f"{k} {row[k]:.4f}" for k in ("accuracy", "roc_auc", "rmse")
                           if isinstance(row.get(k), float))
        log(f"    {row['status'][:200]}" + (f": {scores}, fit {row.get('fit_s')} s, "
                                            f"peak {row.get('mem_fit_peak_mb')} MB" if scores else ""))
    return rows
