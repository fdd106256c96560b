"""Results of the ensemble benchmark (``examples/benchmarks/mixed_ensemble_benchmark.py``): the rows of
``results.jsonl`` (and of an earlier version's ``results.csv``), which settings identify a result, the file names
a run writes, and the package version each row ran."""

from __future__ import annotations

import csv
import json
import os
import subprocess
from pathlib import Path

from .provenance import package_commit

#: the configurations, in the order the report shows them
CONFIGS = ("gbdt", "ours", "ag_dl", "all")
#: rows written by an earlier version of the benchmark under the name ``mixed`` are read as ``ours``
OLD_CONFIG_NAMES = {"mixed": "ours"}
#: settings that identify a result: a pair is "done" only for the same values of these
SETTINGS = ("preset", "time_limit", "max_train_rows", "seed", "num_bag_folds", "num_stack_levels", "num_cpus",
            "num_gpus", "smoke", "ours_add")


def _old_csv_row(r: dict) -> dict:
    """A row of the earlier ``results.csv`` in today's form (``mixed`` -> ``ours``, numbers parsed)."""
    from .ensemble import NEURAL_FAMILIES, family, over_time, stack_level

    row = dict(r)
    row["config"] = OLD_CONFIG_NAMES.get(row["config"], row["config"])
    for k in ("test_score", "val_score", "fit_s", "time_limit", "nn_weight"):
        if row.get(k) not in (None, ""):
            row[k] = float(row[k])
    if "nn_weight" in row:
        row["neural_weight"] = row.pop("nn_weight")
    if row.get("metric") == "accuracy" and row.get("test_score") not in (None, ""):
        row["test_error"] = 1.0 - row["test_score"]
    elif row.get("test_score") not in (None, ""):
        row["test_error"] = row["test_score"]
    if row.get("max_rows") not in (None, ""):
        row["max_train_rows"] = f"total rows <= {row['max_rows']}"
    for k in ("num_bag_folds", "num_stack_levels", "seed"):
        if row.get(k) not in (None, ""):
            row[k] = int(row[k])
    row["weights"] = {row.get("best_model", ""): json.loads(row["weights"])} if row.get("weights") else {}
    row["model_names"] = (row.get("models") or "").split()  # names only: no per-model scores were recorded
    row["models"] = {}
    row["neural_fitted_l1"] = [m for m in row["model_names"] if stack_level(m) == 1 and family(m) in NEURAL_FAMILIES]
    if isinstance(row.get("fit_s"), float) and isinstance(row.get("time_limit"), float):
        row["over_time"] = over_time(row["fit_s"], row["time_limit"])
    row.setdefault("commit", "unrecorded")
    return row


def read_rows(out: Path) -> list[dict]:
    """Rows of ``results.jsonl`` (and of an earlier version's ``results.csv`` in the same folder)."""
    rows = []
    old = out / "results.csv"
    if old.exists():
        with open(old, newline="") as f:
            rows += [_old_csv_row(r) for r in csv.DictReader(f)]
    path = out / "results.jsonl"
    if path.exists():
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    r["config"] = OLD_CONFIG_NAMES.get(r["config"], r["config"])
                    rows.append(r)
    return rows


def identifies(setting: str, config: str) -> bool:
    """Whether ``setting`` tells results of ``config`` apart: ``ours_add`` changes ``ours`` only, so a
    candidate run shares its ``gbdt`` and ``ag_dl`` fits with the run without one."""
    return setting != "ours_add" or config == "ours"


def result_key(row: dict) -> tuple:
    """What makes two rows the same result: dataset, configuration and the settings that tell it apart."""
    return (row["dataset"], row["config"],
            *(str(row.get(s)) if identifies(s, row["config"]) else "-" for s in SETTINGS))


def append_row(out: Path, row: dict) -> None:
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(row, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def settings_of(args) -> dict:
    return {"preset": args.preset, "time_limit": float(args.time_limit), "max_train_rows": args.max_train_rows,
            "seed": args.seed, "num_bag_folds": args.num_bag_folds, "num_stack_levels": args.num_stack_levels,
            "num_cpus": args.num_cpus, "num_gpus": args.num_gpus, "smoke": bool(args.smoke),
            "ours_add": json.dumps(args.ours_add, sort_keys=True) if args.ours_add else None}


def name_tag(seed, candidate) -> str:
    """What a log's or a report's file name adds for its rows: ``_seed<N>`` unless the split seed is 0 (or none
    recorded), then ``_candidate`` for a candidate preset (``--ours-add``), so that no file replaces another's."""
    seed = int(seed or 0)
    return f"{f'_seed{seed}' if seed else ''}{'_candidate' if candidate else ''}"


def log_name(row: dict) -> str:
    """A fit's log file in the folder's logs/: dataset and configuration, then :func:`name_tag`."""
    return f"{row['dataset']}_{row['config']}{name_tag(row.get('seed'), row.get('ours_add'))}.log"


def ok_rows(rows: list[dict], settings: dict | None) -> list[dict]:
    """The ``ok`` rows run with ``settings`` (all ``ok`` rows when None), in file order."""
    return [r for r in rows if r["status"] == "ok"
            and (settings is None or all(str(r.get(k)) == str(v) for k, v in settings.items()
                                         if identifies(k, r["config"])))]


def latest_ok(rows: list[dict], settings: dict | None) -> dict:
    """The latest ``ok`` row per (dataset, config), among the rows run with ``settings`` (all when None)."""
    return {(r["dataset"], r["config"]): r for r in ok_rows(rows, settings)}


def version_of(row: dict, repo: Path | None = None) -> str:
    """The package version a row ran: its ``package_commit``, or for rows written before that field existed,
    the last package commit at or before its ``commit`` (looked up in ``repo``'s history)."""
    if row.get("package_commit"):
        return row["package_commit"]
    commit = str(row.get("commit") or "")
    head, dirty = commit.removesuffix("-dirty"), commit.endswith("-dirty")
    if repo is not None and head and " " not in head:
        try:
            return package_commit(repo, head) + ("-dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass
    return row.get("code_commit") or commit or "?"


def versions(rows: list[dict], settings: dict | None, repo: Path | None = None) -> tuple[list[str], dict]:
    """The package versions of the ``ok`` ``ours`` rows run with ``settings``, oldest first, and the latest
    such row per (dataset, version)."""
    order, latest = [], {}
    for r in ok_rows(rows, settings):
        if r["config"] != "ours":
            continue
        v = version_of(r, repo)
        if v not in order:
            order.append(v)
        latest[(r["dataset"], v)] = r
    return order, latest

