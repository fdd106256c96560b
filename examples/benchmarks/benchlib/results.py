"""Benchmark results as JSON lines: one fit (finished or failed) per line, appended when it ends.

Why JSON lines: a run killed at any moment loses at most the fit in progress, several runs can
append to the same file and build up one table, and a half-written last line is simply skipped.

A result is identified by its key ``(dataset, model, seed, config)``; ``config`` is a short hash of
everything else that changes the experiment (time limit, row cap, hyperparameters), so rerunning the
same command skips finished fits while a changed setting runs again, next to the old rows.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple

Key = Tuple[str, str, int, str]


def config_hash(time_limit: float, max_rows: Optional[int], hyperparameters: Optional[dict]) -> str:
    """8 hex digits, stable across runs and machines: JSON with sorted keys, time limit as float
    (``300`` and ``300.0`` are the same experiment)."""
    payload = {
        "time_limit": float(time_limit),
        "max_rows": None if max_rows is None else int(max_rows),
        "hyperparameters": hyperparameters or {},
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:8]


@dataclass
class Task:
    """One fit to run: a model with its hyperparameters on one dataset and seed."""

    dataset: str
    model: str
    seed: int
    time_limit: float
    max_rows: Optional[int] = None
    hyperparameters: Dict[str, Any] = field(default_factory=dict)

    @property
    def config(self) -> str:
        return config_hash(self.time_limit, self.max_rows, self.hyperparameters)

    @property
    def key(self) -> Key:
        return (self.dataset, self.model, int(self.seed), self.config)


def result_key(row: dict) -> Key:
    return (row["dataset"], row["model"], int(row["seed"]), row["config"])


def is_ok(row: dict) -> bool:
    return row.get("status") == "ok"


def read_results(path: str | Path) -> List[dict]:
    """All parseable rows of a JSONL file, in file order; a missing file is an empty table.

    Lines that do not parse (a write cut short by a kill) are skipped with a warning instead of
    making the whole table unreadable."""
    path = Path(path)
    if not path.exists():
        return []
    rows = []
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            result_key(row)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            warnings.warn(f"{path}:{i}: skipping an unreadable result line")
            continue
        rows.append(row)
    return rows


def _jsonable(value):
    """NaN/inf become null (JSON has no NaN); numpy scalars become Python numbers."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def append_result(path: str | Path, row: dict) -> None:
    """Append one row as a single line and flush it to disk, so it survives a kill right after.
    A line left unfinished by an earlier kill is closed first, so that it does not swallow this one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(_jsonable(row), sort_keys=False, default=str)
    with open(path, "a+b") as f:
        if f.tell() > 0:
            f.seek(-1, os.SEEK_END)
            if f.read(1) != b"\n":
                line = "\n" + line
        f.write((line + "\n").encode())
        f.flush()
        os.fsync(f.fileno())


def latest_by_key(rows: Iterable[dict]) -> Dict[Key, dict]:
    """One row per key, the last one written (a retried failure replaces the failure)."""
    out: Dict[Key, dict] = {}
    for row in rows:
        out[result_key(row)] = row
    return out


def todo(tasks: Iterable[Task], rows: Iterable[dict], retry_failed: bool = False,
         redo_before: Optional[str] = None) -> List[Task]:
    """The tasks whose key has no result yet (or only a failure, with ``retry_failed``), in order.
    ``redo_before`` (an ISO time such as ``2026-12-06T07:00``) also runs again every key whose latest row was
    started before it: a rerun of a model after a code change that resumes where it stopped, since the rows it
    writes are started after that time (reports take the latest row of a key)."""
    done = latest_by_key(rows)
    pending = []
    for task in tasks:
        row = done.get(task.key)
        stale = row is not None and redo_before is not None and str(row.get("started", "")) < redo_before
        if row is None or stale or (retry_failed and not is_ok(row)):
            pending.append(task)
    return pending
