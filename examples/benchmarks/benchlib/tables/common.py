"""What every table builder shares: the registry, reading the raw results, the figures' format, and the
builders that more than one document uses (ensemble-benchmark rows, seed means, settings experiments, trials on
the decision tables).

Figures: accuracy with 4 decimals (5 when the value is exact at 5, e.g. 0.97425 on letter's 4,000 test rows),
RMSE with 4 decimals below 10, 2 below 1,000, else whole numbers; a mean over seeds in brackets.  In a benchmark
folder with several rows for one (dataset, model, seed), the latest ``ok`` row counts.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from ..repo import REPO

RESULTS = REPO / "examples" / "benchmarks" / "results"
REGION = re.compile(r"(<!-- table:([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)

#: table name -> the function that renders it; every document module registers its own
TABLES: Dict[str, Callable[[], str]] = {}


def table(name: str):
    """Register the function that renders the table ``name``: as a decorator, or ``table(name)(lambda: ...)``
    for a table that is one call of a shared builder."""
    def register(fn: Callable[[], str]) -> Callable[[], str]:
        TABLES[name] = fn
        return fn
    return register


# ---- reading the raw results ------------------------------------------------------------------------------
@lru_cache(maxsize=None)
def rows(folder: str) -> tuple:
    """The ok rows of ``<folder>/results.jsonl``, in file order."""
    path = RESULTS / folder / "results.jsonl"
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("status") == "ok":
                out.append(r)
    return tuple(out)


def score(r: dict) -> float:
    return float(r["accuracy"] if "accuracy" in r and r["accuracy"] is not None else r["rmse"])


@lru_cache(maxsize=None)
def latest_rows(folder: str) -> Dict[tuple, dict]:
    """The latest ok row per (dataset, split seed, model) of ``folder``, in file order of first appearance."""
    return {(r["dataset"], int(r["seed"]), r["model"]): r for r in rows(folder)}


def value(folder: str, dataset: str, model: str, seed: int = 0, time_limit: Optional[float] = None) -> float:
    """Test accuracy or RMSE of the latest ok row for (dataset, model, seed[, time limit]) in ``folder``."""
    hits = [r for r in rows(folder) if r["dataset"] == dataset and r["model"] == model and int(r["seed"]) == seed
            and (time_limit is None or float(r["time_limit"]) == float(time_limit))]
    if not hits:
        raise KeyError(f"no ok row for {dataset} / {model} / seed {seed} in {folder}/results.jsonl")
    return score(hits[-1])


def fmt(x: float) -> str:
    if x >= 1000:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.2f}"
    five = round(x, 5)
    if abs(five - x) < 1e-9 and round(x, 4) != five:
        return f"{five:.5f}"
    return f"{x:.4f}"


def cell(folder: str, dataset: str, model: str, seed: int = 0, time_limit: Optional[float] = None) -> str:
    return fmt(value(folder, dataset, model, seed, time_limit))


def seeds(folder: str, dataset: str, model: str, seed_list: Sequence[int] = (0, 1, 2)) -> str:
    """``a / b / c (mean)`` over split seeds."""
    vals = [value(folder, dataset, model, s) for s in seed_list]
    return " / ".join(fmt(v) for v in vals) + f" ({fmt(sum(vals) / len(vals))})"


def markdown(header: Sequence[str], body: Iterable[Sequence[str]], align: Optional[str] = None) -> str:
    """A Markdown table; ``align`` has one letter per column (l or r), default: first left, rest right."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in body]
    return "\n".join(lines) + "\n"


def report_table(path: Path, heading: Optional[str] = None, index: int = 0) -> str:
    """The ``index``-th Markdown table under ``## heading`` of a report a benchmark script wrote (``heading``
    None: of the whole report)."""
    blocks: List[List[str]] = []
    inside = heading is None
    previous = ""
    for line in path.read_text().splitlines():
        if heading is not None and line.startswith("## "):
            inside = line[3:].strip() == heading
        elif inside and line.startswith("|"):
            if not previous.startswith("|"):
                blocks.append([])
            blocks[-1].append(line)
        previous = line
    if index >= len(blocks):
        raise KeyError(f"{path}: no table {index} under '## {heading}' ({len(blocks)} there)")
    return "\n".join(blocks[index]) + "\n"


def rank_of(v: float, values: Iterable[float], higher: bool) -> float:
    """1-based rank of ``v`` among ``values`` (1 = best), ties sharing the mean rank."""
    values = list(values)
    better = sum(1 for w in values if (w > v if higher else w < v))
    return better + (sum(1 for w in values if w == v) + 1) / 2


def grid(folder: str, datasets: Sequence[str], models: Sequence[str], seed: int = 0, ranks: bool = False,
         labels: Optional[Dict[str, str]] = None) -> str:
    """Datasets x models of one benchmark folder (latest row per cell), the best cell in bold, and the average
    rank per model (1 = best) when ``ranks``."""
    labels = labels or {}
    body, rank_sum = [], {m: 0.0 for m in models}
    for d in datasets:
        task = next(r for r in rows(folder) if r["dataset"] == d)["task"]
        higher = task != "regression"
        vals = {m: value(folder, d, m, seed) for m in models}
        best = (max if higher else min)(vals.values())
        for m in models:
            rank_sum[m] += rank_of(vals[m], vals.values(), higher)
        metric = "accuracy" if higher else "RMSE ↓"
        body.append([f"{d}, {metric}"] + [f"**{fmt(v)}**" if v == best else fmt(v) for v in vals.values()])
    if ranks:
        body.append(["average rank"] + [f"{rank_sum[m] / len(datasets):.2f}" for m in models])
    return markdown(["dataset"] + [labels.get(m, m) for m in models], body)


def variant_rows(folder: str, datasets: Sequence[str], variants: Iterable[tuple], **where) -> List[list]:
    """One row per ``(model, label)`` of ``variants``: the label, then the model's :func:`cell` in ``folder`` on
    each of ``datasets`` (``where``: ``seed`` / ``time_limit``)."""
    return [[label] + [cell(folder, d, model, **where) for d in datasets] for model, label in variants]


# ---- rows of the ensemble benchmark (docs/ensemble_benchmark.md, docs/experiments.md) ---------------------
def ensemble_latest(folder: str, candidate: Optional[bool] = None, seed: Optional[int] = None) -> Dict[tuple, dict]:
    """The latest ok row per (dataset, config) of an ensemble-benchmark folder, in dataset order; ``candidate``:
    only the rows with (True) or without (False) ``--ours-add`` entries, None: all; ``seed``: only that split
    seed's rows, None: all."""
    return {(r["dataset"], r["config"]): r for r in rows(folder)
            if (candidate is None or bool(r.get("ours_add")) == candidate)
            and (seed is None or int(r.get("seed", 0)) == seed)}


def error_of_row(r: dict, score: float) -> float:
    from ..ensemble import error_of

    return error_of(score, r["metric"])


def rer(a: dict, b: dict) -> float:
    from ..ensemble import relative_error_reduction

    return relative_error_reduction(error_of_row(a, a["test_score"]), error_of_row(b, b["test_score"]))


def percent(v: float) -> str:
    return f"{100 * v:+.2f} %"


def ensemble_ours(folder: str, candidate: Optional[bool] = None, seed: Optional[int] = None) -> Dict[str, dict]:
    """The latest ok ``ours`` row per dataset of an ensemble-benchmark folder (:func:`ensemble_latest`)."""
    return {d: r for (d, config), r in ensemble_latest(folder, candidate, seed).items() if config == "ours"}


def model_value(r: dict, name: str, key: str) -> Optional[float]:
    """``key`` of model ``name`` in an ensemble-benchmark row, or None."""
    m = r["models"].get(name)
    return None if m is None or m.get(key) is None else float(m[key])


def before_after(a: Optional[float], b: Optional[float], f: Callable[[float], str] = fmt) -> str:
    """``a → b``, a missing value as —."""
    return " → ".join("—" if v is None else f(v) for v in (a, b))


# ---- single models at 300 s on the 12 tables, mean over the split seeds (docs/maya.md, docs/tabswift.md) ---
SINGLE = "single_300s"
#: MAYA at its label-smoothing default (docs/benchmarks.md, docs/experiments.md)
LS = "label_smoothing/auto_default"
TABLES12 = ("qsar_biodeg", "seismic_bumps", "phoneme", "spambase", "telco_churn", "bank_churn", "satimage", "letter",
            "otto", "ames_housing", "cpu_act", "house_16H")


def seed_rows(folder: str, dataset: str, model: str) -> Dict[int, dict]:
    """The latest ok row per split seed of (dataset, model) in ``folder``."""
    return {s: r for (d, s, m), r in latest_rows(folder).items() if d == dataset and m == model}


def seed_means(folder: str, dataset: str, models: Sequence[str]):
    """The latest ok row per split seed of each of ``models`` on ``dataset``, the seeds every model has, and a
    ``mean(model, field)`` over those seeds (``field``: a function of a row)."""
    recs = {m: seed_rows(folder, dataset, m) for m in models}
    common = sorted(set.intersection(*(set(v) for v in recs.values())))

    def mean(m: str, f: Callable[[dict], float]) -> float:
        return sum(f(recs[m][s]) for s in common) / len(common)

    return recs, common, mean


# ---- settings experiments and trials on the decision tables (docs/maya.md, docs/tabswift.md) ------------
def settings_table(folder: str, variants: Sequence[tuple], key: str, base_name: Optional[str] = None) -> str:
    """Per (table, seed) of a settings experiment in ``folder``: the validation (``key="val_score"``) or test
    score of each variant (``(model, label)``, the first the baseline), the mean per metric, and (validation)
    the pairs each variant beats the baseline (``base_name``, default its label) on and its mean relative gain."""
    recs = rows(folder)
    base_name = base_name or variants[0][1]
    base_model = variants[0][0]
    latest = latest_rows(folder)
    pairs = sorted({(d, s) for d, s, _ in latest}, key=lambda ds: ([r["dataset"] for r in recs].index(ds[0]), ds[1]))
    body, by_metric, better, gains = [], {}, {m: 0 for m, _ in variants}, {m: [] for m, _ in variants}
    tables_of: Dict[bool, set] = {}
    for d, seed in pairs:
        cells = {m: latest.get((d, seed, m)) for m, _ in variants}
        if not all(cells.values()):
            continue
        regression = cells[base_model]["task"] == "regression"
        vals = {m: float(r[key] if key == "val_score" else (r["rmse"] if regression else r["accuracy"]))
                for m, r in cells.items()}
        metric = "RMSE, lower is better" if regression else "accuracy"
        body.append([f"{d} ({metric})", str(seed)] + [fmt(vals[m]) for m, _ in variants])
        by_metric.setdefault(regression, []).append(vals)
        tables_of.setdefault(regression, set()).add(d)
        for m, _ in variants[1:]:
            base = vals[base_model]
            better[m] += (vals[m] < base) if regression else (vals[m] > base)
            gains[m].append(relative_gain(base, vals[m], regression))
    for regression, label in ((False, "mean accuracy, {} classification pairs"), (True, "mean RMSE, {} regression pairs")):
        group = by_metric.get(regression, [])
        if group and not (regression and len(tables_of[True]) > 1):  # RMSEs of different tables do not average
            body.append([label.format(len(group)), ""] + [fmt(sum(v[m] for v in group) / len(group))
                                                           for m, _ in variants])
    if key == "val_score":
        n = len(gains[variants[1][0]])
        body.append([f"pairs better than {base_name}", "", ""] + [f"{better[m]} of {n}" for m, _ in variants[1:]])
        body.append([f"mean relative gain over {base_name}", "", ""]
                    + [f"{100 * sum(gains[m]) / max(1, len(gains[m])):.1f} %" for m, _ in variants[1:]])
    return markdown(["table (metric)", "seed"] + [label for _, label in variants], body, "ll" + "r" * len(variants))


#: the tables MAYA's defaults are chosen on: none of the 12 of the benchmarks it is reported on
DECISION_TABLES = ("adult", "bank_marketing", "magic_telescope", "electricity", "california_housing", "diamonds",
                   "pol", "bike_sharing", "waveform_40", "segmentation", "texture", "dna", "car_evaluation")


def relative_gain(base: float, other: float, regression: bool) -> float:
    """Relative validation gain of ``other`` over ``base``: lower RMSE, or higher accuracy, is a gain."""
    return (base - other) / base if regression else (other - base) / base


def budget_trials(folder: str, base: str, trials: Sequence[tuple], tables: Sequence[str] = DECISION_TABLES,
                  seeds: Sequence[int] = (0, 1)) -> str:
    """One row per trial against the default (``base``) on validation, over the (table, split seed) pairs of the
    decision tables where both ran (``decision_trials`` with one baseline for every trial); the pairs' count says
    which tables a trial covered (a classification setting, only those)."""
    return decision_trials(folder, [(label, ((base, model),)) for model, label in trials], tables, seeds)


def budget_pairs(folder: str, base: str, trials: Sequence[tuple], tables: Sequence[str] = DECISION_TABLES,
                 seeds: Sequence[int] = (0, 1)) -> str:
    """Validation score of the default and of every trial per (decision table, split seed); — where it did not run.
    A trial's model may be a tuple of models that ran on different tables (one column: the first that ran)."""
    latest = latest_rows(folder)

    def models(m):
        return (m,) if isinstance(m, str) else tuple(m)

    shown = [(m, label) for m, label in trials if any(k[2] in models(m) for k in latest)]
    body = []
    for d in tables:
        for s in seeds:
            if (d, s, base) not in latest:
                continue
            regression = latest[(d, s, base)]["task"] == "regression"
            cells = []
            for m in [base] + [m for m, _ in shown]:
                ran = next((x for x in models(m) if (d, s, x) in latest), None)
                cells.append(fmt(float(latest[(d, s, ran)]["val_score"])) if ran else "—")
            body.append([f"{d} ({'RMSE' if regression else 'accuracy'})", str(s)] + cells)
    return markdown(["table (validation metric)", "seed", "default"] + [label for _, label in shown], body,
                    "ll" + "r" * (1 + len(shown)))


TRIAL_HEADER = ["trial (against the default)", "pairs", "better / level / worse", "sign test p", "mean relative gain",
                "default s", "trial s"]


def trial_row(latest: Dict[tuple, dict], label: str, comparisons: Sequence[tuple], tables: Sequence[str],
              seeds: Sequence[int]) -> Optional[list]:
    """One trial's row of ``decision_trials`` (None where no pair ran both sides)."""
    from ..stats import p_text, sign_test_p

    counts, gains, secs = [0, 0, 0], [], ([], [])
    for base, model in comparisons:
        for d in tables:
            for s in seeds:
                if (d, s, model) not in latest or (d, s, base) not in latest:
                    continue
                a, b = latest[(d, s, base)], latest[(d, s, model)]
                g = relative_gain(float(a["val_score"]), float(b["val_score"]), a["task"] == "regression")
                counts[0 if g > 0 else 1 if g == 0 else 2] += 1
                gains.append(g)
                secs[0].append(float(a["fit_s"]))
                secs[1].append(float(b["fit_s"]))
    if not gains:
        return None
    mean = round(100 * sum(gains) / len(gains), 2) + 0.0  # (+ 0.0: no "-0.00")
    return [label, str(len(gains)), " / ".join(map(str, counts)), p_text(sign_test_p(counts[0], counts[2])),
            f"{mean:+.2f} %", f"{sum(secs[0]) / len(gains):.0f}", f"{sum(secs[1]) / len(gains):.0f}"]


def decision_trials(folder: str, trials: Sequence[tuple], tables: Sequence[str] = DECISION_TABLES,
                    seeds: Sequence[int] = (0, 1)) -> str:
    """One row per trial, each against its own baselines (``(baseline model, trial model)`` comparisons) over the
    (decision table, split seed) pairs where both ran: pairs better / level / worse on validation, the mean
    relative gain of the trial, the mean fit seconds of both sides, and the sign test's p-value of better against
    worse (above 0.1: level within noise)."""
    latest = latest_rows(folder)
    body = [r for label, comparisons in trials if (r := trial_row(latest, label, comparisons, tables, seeds))]
    return markdown(TRIAL_HEADER, body)