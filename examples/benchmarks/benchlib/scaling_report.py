"""The report of the scaling benchmark (``examples/benchmarks/scaling.py``), rebuilt from ``results.jsonl``:
``results.csv`` (one row per point), ``results.md`` (a table per axis, then the exponents: the least-squares
slope of log cost on log size per model over its ``ok`` points) and ``scaling.png`` (the rows axis, log-log)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .results import latest_by_key, read_results
from .scaling_point import LIMIT_SLACK

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


def point_line(row: dict) -> str:
    """The line the driver prints after each point: status, fit and predict time, peak memory, score, reason."""
    detail = row.get("reason") or row.get("error") or ""
    return (f"    {row['status']}: fit {row.get('fit_s')} s, predict {_num(row.get('predict_s_per_1k'))} s/1k, "
            f"peak {row.get('mem_peak_mb')} MB {_score_cell(row)} {detail[:200]}")


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
    from .tables.common import markdown

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
                     _num(_increase_ratio(r), "{:.2f}"), _num(r.get("model_fit_increase_mb"), "{:,.0f}"),
                     _num(_estimate_model_ratio(r), "{:.2f}"), _score_cell(r), _num(ctx, "{:,.0f}")])
    header = ["task", "rows", "cols", "model", "status", "fit s (limit)", "epochs", "s / epoch",
              "predict s / 1k rows", "peak MB", "estimate / fit peak", "estimate / fit increase",
              "model's own MB", "estimate / model's own", "score on the query rows", "context rows"]
    return markdown(header, body, align="lrrll" + "r" * 11), notes


def tabswift_estimate_as_loaded_mb(r: dict) -> float | None:
    """TabSwift's memory estimate for the weights its fit actually loaded.  With ``checkpoint_path="auto"`` the
    pre-fit estimate is sized for the authors' released network (24 x 192), which "auto" tries to download first
    (``checkpoints_io.info.network_dims``); where the fit then loaded the shipped checkpoint (no hub reachable),
    this recomputes ``tabswift.memory.estimate_fit_memory`` for it at the point's internal training shape (its
    validation rows present where AutoGluon held some out, as in the fit; torch counted as imported).  None for
    other models and for a fit that loaded the released weights (its pre-fit estimate already fits them)."""
    if r.get("model") != "TABSWIFT" or r.get("tabswift_weights") != "shipped" or r.get("status") != "ok":
        return None
    rows, cols, val = _finite(r.get("n_train_internal")), _finite(r.get("cols")), _finite(r.get("n_val_internal"))
    if rows is None or cols is None:
        return None
    return _shipped_estimate_mb(int(rows), int(cols), int(val or 0))


@functools.lru_cache(maxsize=None)
def _shipped_estimate_mb(rows: int, cols: int, val: int) -> float:
    """The shipped checkpoint's fit estimate at one training shape (the report asks for each row's twice)."""
    import torch  # noqa: F401  (as in the fit: the estimate adds torch's import only where it has not happened)
    from autogluon_maya.tabswift.memory import estimate_fit_memory

    X = pd.DataFrame(np.zeros((rows, cols), dtype=np.float32))
    return estimate_fit_memory(X, {"checkpoint_path": "shipped"}, X_val=X.iloc[:val] if val else None) / 2**20


def _estimate_model_ratio(r: dict) -> float | None:
    """The model's estimate over what its own ``fit`` call added; TabSwift's for the weights it loaded."""
    own = _finite(r.get("model_fit_increase_mb"))
    est = _finite(tabswift_estimate_as_loaded_mb(r)) or _finite(r.get("mem_estimate_mb"))
    if own is None or est is None or own <= 0:
        return None
    return est / own


def _increase_ratio(r: dict):
    """The model's estimate over what the fit added to the process (fit peak minus the resident size before it):
    nearer the model's own share than the whole peak, though it still counts AutoGluon's copies of the data."""
    est, peak, before = r.get("mem_estimate_mb"), r.get("mem_fit_peak_mb"), r.get("mem_before_fit_mb")
    if est is None or peak is None or before is None or peak <= before:
        return None
    return est / (peak - before)


def _exponent_md(ex: pd.DataFrame, axis: str) -> str:
    from .tables.common import markdown

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
        df["tabswift_estimate_as_loaded_mb"] = [tabswift_estimate_as_loaded_mb(r) for r in df.to_dict("records")]
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
                   "divides the model's own pre-fit memory estimate by the peak at the end of the fit, estimate / fit increase "
                   "by what the fit added to the resident size (AutoGluon's own copies of the data included); model's own MB "
                   "is what the model's `fit` call added to the resident size at its peak (AutoGluon's preprocessing "
                   "excluded) and estimate / model's own the ratio the estimate is meant to bound (— where the point "
                   "predates this reading); for TabSwift the estimate there is recomputed for the weights the fit "
                   "loaded (`checkpoint_path=\"auto\"` sizes its pre-fit estimate for the released network it "
                   "tries to download first).  "
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
