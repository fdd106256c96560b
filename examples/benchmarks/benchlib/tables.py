"""The results tables of README.md and docs/*.md, built from the committed raw results.

    python examples/benchmarks/results_tables.py           # rewrite every marked table in place
    python examples/benchmarks/results_tables.py --check   # list the tables that differ from their files; exit 1 if any

A table in a Markdown file sits between ``<!-- table:NAME -->`` and ``<!-- /table -->``; ``NAME`` is one of
``TABLES`` below, a function that reads the raw results under ``examples/benchmarks/results/`` (benchmark
``results.jsonl`` rows, CSV and JSON files the scripts wrote) and returns the table's Markdown.  Nothing in
a marked region is typed by hand, so a figure in the docs is always the figure in its file; the test suite
runs ``check`` (``plugin_tests/benchmarking/test_results_tables.py``).

Figures: accuracy with 4 decimals (5 when the value is exact at 5, e.g. 0.97425 on letter's 4,000 test
rows), RMSE with 4 decimals below 10, 2 below 1,000, else whole numbers; a mean over seeds in brackets.
In a benchmark folder with several rows for one (dataset, model, seed), the latest ``ok`` row counts.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence

from .repo import REPO

RESULTS = REPO / "examples" / "benchmarks" / "results"
REGION = re.compile(r"(<!-- table:([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)

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


def _rank(v: float, values: Iterable[float], higher: bool) -> float:
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
            rank_sum[m] += _rank(vals[m], vals.values(), higher)
        metric = "accuracy" if higher else "RMSE ↓"
        body.append([f"{d}, {metric}"] + [f"**{fmt(v)}**" if v == best else fmt(v) for v in vals.values()])
    if ranks:
        body.append(["average rank"] + [f"{rank_sum[m] / len(datasets):.2f}" for m in models])
    return markdown(["dataset"] + [labels.get(m, m) for m in models], body)


# ---- README: current results --------------------------------------------------------------------------------
DEFAULTS_020 = "maya_defaults_0_2_0"


@table("maya-defaults-0-2-0")
def maya_defaults_0_2_0() -> str:
    """MAYA's 0.1 defaults (1cf43ff) and the simplified 0.2.0 defaults side by side, fit by fit in turn on one
    machine: the quick tables at 60 s (seeds 0-1) and california_housing at 600 s (seed 0)."""
    body = []
    for d in ("telco_churn", "phoneme", "satimage", "cpu_act"):
        metric = "accuracy" if d != "cpu_act" else "RMSE ↓"
        body.append([f"{d} (60 s), {metric}"] + [seeds(f"{DEFAULTS_020}/{v}_quick", d, "MAYA", (0, 1))
                                                   for v in ("old", "new")])
    body.append(["california_housing (600 s), RMSE ↓"] + [cell(f"{DEFAULTS_020}/{v}_california", "california_housing",
                                                                "MAYA") for v in ("old", "new")])
    return markdown(["dataset, test score (seeds)", "0.1 defaults (1cf43ff)", "0.2.0 defaults"], body)


LS = "label_smoothing/auto_default"


@table("maya-multiclass")
def maya_multiclass() -> str:
    """MAYA at its multiclass defaults (measured at 3711e52 / 3e83191) against NN_TORCH, P1, 300 s, 2 cores."""
    body = [
        ["letter (seed 0)", cell(f"{LS}/letter", "letter", "MAYA"),
         cell("numeric_inputs/transform/letter", "letter", "NN_TORCH"), "—"],
        ["satimage (seeds 0 / 1 / 2)", seeds(f"{LS}/satimage", "satimage", "MAYA"),
         seeds("label_smoothing/first_screen/seeds", "satimage", "NN_TORCH"), "—"],
        ["digits (seeds 0 / 1 / 2)", seeds(f"{LS}/digits", "digits", "MAYA"),
         seeds("numeric_inputs/transform/digits", "digits", "NN_TORCH"),
         seeds("numeric_inputs/transform/digits", "digits", "KNN")],
        ["otto, 10,000-row subsample (seed 0)", cell(f"{LS}/otto", "otto", "MAYA"),
         cell(f"{LS}/otto", "otto", "NN_TORCH"), "—"],
    ]
    return markdown(["dataset, test accuracy", "MAYA", "NN_TORCH", "KNN"], body, "lrrr")


@table("maya-regression")
def maya_regression() -> str:
    """MAYA at its regression defaults (measured at ee1fdc3) against the first P1 run's GBDTs and NN_TORCH."""
    scale = "numeric_inputs/scale/regression"
    body = [["california_housing (600 s)", cell(scale, "california_housing", "MAYA"),
             cell("maya_p1", "california_housing", "GBM"), cell("maya_p1", "california_housing", "CAT"),
             cell("maya_p1", "california_housing", "NN_TORCH")],
            ["cpu_act (60 s)", cell(scale, "cpu_act", "MAYA"), cell("quick", "cpu_act", "GBM"),
             cell("quick", "cpu_act", "CAT"), cell("quick", "cpu_act", "NN_TORCH")]]
    return markdown(["dataset, test RMSE ↓", "MAYA", "GBM", "CAT", "NN_TORCH"], body)


@table("quick")
def quick() -> str:
    return grid("quick", ("telco_churn", "phoneme", "satimage", "cpu_act"),
                ("MAYA", "GBM", "CAT", "NN_TORCH", "TABM", "REALMLP"), ranks=True)


@table("tabswift-zero-shot")
def tabswift_zero_shot() -> str:
    return grid("tabswift_zero_shot", ("bank_churn", "phoneme", "qsar_biodeg", "satimage", "seismic_bumps",
                                       "spambase", "telco_churn", "ames_housing", "cpu_act", "pol"),
                ("TABSWIFT", "TABSWIFT@finetuned", "LR", "KNN", "GBM", "CAT"), ranks=True,
                labels={"TABSWIFT": "TabSwift zero-shot", "TABSWIFT@finetuned": "TabSwift fine-tuned"})


@table("mixed-ensemble")
def mixed_ensemble() -> str:
    with open(RESULTS / "mixed_ensemble" / "results.csv") as f:
        latest = {(r["dataset"], r["config"]): r for r in csv.DictReader(f) if r["status"] == "ok"}
    body = []
    for d in dict.fromkeys(d for d, _ in latest):
        g, m = latest.get((d, "gbdt")), latest.get((d, "mixed"))
        if not (g and m):
            continue
        higher = g["metric"] != "root_mean_squared_error"
        gs, ms = float(g["test_score"]), float(m["test_score"])
        verdict = "tie" if gs == ms else ("mixed" if (ms > gs) == higher else "GBDT-only")
        body.append([d, g["metric"].replace("root_mean_squared_error", "RMSE ↓"), fmt(gs), fmt(ms),
                     f"{float(m['nn_weight']):.2f}", verdict])
    return markdown(["dataset", "metric", "GBDT-only", "mixed", "MAYA + TabSwift weight", "better"], body,
                    "llrrrl")


def ensemble_ours(folder: str, candidate: Optional[bool] = None, seed: Optional[int] = None) -> Dict[str, dict]:
    """The latest ok ``ours`` row per dataset of an ensemble-benchmark folder (:func:`ensemble_latest`)."""
    return {d: r for (d, config), r in ensemble_latest(folder, candidate, seed).items() if config == "ours"}


def _model_value(r: dict, name: str, key: str) -> Optional[float]:
    """``key`` of model ``name`` in an ensemble-benchmark row, or None."""
    m = r["models"].get(name)
    return None if m is None or m.get(key) is None else float(m[key])


def _pair(a: Optional[float], b: Optional[float], f: Callable[[float], str] = fmt) -> str:
    """``a → b``, a missing value as —."""
    return " → ".join("—" if v is None else f(v) for v in (a, b))


def ensemble_pair(base_folder: str, other_folder: str, candidate: bool = False,
                  seeds: Optional[Sequence[int]] = None) -> str:
    """``ours`` of two ensemble-benchmark folders side by side, per dataset (first -> second): the final
    model's validation and test score, the L1 TabSwift's validation score, the L1 MAYA's validation score and
    the seconds AutoGluon allotted it, and the final model's weight on the neural models.  ``candidate``: the
    second is the ``--ours-add`` rows of ``other_folder`` (which may be ``base_folder``), the first its rows
    without; ``seeds``: one row per (dataset, split seed) of these seeds, the seed named in the row; None: the
    latest row per dataset."""
    named = seeds is not None and len(seeds) > 1
    base, other = {}, {}
    for seed in seeds or [None]:
        for side, folder, is_candidate in ((base, base_folder, False), (other, other_folder, True)):
            side.update({f"{d}, seed {seed}" if named else d: r for d, r in
                         ensemble_ours(folder, is_candidate if candidate else None, seed).items()})

    body = []
    for d, b in base.items():
        o = other.get(d)
        if o is None:
            continue
        body.append([d + (" ↓" if b["task"] == "regression" else ""), _pair(b["val_score"], o["val_score"]),
                     _pair(b["test_score"], o["test_score"]),
                     _pair(_model_value(b, "TabSwift_BAG_L1", "val"), _model_value(o, "TabSwift_BAG_L1", "val")),
                     _pair(_model_value(b, "Maya_BAG_L1", "val"), _model_value(o, "Maya_BAG_L1", "val")),
                     _pair(_model_value(b, "Maya_BAG_L1", "allotted_s"), _model_value(o, "Maya_BAG_L1", "allotted_s"),
                          lambda v: f"{v:.0f}"),
                     _pair(b["neural_weight"], o["neural_weight"], lambda v: f"{v:.2f}")])
    return markdown(["dataset (↓: RMSE)", "final model, val", "final model, test", "TabSwift L1, val",
                     "MAYA L1, val", "MAYA L1, allotted s", "neural weight"], body)


# ---- the README's results: the 600 s ensemble benchmark --------------------------------------------------
ENSEMBLE_CONFIGS = {"gbdt": "trees alone", "ours": "+ MAYA + TabSwift", "ag_dl": "+ TabM + RealMLP"}
#: level-1 bagged models of the ensemble fits: (label, config of the fit it comes from, model name)
LEVEL1 = (("MAYA", "ours", "Maya_BAG_L1"), ("TabSwift", "ours", "TabSwift_BAG_L1"), ("TabM", "ag_dl", "TabM_BAG_L1"),
          ("RealMLP", "ag_dl", "RealMLP_BAG_L1"), ("CatBoost", "gbdt", "CatBoost_BAG_L1"),
          ("LightGBM", "gbdt", "LightGBM_BAG_L1"))


def ensemble_latest(folder: str, candidate: Optional[bool] = None, seed: Optional[int] = None) -> Dict[tuple, dict]:
    """The latest ok row per (dataset, config) of an ensemble-benchmark folder, in dataset order; ``candidate``:
    only the rows with (True) or without (False) ``--ours-add`` entries, None: all; ``seed``: only that split
    seed's rows, None: all."""
    return {(r["dataset"], r["config"]): r for r in rows(folder)
            if (candidate is None or bool(r.get("ours_add")) == candidate)
            and (seed is None or int(r.get("seed", 0)) == seed)}


def _error(r: dict, score: float) -> float:
    from .ensemble import error_of

    return error_of(score, r["metric"])


def _rer(a: dict, b: dict) -> float:
    from .ensemble import relative_error_reduction

    return relative_error_reduction(_error(a, a["test_score"]), _error(b, b["test_score"]))


def _percent(v: float) -> str:
    return f"{100 * v:+.2f} %"


@table("ensemble-first-run")
def ensemble_first_run() -> str:
    latest = ensemble_latest("ensemble_600s")
    body = []
    for d in dict.fromkeys(d for d, _ in latest):
        fits = {c: latest.get((d, c)) for c in ENSEMBLE_CONFIGS}
        if not all(fits.values()):
            continue
        g = fits["gbdt"]
        higher = g["task"] != "regression"
        vals = {c: float(r["test_score"]) for c, r in fits.items()}
        best = (max if higher else min)(vals.values())
        body.append([f"{d}, {'accuracy' if higher else 'RMSE ↓'}"]
                    + [f"**{fmt(v)}**" if v == best else fmt(v) for v in vals.values()]
                    + [_percent(_rer(fits["ours"], g)), _percent(_rer(fits["ag_dl"], g))])
    return markdown(["dataset, test score"] + list(ENSEMBLE_CONFIGS.values())
                    + ["MAYA + TabSwift vs trees", "TabM + RealMLP vs trees"], body)


@table("ensemble-first-run-summary")
def ensemble_first_run_summary() -> str:
    from .ensemble import mean_finite, win_tie_loss

    def line(label: str, a_rows: Dict[str, dict], b_rows: Dict[str, dict]) -> List[str]:
        common = [d for d in a_rows if d in b_rows]
        pairs = [(_error(a_rows[d], a_rows[d]["test_score"]), _error(b_rows[d], b_rows[d]["test_score"]))
                 for d in common]
        wtl = win_tie_loss(pairs)
        rers = [_rer(a_rows[d], b_rows[d]) for d in common]
        worst = min(range(len(common)), key=lambda i: rers[i])
        return [label, f"{wtl.wins} / {wtl.ties} / {wtl.losses}", f"{wtl.p_value:.2f}", _percent(mean_finite(rers)[0]),
                f"{_percent(rers[worst])} ({common[worst]})"]

    first = ensemble_latest("ensemble_600s")
    by = {c: {d: r for (d, cc), r in first.items() if cc == c} for c in ENSEMBLE_CONFIGS}
    repeat = ensemble_ours("ensemble_600s_repeat")
    body = [line("+ MAYA + TabSwift vs trees alone", by["ours"], by["gbdt"]),
            line("+ MAYA + TabSwift vs trees alone, second fit of the same code", repeat, by["gbdt"]),
            line("+ TabM + RealMLP vs trees alone", by["ag_dl"], by["gbdt"]),
            line("+ MAYA + TabSwift vs + TabM + RealMLP", by["ours"], by["ag_dl"])]
    return markdown(["comparison (12 tables)", "wins / ties / losses", "sign test p", "mean relative error reduction",
                     "worst table"], body, "lrrrl")


# ---- the ensemble benchmark at split seeds 0 and 1, against the targets it was run for ----------------------
TWO_SEEDS = "ensemble_600s_two_seeds"
#: (label, config, baseline, fewest (table, seed) pairs at least as good of 24, lowest mean relative error
#: reduction, lowest mean over seeds of one table (None: no such target))
TWO_SEED_TARGETS = (("+ MAYA + TabSwift vs trees alone", "ours", "gbdt", 18, 0.03, -0.03),
                    ("+ MAYA + TabSwift vs + TabM + RealMLP", "ours", "ag_dl", 14, 0.0, None),
                    ("+ TabM + RealMLP vs trees alone", "ag_dl", "gbdt", None, None, None))
TWO_SEED_PAIRS = 24


def two_seed_fits(folder: str = TWO_SEEDS) -> Dict[tuple, Dict[str, dict]]:
    """(dataset, seed) -> {config: latest ok row}, for the pairs that have all three configurations; datasets in
    the order seed 0 first lists them (file order), a dataset's seeds together."""
    out: Dict[tuple, Dict[str, dict]] = {}
    for seed in (0, 1):
        for (d, config), r in ensemble_latest(folder, candidate=False, seed=seed).items():
            out.setdefault((d, seed), {})[config] = r
    order = list(dict.fromkeys(d for d, _ in out))
    return {k: out[k] for k in sorted(out, key=lambda ds: (order.index(ds[0]), ds[1]))
            if all(c in out[k] for c in ENSEMBLE_CONFIGS)}


def _by_table(fits: Dict[tuple, Dict[str, dict]]) -> Dict[str, list]:
    tables_: Dict[str, list] = {}
    for (d, _), f in fits.items():
        tables_.setdefault(d, []).append(f)
    return tables_


@table("ensemble-two-seeds")
def ensemble_two_seeds(folder: str = TWO_SEEDS) -> str:
    """Per table: the mean test score over the split seeds with all three fits, and the mean over those seeds
    of the relative error reduction over the trees alone."""
    return _per_table_means(two_seed_fits(folder), ENSEMBLE_CONFIGS, (("MAYA + TabSwift vs trees", "ours", "gbdt"),
                                                                     ("TabM + RealMLP vs trees", "ag_dl", "gbdt")))


def _per_table_means(fits: Dict[tuple, Dict[str, dict]], configs: Dict[str, str], compared: tuple) -> str:
    """Per table of ``fits`` (every pair holding all ``configs``): the mean test score of each configuration over
    the seeds, the best in bold, then the mean over the seeds of each (column, config, baseline) of ``compared``."""
    body = []
    for d, fs in _by_table(fits).items():
        higher = fs[0]["gbdt"]["task"] != "regression"
        vals = {c: sum(float(f[c]["test_score"]) for f in fs) / len(fs) for c in configs}
        best = (max if higher else min)(vals.values())
        body.append([f"{d}, {'accuracy' if higher else 'RMSE ↓'}", ", ".join(str(f["gbdt"]["seed"]) for f in fs)]
                    + [f"**{fmt(v)}**" if v == best else fmt(v) for v in vals.values()]
                    + [_percent(sum(_rer(f[a], f[b]) for f in fs) / len(fs)) for _, a, b in compared])
    return markdown(["dataset, test score (mean over seeds)", "seeds"] + list(configs.values())
                    + [label for label, _, _ in compared], body)


@table("ensemble-two-seeds-targets")
def ensemble_two_seeds_targets(folder: str = TWO_SEEDS) -> str:
    """Each comparison over the (table, seed) pairs measured: pairs at least as good, the mean relative error
    reduction, the worst table (mean over its seeds), and whether each target is met (only once all 24 pairs
    are measured; before that, the verdict says how many are)."""
    from .ensemble import mean_finite

    fits = two_seed_fits(folder)
    n, by_table = len(fits), _by_table(fits)

    def judged(cell: str, want: Optional[str], ok: bool) -> str:
        if want is None:
            return cell
        verdict = ("met" if ok else "missed") if n == TWO_SEED_PAIRS else f"{n} of {TWO_SEED_PAIRS} pairs measured"
        return f"{cell} (target ≥ {want}: {verdict})"

    body = []
    for label, a, b, min_pairs, min_mean, min_table in TWO_SEED_TARGETS:
        rers = [_rer(f[a], f[b]) for f in fits.values()]
        at_least = sum(r >= 0 for r in rers)
        mean = mean_finite(rers)[0]
        per_table = {d: sum(_rer(f[a], f[b]) for f in fs) / len(fs) for d, fs in by_table.items()}
        worst = min(per_table, key=per_table.get)
        body.append([label,
                     judged(f"{at_least} of {n}", None if min_pairs is None else str(min_pairs),
                            min_pairs is not None and at_least >= min_pairs),
                     judged(_percent(mean), None if min_mean is None else _percent(min_mean),
                            min_mean is not None and mean >= min_mean),
                     judged(f"{_percent(per_table[worst])} ({worst})", None if min_table is None else _percent(min_table),
                            min_table is not None and per_table[worst] >= min_table)])
    return markdown(["comparison, (table, seed) pairs", "pairs at least as good", "mean relative error reduction",
                     "worst table (mean over seeds)"], body, "lrrl")


# ---- the ensemble benchmark with AutoGluon's own schedule for TabM and RealMLP, and every family together -----
ALL_FOLDER = "ensemble_600s_all"
ALL_CONFIGS = {"gbdt": "trees alone", "ours": "+ MAYA + TabSwift", "ag_dl": "+ TabM + RealMLP",
               "all": "+ MAYA + TabSwift + TabM + RealMLP"}
#: (label, config, baseline, fewest pairs at least as good of 24, lowest mean, lowest median, lowest table mean)
ALL_TARGETS = (("+ MAYA + TabSwift vs trees alone", "ours", "gbdt", 18, 0.03, 0.015, -0.03),
               ("+ MAYA + TabSwift vs + TabM + RealMLP", "ours", "ag_dl", 14, 0.0, None, None),
               ("every family vs + TabM + RealMLP", "all", "ag_dl", 16, 0.01, None, None),
               ("every family vs trees alone", "all", "gbdt", None, None, None, None),
               ("+ TabM + RealMLP vs trees alone", "ag_dl", "gbdt", None, None, None, None))


#: the relative error reductions the per-table table gives: (column, config, baseline)
COMPARED = (("MAYA + TabSwift vs trees", "ours", "gbdt"), ("MAYA + TabSwift vs TabM + RealMLP", "ours", "ag_dl"),
            ("every family vs TabM + RealMLP", "all", "ag_dl"))


def all_fits(folder: str = ALL_FOLDER) -> Dict[tuple, Dict[str, dict]]:
    """(dataset, seed) -> {config: latest ok row} of every pair measured so far, in dataset order."""
    out: Dict[tuple, Dict[str, dict]] = {}
    for seed in (0, 1):
        for (d, config), r in ensemble_latest(folder, candidate=False, seed=seed).items():
            out.setdefault((d, seed), {})[config] = r
    order = list(dict.fromkeys(d for d, _ in out))
    return {k: out[k] for k in sorted(out, key=lambda ds: (order.index(ds[0]), ds[1]))}


@table("ensemble-all-targets")
def ensemble_all_targets(folder: str = ALL_FOLDER) -> str:
    """Each comparison over the (table, seed) pairs where both fits exist: pairs at least as good, the mean and
    the median relative error reduction, the worst table (mean over its seeds), the mean without the best table,
    and each target's verdict once all 24 pairs are measured (before that, how many are)."""
    import statistics

    from .ensemble import mean_finite

    fits = all_fits(folder)
    body = []
    for label, a, b, min_pairs, min_mean, min_median, min_table in ALL_TARGETS:
        pairs = {k: f for k, f in fits.items() if a in f and b in f}
        n = len(pairs)
        if not n:
            body.append([label, f"0 of {TWO_SEED_PAIRS} pairs measured", "", "", "", ""])
            continue

        def judged(cell: str, want: Optional[str], ok: bool) -> str:
            if want is None:
                return cell
            verdict = ("met" if ok else "missed") if n == TWO_SEED_PAIRS else f"{n} of {TWO_SEED_PAIRS} measured"
            return f"{cell} (≥ {want}: {verdict})"

        rers = [_rer(f[a], f[b]) for f in pairs.values()]
        at_least, mean, median = sum(r >= 0 for r in rers), mean_finite(rers)[0], statistics.median(rers)
        per_table: Dict[str, list] = {}
        for (d, _), f in pairs.items():
            per_table.setdefault(d, []).append(_rer(f[a], f[b]))
        per_table = {d: sum(v) / len(v) for d, v in per_table.items()}
        worst, best = min(per_table, key=per_table.get), max(per_table, key=per_table.get)
        rest = mean_finite(_rer(f[a], f[b]) for (d, _), f in pairs.items() if d != best)[0]
        body.append([label,
                     judged(f"{at_least} of {n}", None if min_pairs is None else str(min_pairs),
                            min_pairs is not None and at_least >= min_pairs),
                     judged(_percent(mean), None if min_mean is None else _percent(min_mean),
                            min_mean is not None and mean >= min_mean),
                     judged(_percent(median), None if min_median is None else _percent(min_median),
                            min_median is not None and median >= min_median),
                     judged(f"{_percent(per_table[worst])} ({worst})", None if min_table is None else _percent(min_table),
                            min_table is not None and per_table[worst] >= min_table),
                     f"{_percent(rest)} (without {best})" if len(per_table) > 1 else "—"])
    return markdown(["comparison, (table, seed) pairs", "pairs at least as good", "mean relative error reduction",
                     "median", "worst table (mean over seeds)", "mean without the best table"], body, "lrrrll")


def final_weight_text(row: dict) -> str:
    """The weight of the final model on each neural family at level 1 (``MAYA 0.33``) and on the level-2 models
    (``RealMLP L2 0.94``, ``trees L2 0.60``), which take every level-1 model's predictions as features, so a
    final model on level-2 trees alone still uses the neural models; "trees only" when every weight is on a
    level-1 tree."""
    from .ensemble import NEURAL_FAMILIES, family, final_weights, stack_level

    parts: Dict[str, float] = {}
    for model, w in final_weights(row).items():
        name = family(model) if family(model) in NEURAL_FAMILIES else "trees"
        key = f"{name} L2" if (stack_level(model) or 1) > 1 else name  # a refit (``_L1_FULL``) counts as level 1
        parts[key] = parts.get(key, 0.0) + w
    order = [*NEURAL_FAMILIES, *(f"{n} L2" for n in NEURAL_FAMILIES), "trees L2"]
    return ", ".join(f"{k} {parts[k]:.2f}" for k in order if parts.get(k, 0) > 0) or "trees only"


@table("ensemble-all-per-table")
def ensemble_all_per_table(folder: str = ALL_FOLDER) -> str:
    """Per table: the mean test score over the split seeds that have all four configurations, and the mean over
    those seeds of the relative error reduction of each compared pair (``COMPARED``)."""
    full = {k: f for k, f in all_fits(folder).items() if all(c in f for c in ALL_CONFIGS)}
    return _per_table_means(full, ALL_CONFIGS, COMPARED)


@table("ensemble-all-fits")
def ensemble_all_fits(folder: str = ALL_FOLDER) -> str:
    """Per (table, seed): each configuration's test score, its wall seconds (marked where over the limit), and the
    final model's weights (``final_weight_text``)."""
    body = []
    for (d, seed), f in all_fits(folder).items():
        higher = next(iter(f.values()))["task"] != "regression"
        row = [f"{d}, seed {seed}{'' if higher else ' ↓'}"]
        for c in ALL_CONFIGS:
            r = f.get(c)
            row.append("—" if r is None else f"{fmt(float(r['test_score']))} ({float(r['fit_s']):.0f} s"
                       f"{', over' if r.get('over_time') else ''})")
        row += ["—" if f.get(c) is None else final_weight_text(f[c]) for c in ("ours", "ag_dl", "all")]
        body.append(row)
    return markdown(["table, seed (↓: RMSE)"] + [f"{c}: test (wall s)" for c in ALL_CONFIGS]
                    + ["final weight: ours", "ag_dl", "all"], body)


@table("ensemble-two-seeds-level1")
def ensemble_two_seeds_level1(folder: str = TWO_SEEDS) -> str:
    """Per (table, seed) with all three fits: the level-1 validation scores of the best tree of ``ours`` (its own
    trees, fitted beside MAYA), MAYA, TabSwift, and RealMLP and TabM of ``ag_dl`` (RealMLP takes MAYA's place in
    the fitting order there, with the same share of the time), then the weight the final model of each fit gives
    the neural models, summed over their level-1 and level-2 versions; the last row counts the pairs where MAYA
    validates at least as well as RealMLP, TabSwift above the best tree, and each final model weights them."""
    from .ensemble import final_weights

    def val(r: dict, name: str, sign: float) -> Optional[float]:
        v = _model_value(r, name, "val")
        return None if v is None else sign * v

    def weight(r: dict, *prefixes: str) -> float:
        return sum(w for k, w in final_weights(r).items() if k.startswith(prefixes))

    fits = two_seed_fits(folder)
    body = []
    n_maya = n_maya_ge = n_ts = n_ts_above = n_w_maya = n_w_ts = n_w_dl = 0
    for (d, seed), f in fits.items():
        o, a = f["ours"], f["ag_dl"]
        sign = 1.0 if o["task"] != "regression" else -1.0  # compare as "higher is better"
        trees = {k: val(o, f"{k}_BAG_L1", sign) for k in ("LightGBM", "CatBoost", "XGBoost")}
        tree_name, tree = max(((k, v) for k, v in trees.items() if v is not None), key=lambda kv: kv[1],
                              default=("none", None))
        maya, ts = val(o, "Maya_BAG_L1", sign), val(o, "TabSwift_BAG_L1", sign)
        real, tabm = val(a, "RealMLP_BAG_L1", sign), val(a, "TabM_BAG_L1", sign)
        if maya is not None and real is not None:
            n_maya += 1
            n_maya_ge += maya >= real
        if ts is not None:
            n_ts += 1
            n_ts_above += tree is not None and ts > tree
        w_maya, w_ts, w_dl = weight(o, "Maya"), weight(o, "TabSwift"), weight(a, "TabM", "RealMLP")
        n_w_maya += w_maya > 0
        n_w_ts += w_ts > 0
        n_w_dl += w_dl > 0

        def shown(v: Optional[float]) -> str:
            return "—" if v is None else fmt(sign * v)

        body.append([f"{d}, seed {seed}{' ↓' if sign < 0 else ''}",
                     "—" if tree is None else f"{shown(tree)} ({tree_name})", shown(maya), shown(real), shown(tabm),
                     shown(ts), f"{w_maya:.2f} / {w_ts:.2f}", f"{w_dl:.2f}"])
    n = len(fits)
    body.append([f"pairs ({n})", "", f"≥ RealMLP: {n_maya_ge} of {n_maya}", "", "",
                 f"above the best tree: {n_ts_above} of {n_ts} fitted",
                 f"{n_w_maya} / {n_w_ts} of {n} weighted", f"{n_w_dl} of {n} weighted"])
    return markdown(["dataset, seed (↓: RMSE), level-1 validation", "best tree (ours)", "MAYA", "RealMLP", "TabM",
                     "TabSwift", "final weight (L1 + L2): MAYA / TabSwift", "final weight (L1 + L2): TabM + RealMLP"],
                    body)


@table("ensemble-first-run-level1")
def ensemble_first_run_level1() -> str:
    latest = ensemble_latest("ensemble_600s")
    body, rank_sum, n = [], {m: 0.0 for m, _, _ in LEVEL1}, 0
    for d in dict.fromkeys(d for d, _ in latest):
        vals, used = {}, {}
        for label, config, name in LEVEL1:
            r = latest.get((d, config))
            m = None if r is None else r["models"].get(name)
            if m is not None and m.get("test") is not None:
                vals[label], used[label] = float(m["test"]), float(m["wall_s"])
        if not vals:
            continue
        higher = next(r for (dd, _), r in latest.items() if dd == d)["task"] != "regression"
        best = (max if higher else min)(vals.values())
        row = [f"{d}, {'accuracy' if higher else 'RMSE ↓'}"]
        for label, _, _ in LEVEL1:
            v = vals.get(label)
            if v is None:  # not fitted in time: ranked last
                row.append("—")
                rank_sum[label] += len(LEVEL1)
                continue
            row.append(f"**{fmt(v)}** ({used[label]:.0f} s)" if v == best else f"{fmt(v)} ({used[label]:.0f} s)")
            rank_sum[label] += _rank(v, vals.values(), higher)
        body.append(row)
        n += 1
    body.append(["average rank (not fitted: last)"] + [f"{rank_sum[m] / n:.2f}" for m, _, _ in LEVEL1])
    return markdown(["dataset, test score (seconds used)"] + [m for m, _, _ in LEVEL1], body)


@table("tabswift-vs-ta")
def tabswift_vs_ta(sub: str = "") -> str:
    """The table ``examples/benchmarks/tabswift_vs_ta.py`` writes from its results.json (``--report-only``)."""
    return report_table(RESULTS / "tabswift_vs_ta" / sub / "results.md")


table("tabswift-vs-ta-released")(lambda: tabswift_vs_ta("released_24x192"))


# ---- the 12 tables in TabArena's harness (docs/tabarena.md) -------------------------------------------------
TABARENA = RESULTS / "tabarena_12" / "results.md"
table("tabarena-leaderboard")(lambda: report_table(TABARENA, "Leaderboard"))
table("tabarena-per-table")(lambda: report_table(TABARENA, "Test error per table"))
table("tabarena-ensembles")(lambda: report_table(TABARENA, "Simulated ensembles", 0))
table("tabarena-ensembles-per-table")(lambda: report_table(TABARENA, "Simulated ensembles", 1))
table("tabarena-ensemble-weights")(lambda: report_table(TABARENA, "Simulated ensembles", 2))
table("tabarena-additions")(lambda: report_table(TABARENA, "What each addition changes"))


# ---- TabSwift alone at 300 s: zero-shot against fine_tune="auto" (docs/tabswift.md) -------------------------
SINGLE = "single_300s"
TABLES12 = ("qsar_biodeg", "seismic_bumps", "phoneme", "spambase", "telco_churn", "bank_churn", "satimage", "letter",
            "otto", "ames_housing", "cpu_act", "house_16H")


def _latest(folder: str, dataset: str, model: str) -> Dict[int, dict]:
    """The latest ok row per split seed of (dataset, model) in ``folder``."""
    return {s: r for (d, s, m), r in latest_rows(folder).items() if d == dataset and m == model}


def _seed_means(folder: str, dataset: str, models: Sequence[str]):
    """The latest ok row per split seed of each of ``models`` on ``dataset``, the seeds every model has, and a
    ``mean(model, field)`` over those seeds (``field``: a function of a row)."""
    recs = {m: _latest(folder, dataset, m) for m in models}
    common = sorted(set.intersection(*(set(v) for v in recs.values())))

    def mean(m: str, f: Callable[[dict], float]) -> float:
        return sum(f(recs[m][s]) for s in common) / len(common)

    return recs, common, mean


AUTO_VARIANTS = (("TABSWIFT@auto", '`"auto"`, 100 steps'), ("TABSWIFT@steps400", '`"auto"`, 400 steps'))


@table("tabswift-fine-tune-auto")
def tabswift_fine_tune_auto() -> str:
    """TabSwift alone (shipped weights) zero-shot and with fine_tune="auto" (``AUTO_VARIANTS`` that were run) beside
    LightGBM and CatBoost, each a mean over the split seeds every model has: validation and test (accuracy; RMSE
    for regression), the seeds where "auto" kept fine-tuned weights and its fit seconds, and the two targets'
    verdicts: at or above LightGBM on test, and the RMSE over the best tree's."""
    base = ("GBM", "CAT", "TABSWIFT")
    variants = [(m, label) for m, label in AUTO_VARIANTS if any(r["model"] == m for r in rows(SINGLE))]
    wins, worst, body = {m: 0 for m, _ in variants}, {m: [] for m, _ in variants}, []
    for d in TABLES12:
        recs, common, mean = _seed_means(SINGLE, d, base + tuple(m for m, _ in variants))
        if not common:
            continue
        regression = recs["GBM"][common[0]]["task"] == "regression"
        val = lambda r: float(r["val_score"])  # noqa: E731  (the runner stores RMSE, not its negative)
        test = {m: mean(m, score) for m in recs}
        better = (lambda a, b: a <= b) if regression else (lambda a, b: a >= b)
        row = [f"{d} ({'RMSE ↓' if regression else 'accuracy'})", str(len(common)), fmt(test["GBM"]),
               fmt(test["CAT"]), f"{fmt(mean('TABSWIFT', val))} / {fmt(test['TABSWIFT'])}"]
        verdicts = []
        for m, _ in variants:
            tuned = sum(bool((recs[m][s].get("fit_fine_tune") or {}).get("fine_tuned")) for s in common)
            row += [f"{fmt(mean(m, val))} / {fmt(test[m])}", f"{tuned} of {len(common)}",
                    f"{mean(m, lambda r: float(r['fit_s'])):.0f}"]
            win = better(test[m], test["GBM"])
            wins[m] += win
            ratio = "—"
            if regression:
                worst[m].append(test[m] / min(test["GBM"], test["CAT"]))
                ratio = f"{worst[m][-1]:.2f}"
            verdicts += ["yes" if win else "no", ratio]
        body.append(row + verdicts)
    n = len(body)
    body.append([f"**{n} tables**"] + [""] * (4 + 3 * len(variants))
                + [c for m, _ in variants for c in (f"**{wins[m]} of {n}**",
                                                    f"**max {max(worst[m]):.2f}**" if worst[m] else "—")])
    header = ["table", "seeds", "LightGBM test", "CatBoost test", "zero-shot val / test"]
    for _, label in variants:
        header += [f"{label}: val / test", "fine-tuned", "fit s"]
    for _, label in variants:
        header += [f"{label} >= LightGBM (test)", "RMSE / best tree's"]
    return markdown(header, body, "lrrrr" + "rrr" * len(variants) + "lr" * len(variants))


ALONE = (("MAYA", "MAYA"), ("TABM", "TabM"), ("REALMLP", "RealMLP"), ("CAT", "CatBoost"), ("GBM", "LightGBM"))


@table("maya-alone-300s")
def maya_alone_300s() -> str:
    """MAYA alone beside TabM, RealMLP, CatBoost and LightGBM at their defaults, 300 s each on 2 cores: the test
    score per table, a mean over the split seeds every model has, the best in bold; MAYA's and TabM's fit
    seconds; whether MAYA >= TabM; the average rank of each model (1 = best) over the tables shown."""
    models = [m for m, _ in ALONE]
    body, rank_sum, wins = [], {m: 0.0 for m in models}, 0
    for d in TABLES12:
        recs, common, mean = _seed_means(SINGLE, d, models)
        if not common:
            continue
        regression = recs["GBM"][common[0]]["task"] == "regression"
        test = {m: mean(m, score) for m in models}
        best = (min if regression else max)(test.values())
        for m in models:
            rank_sum[m] += _rank(test[m], test.values(), not regression)
        win = test["MAYA"] <= test["TABM"] if regression else test["MAYA"] >= test["TABM"]
        wins += win
        seconds = lambda m: f"{mean(m, lambda r: float(r['fit_s'])):.0f}"  # noqa: E731
        body.append([f"{d} ({'RMSE ↓' if regression else 'accuracy'})", " ".join(map(str, common))]
                    + [f"**{fmt(test[m])}**" if test[m] == best else fmt(test[m]) for m in models]
                    + [f"{seconds('MAYA')} / {seconds('TABM')}", "yes" if win else "no"])
    n = len(body)
    body.append([f"**{n} tables: average rank**", ""] + [f"{rank_sum[m] / max(n, 1):.2f}" for m in models]
                + ["", f"**{wins} of {n}**"])
    header = ["table", "seeds"] + [f"{label} test" for _, label in ALONE] + ["fit s MAYA / TabM", "MAYA >= TabM"]
    return markdown(header, body, "ll" + "r" * len(models) + "rl")


FT_STEPS = (("TABSWIFT@auto", "100 steps"), ("TABSWIFT@steps400", "400 steps (the default now)"))


table("tabswift-fine-tune-steps-val")(
    lambda: _settings_table("tabswift_fine_tune_steps", FT_STEPS, "val_score", "100 steps"))
table("tabswift-fine-tune-steps-test")(
    lambda: _settings_table("tabswift_fine_tune_steps", FT_STEPS, "test", "100 steps"))


# ---- MAYA's numeric embeddings (docs/maya.md) ---------------------------------------------------------------
EMBEDDINGS = (("MAYA", "linear (`None`)"), ("MAYA@periodic", "`periodic`"), ("MAYA@piecewise", "`piecewise`"))


def _settings_table(folder: str, variants: Sequence[tuple], key: str, base_name: Optional[str] = None) -> str:
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
            gains[m].append(_relative_gain(base, vals[m], regression))
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


table("maya-embeddings-val")(lambda: _settings_table("num_embeddings", EMBEDDINGS, "val_score", "linear"))
table("maya-embeddings-test")(lambda: _settings_table("num_embeddings", EMBEDDINGS, "test", "linear"))


# ---- MAYA: how it spends its budget, judged on the 13 decision tables (docs/maya.md) -------------------------
BUDGET = "maya_budget"
#: the tables MAYA's defaults are chosen on: none of the 12 of the benchmarks it is reported on
DECISION_TABLES = ("adult", "bank_marketing", "magic_telescope", "electricity", "california_housing", "diamonds",
                   "pol", "bike_sharing", "waveform_40", "segmentation", "texture", "dna", "car_evaluation")
#: (model name in the results, what it changes against the default)
BUDGET_TRIALS = (("MAYA@loss", '`stop_on="loss"`'), ("MAYA@v1", "`validation_every=1`"),
                 ("MAYA@reg", "`grad_clip=1.0`, `weight_decay=3e-4`"), ("MAYA@L2", "`num_layers=2`"),
                 ("MAYA@mc_pw", 'multiclass `num_embeddings="piecewise"`'),
                 ("MAYA@mc_q1", 'multiclass `numeric_transform="quantile"`, `numeric_scale=1`'))


def _relative_gain(base: float, other: float, regression: bool) -> float:
    """Relative validation gain of ``other`` over ``base``: lower RMSE, or higher accuracy, is a gain."""
    return (base - other) / base if regression else (other - base) / base


def budget_trials(folder: str = BUDGET, base: str = "MAYA", trials: Sequence[tuple] = BUDGET_TRIALS) -> str:
    """One row per trial against the default (``base``) on validation, over the (table, split seed) pairs of the
    decision tables where both ran (``decision_trials`` with one baseline for every trial); the pairs' count says
    which tables a trial covered (a classification setting, only those)."""
    return decision_trials(folder, [(label, ((base, model),)) for model, label in trials])


def budget_pairs(folder: str = BUDGET, base: str = "MAYA", trials: Sequence[tuple] = BUDGET_TRIALS) -> str:
    """Validation score of the default and of every trial per (decision table, split seed); — where it did not run.
    A trial's model may be a tuple of models that ran on different tables (one column: the first that ran)."""
    latest = latest_rows(folder)

    def models(m):
        return (m,) if isinstance(m, str) else tuple(m)

    shown = [(m, label) for m, label in trials if any(k[2] in models(m) for k in latest)]
    body = []
    for d in DECISION_TABLES:
        for s in (0, 1):
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


table("maya-budget-trials")(budget_trials)
# ---- MAYA: the learning-rate schedule and the batch against the paper's, on the 13 decision tables (docs/maya.md)
DECISIONS = "maya_decisions"
#: (what the trial changes, its (baseline model, trial model) comparisons).  The schedule is that of
#: recipe="paper" with every other setting at the default; the paper recipe keeps the linear numeric token, so on the
#: binary and regression tables both sides run the linear token (``MAYA@lin``), on multiclass (linear by default)
#: the default itself
DECISION_TRIALS = (
    ("constant learning rate, decay on weight matrices only (the paper's), against the plateau cut",
     (("MAYA", "MAYA@sched_m"), ("MAYA@lin", "MAYA@sched_lin_b"), ("MAYA@lin", "MAYA@sched_lin_r"))),
    ("`batch_size=1024` (Table 12's smallest) against `\"auto\"` (128 / 256)", (("MAYA", "MAYA@b1024"),)))


def decision_trials(folder: str = DECISIONS, trials: Sequence[tuple] = DECISION_TRIALS) -> str:
    """One row per trial, each against its own baselines (``(baseline model, trial model)`` comparisons) over the
    (decision table, split seed) pairs where both ran: pairs better / level / worse on validation, the mean
    relative gain of the trial, the mean fit seconds of both sides."""
    latest = latest_rows(folder)
    body = []
    for label, comparisons in trials:
        counts, gains, secs = [0, 0, 0], [], ([], [])
        for base, model in comparisons:
            for d in DECISION_TABLES:
                for s in (0, 1):
                    if (d, s, model) not in latest or (d, s, base) not in latest:
                        continue
                    a, b = latest[(d, s, base)], latest[(d, s, model)]
                    g = _relative_gain(float(a["val_score"]), float(b["val_score"]), a["task"] == "regression")
                    counts[0 if g > 0 else 1 if g == 0 else 2] += 1
                    gains.append(g)
                    secs[0].append(float(a["fit_s"]))
                    secs[1].append(float(b["fit_s"]))
        if not gains:
            continue
        mean = round(100 * sum(gains) / len(gains), 2) + 0.0  # (+ 0.0: no "-0.00")
        body.append([label, str(len(gains)), " / ".join(map(str, counts)), f"{mean:+.2f} %",
                     f"{sum(secs[0]) / len(gains):.0f}", f"{sum(secs[1]) / len(gains):.0f}"])
    return markdown(["trial (against the default)", "pairs", "better / level / worse", "mean relative gain",
                     "default s", "trial s"], body)


#: the columns of the per-pair table: batch 1024, the default with the linear token (binary, regression) and
#: the constant rate (one trial model per task)
DECISION_COLUMNS = (("MAYA@b1024", "batch 1024"), ("MAYA@lin", "default, linear token"),
                    (("MAYA@sched_m", "MAYA@sched_lin_b", "MAYA@sched_lin_r"), "constant rate"))


def decision_pairs(folder: str = DECISIONS) -> str:
    """Validation scores per (decision table, seed) of the default and each column of ``DECISION_COLUMNS``."""
    return budget_pairs(folder, "MAYA", DECISION_COLUMNS)


table("maya-decision-trials")(decision_trials)
table("maya-decision-pairs")(decision_pairs)

# ---- MAYA: the settings that had rested on one seed, against the constant-rate default, on the decision tables
CONSTANT = "maya_decisions_constant"
#: (model name in the results, what it changes against the default); a classification or regression setting ran
#: on those tables only
CONSTANT_TRIALS = (("MAYA@br2", "`num_branch=2` for classification, against 4 (the default then)"),
                   ("MAYA@br4", "`num_branch=4` for regression, against 2"),
                   ("MAYA@ema", "`ema_epochs=5` for classification (default off, the paper's)"),
                   ("MAYA@serial", "`parallel_members=1`: members one at a time (default: the first two at once)"))
table("maya-constant-trials")(lambda: budget_trials(CONSTANT, "MAYA", CONSTANT_TRIALS))
table("maya-constant-pairs")(lambda: budget_pairs(CONSTANT, "MAYA", CONSTANT_TRIALS))


# TabSwift (shipped weights, zero-shot) with 16 members against the default 8, on the decision tables (docs/tabswift.md)
TABSWIFT_MEMBERS = (("TABSWIFT@m16", "`n_estimators=16`"),)
table("tabswift-members")(lambda: budget_trials("tabswift_members", "TABSWIFT", TABSWIFT_MEMBERS))
table("tabswift-members-pairs")(lambda: budget_pairs("tabswift_members", "TABSWIFT", TABSWIFT_MEMBERS))
table("maya-budget-pairs")(budget_pairs)


# ---- MAYA: TabM's parameter-efficient members and RealMLP's / TabM's input scaling (docs/maya.md) ------------
TABM_SCALING = (("MAYA", "default"), ("MAYA@k4", "`tabm_k=4`"), ("MAYA@robust", '`"robust_smooth_clip"`'),
                ("MAYA@noisyq", '`"noisy_quantile"`'), ("MAYA@m8", "`ensemble_members=8`"))
TABM_INSTEAD = (("MAYA@m1", "one network"), ("MAYA@k4m1", "one network, `tabm_k=4`"),
                ("MAYA", "default (up to 3 networks)"))


table("maya-tabm-scaling-val")(lambda: _settings_table("maya_tabm_and_scaling", TABM_SCALING, "val_score"))
table("maya-tabm-instead-val")(
    lambda: _settings_table("maya_tabm_and_scaling", TABM_INSTEAD, "val_score", "one network"))
table("maya-tabm-scaling-test")(lambda: _settings_table("maya_tabm_and_scaling", TABM_SCALING, "test"))


# ---- MAYA: more patience, and the weight average for regression (docs/maya.md) -----------------------------
PATIENCE = (("MAYA@again", "default (`patience=16`)"), ("MAYA@p32", "`patience=32`"))
EMA_REGRESSION = (("MAYA@again", "default (`ema_epochs=5`)"), ("MAYA@noema", "`ema_epochs=None`"))


table("maya-patience-val")(lambda: _settings_table("maya_patience_and_ema", PATIENCE, "val_score", "the default"))
table("maya-ema-regression-val")(
    lambda: _settings_table("maya_patience_and_ema", EMA_REGRESSION, "val_score", "the default"))
table("exp-light-ft")(lambda: ensemble_pair("ensemble_600s", "ensemble_600s_light_ft"))
table("exp-fair-share")(
    lambda: ensemble_pair("ensemble_600s_fair_share", "ensemble_600s_fair_share", candidate=True, seeds=(0, 1)))


def ensemble_extra(base_folder: str, candidate_folder: str, extra: str, seeds: Sequence[int] = (0,)) -> str:
    """A candidate that adds one level-1 model (``extra``, e.g. ``Maya_plr_BAG_L1``) to ``ours``: per (dataset, seed),
    the final model's validation and test score and the fit's seconds (``base_folder``'s ``ours`` rows without
    candidate entries -> ``candidate_folder``'s with), the extra model's validation score, seconds and weight in
    the final model; then the pairs whose final validation is better / level / worse, the mean relative
    reduction of the final model's validation error and the pairs in which the extra model carries weight."""
    from .ensemble import final_weights, mean_finite, outcome, relative_error_reduction

    body, outcomes, gains, weighted = [], [], [], 0
    for seed in seeds:
        base, cand = ensemble_ours(base_folder, False, seed), ensemble_ours(candidate_folder, True, seed)
        for d, b in base.items():
            c = cand.get(d)
            if c is None:
                continue
            e_b, e_c = _error(b, b["val_score"]), _error(c, c["val_score"])
            outcomes.append(outcome(e_c, e_b))
            gains.append(relative_error_reduction(e_c, e_b))
            val, wall = _model_value(c, extra, "val"), _model_value(c, extra, "wall_s")
            weight = final_weights(c).get(extra, 0.0)
            weighted += weight > 0
            body.append([f"{d}, seed {seed}" + (" ↓" if b["task"] == "regression" else ""),
                         _pair(b["val_score"], c["val_score"]), _pair(b["test_score"], c["test_score"]),
                         "—" if val is None else fmt(val), "—" if wall is None else f"{wall:.0f}",
                         f"{weight:.2f}", _pair(b["fit_s"], c["fit_s"], lambda v: f"{v:.0f}")])
    mean, _ = mean_finite(gains)
    counts = " / ".join(str(outcomes.count(o)) for o in ("win", "tie", "loss"))
    body.append([f"**{len(outcomes)} pairs: final validation better / level / worse**", counts,
                 "", "", "", "", ""])
    body.append(["**mean relative reduction of the final validation error**", f"{100 * mean:+.2f} %",
                 "", "", "", "", ""])
    body.append(["**pairs in which the added model carries weight in the final model**",
                 f"{weighted} of {len(outcomes)}", "", "", "", "", ""])
    return markdown(["dataset (↓: RMSE)", "final model, val", "final model, test", "added model, val",
                     "added model, s", "added model's final weight", "fit s"], body)


table("exp-idle-maya")(lambda: ensemble_extra(TWO_SEEDS, "ensemble_600s_idle_maya", "Maya_plr_BAG_L1", seeds=(0, 1)))
table("exp-idle-tabswift")(
    lambda: ensemble_extra(TWO_SEEDS, "ensemble_600s_idle_tabswift", "TabSwift_ft_BAG_L1", seeds=(0, 1)))
table("exp-ensemble-repeat")(lambda: ensemble_pair("ensemble_600s", "ensemble_600s_repeat"))


@table("maya-p1-first")
def maya_p1_first() -> str:
    return grid("maya_p1", ("california_housing", "telco_churn", "adult", "bank_churn"),
                ("MAYA", "GBM", "CAT", "NN_TORCH"), ranks=True)


# ---- docs/experiments.md -----------------------------------------------------------------------------------
@table("exp-one-block")
def exp_one_block() -> str:
    f = "depth_and_branches/one_block"
    body = [["satimage (300 s)", cell(f, "satimage", "MAYA", time_limit=300), cell(f, "satimage", "MAYA@L1", time_limit=300),
             cell(f, "satimage", "NN_TORCH")],
            ["letter (300 s)", cell(f, "letter", "MAYA", time_limit=300), cell(f, "letter", "MAYA@L1", time_limit=300),
             cell(f, "letter", "NN_TORCH")],
            ["california_housing (600 s, RMSE ↓)", cell(f, "california_housing", "MAYA"),
             cell(f, "california_housing", "MAYA@L1"), "—"]]
    for d in ("telco_churn", "phoneme", "satimage", "cpu_act"):
        body.append([f"{d} (60 s{', RMSE ↓' if d == 'cpu_act' else ''})", cell(f, d, "MAYA", time_limit=60),
                     cell(f, d, "MAYA@L1", time_limit=60), "—"])
    return markdown(["dataset (budget)", "two MBA blocks", "one block (adopted)", "NN_TORCH"], body)


@table("exp-deeper-member")
def exp_deeper_member() -> str:
    f = "depth_and_branches/deeper_member"
    body = [["satimage", cell(f"{f}/satimage_deeper", "satimage", "MAYA"), cell(f"{f}/satimage_deeper", "satimage", "MAYA@deep15"),
             cell(f"{f}/default", "satimage", "MAYA"), cell("depth_and_branches/one_block", "satimage", "NN_TORCH")],
            ["letter", cell("depth_and_branches/one_block", "letter", "MAYA@L1", time_limit=300), "—",
             cell(f"{f}/default", "letter", "MAYA"), cell("depth_and_branches/one_block", "letter", "NN_TORCH")]]
    return markdown(["dataset, accuracy (300 s)", "one block, three members", "deeper member at 1.5",
                     "deeper member at 2.0 (adopted)", "NN_TORCH"], body)


@table("exp-four-branches")
def exp_four_branches() -> str:
    f = "depth_and_branches/four_branches_parallel_pair"
    one = "depth_and_branches/one_block"
    body = [["[CLS] fold", cell(f"{f}/fold", "letter", "MAYA"), cell(f"{f}/fold", "satimage", "MAYA")],
            ["+ two members at once", cell(f"{f}/parallel", "letter", "MAYA"), cell(f"{f}/parallel", "satimage", "MAYA")],
            ["+ `num_branch=4`", cell(f"{f}/screens", "letter", "MAYA@br4"), cell(f"{f}/screens", "satimage", "MAYA@br4")],
            ["+ no deeper member (adopted)", cell(f"{f}/default", "letter", "MAYA"),
             cell(f"{f}/screens", "satimage", "MAYA@br4nodeep") + " / " + cell(f"{f}/default", "satimage", "MAYA")],
            ["the same, at b7cccd5", cell(f"{f}/default_b7cccd5", "letter", "MAYA"),
             cell(f"{f}/default_b7cccd5", "satimage", "MAYA")],
            ["NN_TORCH", cell(one, "letter", "NN_TORCH"), cell(one, "satimage", "NN_TORCH")]]
    return markdown(["change (cumulative), accuracy at 300 s", "letter", "satimage"], body)


@table("exp-members")
def exp_members() -> str:
    f = "ensemble_members/california_600s"
    body = [["one network", cell(f, "california_housing", "MAYA")],
            ["one network (`ensemble_members=1`)", cell(f, "california_housing", "MAYA@m1")],
            ["up to three members (`auto`, adopted)", cell(f, "california_housing", "MAYA@auto2")]]
    return markdown(["california_housing, 600 s", "test RMSE ↓"], body)


@table("exp-replanning")
def exp_replanning() -> str:
    f = "ensemble_members/replanning_and_screens"
    body = [["members planned once, after the first", cell(f"{f}/letter600", "letter", "MAYA"), "—"],
            ["planned again before each member (adopted)", cell(f"{f}/letter600_replan", "letter", "MAYA"),
             cell(f"{f}/letter600_replan", "letter", "NN_TORCH")]]
    return markdown(["letter at 600 s, accuracy", "MAYA", "NN_TORCH"], body)


@table("exp-screens-letter-satimage")
def exp_screens() -> str:
    f = "ensemble_members/replanning_and_screens/screens"
    labels = {"MAYA@h128": "`hidden_size=128`", "MAYA@lr2e3": "`learning_rate=0.002`", "MAYA@b64": "`batch_size=64`",
              "MAYA@dec2": "`num_decoder_layers=2`", "MAYA@h8br4": "`num_heads=8, num_branch=4`",
              "NN_TORCH": "NN_TORCH"}
    body = [[lab, cell(f, "letter", m), cell(f, "satimage", m)] for m, lab in labels.items()]
    return markdown(["screen (300 s, accuracy)", "letter", "satimage"], body)


@table("exp-anneal")
def exp_anneal() -> str:
    f = "optimisation/anneal_and_batch/multiclass"
    body = [["default (anneal 0.3, batch 128)", cell(f, "letter", "MAYA"), cell(f, "satimage", "MAYA")],
            ["`budget_anneal=None`", cell(f, "letter", "MAYA@noanneal"), cell(f, "satimage", "MAYA@noanneal")],
            ["`batch_size=256`", cell(f, "letter", "MAYA@b256"), cell(f, "satimage", "MAYA@b256")]]
    return markdown(["300 s, 2 cores, accuracy", "letter", "satimage"], body)


@table("exp-batch")
def exp_batch() -> str:
    f = "optimisation/multiclass_batch"
    body = [["32 rows per class (832)", cell(f, "letter", "MAYA")], ["256", cell(f, "letter", "MAYA@b256")],
            ["128", cell(f, "letter", "MAYA@b128")]]
    return markdown(["letter, batch rows (300 s)", "accuracy"], body)


@table("exp-lr-recipe")
def exp_lr_recipe() -> str:
    lr, rc = "optimisation/learning_rate", "optimisation/recipe"
    body = [[f"{d} (60 s{', RMSE ↓' if d == 'cpu_act' else ''})", cell(lr, d, "MAYA"), cell(lr, d, "MAYA@lr2"), "—"]
            for d in ("telco_churn", "phoneme", "satimage", "cpu_act")]
    body += [[f"{d} (120 s{', RMSE ↓' if d == 'california_housing' else ''})", cell(rc, d, "MAYA"), "—",
              cell(rc, d, "MAYA@paper")] for d in ("telco_churn", "qsar_biodeg", "california_housing")]
    return markdown(["dataset (budget)", "default", "`learning_rate=2e-3`", "`recipe=\"paper\"`"], body)


@table("exp-multiclass-early")
def exp_multiclass_early() -> str:
    f = "optimisation/multiclass_300s"
    return markdown(["dataset (300 s)", "MAYA", "NN_TORCH"],
                    [[d, cell(f, d, "MAYA"), cell(f, d, "NN_TORCH")] for d in ("satimage", "letter")])


@table("exp-california-early")
def exp_california_early() -> str:
    f = "optimisation/california_600s"
    return markdown(["california_housing, 600 s", "test RMSE ↓"],
                    [["default", cell(f, "california_housing", "MAYA")],
                     ["`hidden_size=128, num_heads=8`", cell(f, "california_housing", "MAYA@d128")]])


@table("exp-weight-averaging")
def exp_weight_averaging() -> str:
    f = "weight_averaging/regression"
    budgets = {"california_housing": 600, "cpu_act": 300, "ames_housing": 120, "pol": 120}
    body = [[f"{d} ({t} s)", cell(f, d, "MAYA@s4", time_limit=t), cell(f, d, "MAYA@kb5", time_limit=t),
             cell(f, d, "MAYA@e5", time_limit=t), cell(f, d, "MAYA@ead5", time_limit=t)] for d, t in budgets.items()]
    m = "weight_averaging/multiclass"
    body += [[f"{d} (300 s, accuracy)", cell(m, d, "MAYA@s4"), cell(m, d, "MAYA@kb5"), "—", "—"]
             for d in ("satimage", "letter")]
    return markdown(["dataset (budget), test RMSE ↓ unless noted", "no average", "average if better (adopted for regression)",
                     "average always", "+ tokenizer ReLU + 2 IAIL blocks"], body)


@table("exp-numeric-transform")
def exp_numeric_transform() -> str:
    f = "numeric_inputs/transform"
    body = [["KNN", seeds(f"{f}/digits", "digits", "KNN"), "—", "—"],
            ["NN_TORCH", seeds(f"{f}/digits", "digits", "NN_TORCH"),
             seeds("label_smoothing/first_screen/seeds", "satimage", "NN_TORCH"), cell(f"{f}/letter", "letter", "NN_TORCH")],
            ["quantile (the earlier default)", seeds(f"{f}/digits", "digits", "MAYA"),
             seeds("label_smoothing/first_screen/seeds", "satimage", "MAYA"), cell(f"{f}/letter", "letter", "MAYA")],
            ["`standard`", seeds(f"{f}/digits", "digits", "MAYA@std"), seeds(f"{f}/satimage", "satimage", "MAYA@std"),
             cell(f"{f}/letter", "letter", "MAYA@std")],
            ["`minmax`", seeds(f"{f}/digits", "digits", "MAYA@mm"), seeds(f"{f}/satimage", "satimage", "MAYA@mm"),
             cell(f"{f}/letter", "letter", "MAYA@mm")],
            ["`minmax_or_quantile` (adopted for multiclass)", seeds(f"{f}/digits", "digits", "MAYA@mq"),
             "= minmax (every column)", cell(f"{f}/letter", "letter", "MAYA@mq") + " / " + cell(f"{f}/letter", "letter", "MAYA@auto")],
            ["`qk_shared_weights=True`", seeds(f"{f}/digits", "digits", "MAYA@qk"), cell(f"{f}/satimage", "satimage", "MAYA@qk"), "—"],
            ["`train_context_size=1024`", seeds(f"{f}/digits", "digits", "MAYA@ctx1024"), "—", "—"],
            ["`ensemble_members=5`", seeds(f"{f}/digits", "digits", "MAYA@m5"), "—", "—"]]
    return markdown(["model (300 s), test accuracy", "digits, seeds 0 / 1 / 2 (mean)", "satimage, seeds 0 / 1 / 2 (mean)",
                     "letter, seed 0"], body, "llll")


@table("exp-numeric-scale")
def exp_numeric_scale() -> str:
    f = "numeric_inputs/scale"
    body = [["s = 5 (adopted for multiclass)", cell(f"{f}/letter", "letter", "MAYA"), seeds(f"{f}/satimage", "satimage", "MAYA"),
             seeds(f"{f}/digits", "digits", "MAYA")],
            ["s = 3", cell(f"{f}/letter", "letter", "MAYA@s3"), seeds(f"{f}/satimage", "satimage", "MAYA@s3"), "—"],
            ["s = 5, `add_act=True`", cell(f"{f}/letter", "letter", "MAYA@act"), seeds(f"{f}/satimage", "satimage", "MAYA@act"), "—"],
            ["s = 5, `ensemble_members=8`", "—", seeds(f"{f}/satimage", "satimage", "MAYA@m8"), seeds(f"{f}/digits", "digits", "MAYA@m8")]]
    return markdown(["config (300 s), test accuracy", "letter, seed 0", "satimage, seeds 0 / 1 / 2 (mean)",
                     "digits, seeds 0 / 1 / 2 (mean)"], body, "llll")


@table("exp-numeric-scale-binary")
def exp_numeric_scale_binary() -> str:
    f = "numeric_inputs/scale"
    body = [[d, cell(f"{f}/binary60", d, "MAYA"), cell(f"{f}/binary60", d, "MAYA@s5")]
            for d in ("telco_churn", "phoneme", "qsar_biodeg", "bank_churn")]
    body += [[f"{d} (RMSE ↓)", cell(f"{f}/regression", d, "MAYA"), cell(f"{f}/regression", d, "MAYA@s5")]
             for d in ("cpu_act", "california_housing")]
    return markdown(["dataset (60 s; california_housing 600 s)", "s = 1 (kept)", "s = 5"], body)


@table("exp-label-smoothing-first")
def exp_label_smoothing_first() -> str:
    f = "label_smoothing/first_screen"
    body = [[str(s), cell(f"{f}/seeds", "satimage", "NN_TORCH", s), cell(f"{f}/seeds", "satimage", "MAYA", s),
             cell(f"{f}/seeds", "satimage", "MAYA@ls1", s)] for s in (0, 1, 2)]
    body.append(["letter (seed 0)", "—", "—", cell(f"{f}/letter", "letter", "MAYA@ls1")])
    body += [[f"{d} (60 s)", "—", cell(f"{f}/binary60", d, "MAYA"), cell(f"{f}/binary60", d, "MAYA@ls1")]
             for d in ("telco_churn", "phoneme", "qsar_biodeg")]
    return markdown(["satimage split seed (300 s)", "NN_TORCH", "MAYA (default then)", "`label_smoothing=0.1`"], body)


@table("exp-label-smoothing-auto")
def exp_label_smoothing_auto() -> str:
    sc = "numeric_inputs/scale"
    body = [["satimage, seed 0 (three runs)", "—",
             " / ".join(cell(f"{sc}/satimage", "satimage", m) for m in ("MAYA", "MAYA@again1", "MAYA@again2")),
             " / ".join(cell(f"{LS}/satimage", "satimage", m) for m in ("MAYA", "MAYA@again1", "MAYA@again2"))],
            ["satimage, seeds 0 / 1 / 2 (mean)", seeds("label_smoothing/first_screen/seeds", "satimage", "NN_TORCH"),
             seeds(f"{sc}/satimage", "satimage", "MAYA"),
             seeds(f"{LS}/satimage", "satimage", "MAYA") + "; again " + seeds(f"{LS}/satimage", "satimage", "MAYA@again1", (0, 1, 2))],
            ["letter, seed 0", cell("numeric_inputs/transform/letter", "letter", "NN_TORCH"), cell(f"{LS}/letter", "letter", "MAYA@ls0"),
             cell(f"{LS}/letter", "letter", "MAYA") + " / " + cell(f"{LS}/letter", "letter", "MAYA@again1")],
            ["otto, 10,000 rows, seed 0", cell(f"{LS}/otto", "otto", "NN_TORCH"), cell(f"{LS}/otto", "otto", "MAYA@ls0"),
             cell(f"{LS}/otto", "otto", "MAYA")],
            ["digits, seeds 0 / 1 / 2 (mean)", seeds("numeric_inputs/transform/digits", "digits", "NN_TORCH"),
             seeds(f"{LS}/digits", "digits", "MAYA@ls0"),
             seeds(f"{LS}/digits", "digits", "MAYA") + "; again " + seeds(f"{LS}/digits", "digits", "MAYA@again1")]]
    return markdown(["table (300 s), test accuracy", "NN_TORCH", "`label_smoothing=0`", "`auto` = 0.1 (adopted)"], body, "llll")


@table("exp-context-topk")
def exp_context_topk() -> str:
    path = RESULTS / "probes" / "context_topk" / "context_topk.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    ks = list(dict.fromkeys(r["topk"] for r in recs))
    body = []
    for d in dict.fromkeys(r["dataset"] for r in recs):
        by_k = {r["topk"]: r for r in recs if r["dataset"] == d}
        body.append([d] + [fmt(by_k[k]["test_accuracy"]) if k in by_k else "—" for k in ks])
    return markdown(["test accuracy"] + [f"k = {k}" if k else "whole context" for k in ks], body)


@table("exp-iail-probe")
def exp_iail_probe() -> str:
    path = RESULTS / "probes" / "iail_retrieval" / "probe.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    body = [[f"{r['dataset']}, seed {r['seed']}", r["hyperparameters"].get("numeric_transform", "auto"),
             "yes" if r["hyperparameters"].get("qk_shared_weights") else "no",
             fmt(r["maya"]), fmt(r["knn5_input"]), fmt(r["knn5_encoding"]), fmt(r["iail_1nn"]), fmt(r["iail_vote"])]
            for r in recs]
    return markdown(["table", "numeric inputs", "shared Q/K", "MAYA", "5-NN inputs", "5-NN encodings", "IAIL top row",
                     "IAIL vote"], body, "lllrrrrr")


@table("exp-throughput")
def exp_throughput() -> str:
    t = json.loads((RESULTS / "throughput" / "throughput.json").read_text())
    body = [["training throughput", f"{t['train_rows_per_s']:,.0f} rows/s"],
            ["model FLOPs per row per training step", f"{1000 * t['model_gflop_per_row_train_step']:.2f} MFLOP"],
            ["achieved", f"{t['achieved_gflops']:.1f} GFLOP/s"],
            ["fp32 matmul rate, 2048 × 2048", f"{t['matmul_fp32_gflops_2048']:.0f} GFLOP/s"],
            ["achieved / matmul rate", f"{100 * t['achieved_fraction_of_matmul']:.1f} %"],
            ["encode the 13,209-row context + predict 2,000 rows", f"{t['context_encode_plus_2000_queries_s']:.2f} s"],
            ["peak resident memory", f"{t['peak_rss_mib']:.0f} MiB"]]
    return markdown(["quantity", "value"], body)


@table("exp-context-curve")
def exp_context_curve() -> str:
    with open(RESULTS / "pretraining" / "context_curve_c3" / "context_curve.csv") as f:
        recs = list(csv.DictReader(f))
    sizes = sorted({int(r["context_rows"]) for r in recs})
    body = []
    for d in dict.fromkeys(r["dataset"] for r in recs):
        means = []
        for n in sizes:
            vals = [float(r["score"]) for r in recs if r["dataset"] == d and int(r["context_rows"]) == n]
            means.append(sum(vals) / len(vals))
        higher = next(r for r in recs if r["dataset"] == d)["higher_is_better"] == "True"
        ok = all((b >= a) if higher else (b <= a) for a, b in zip(means, means[1:]))
        body.append([d] + [fmt(v) for v in means] + ["yes" if ok else "no"])
    return markdown(["dataset (mean of 3 ensemble seeds)"] + [f"{n} rows" for n in sizes] + ["never worse with more rows"],
                    body, "l" + "r" * len(sizes) + "l")


@table("exp-campaign")
def exp_campaign() -> str:
    with open(RESULTS / "pretraining" / "campaign_candidates.csv") as f:
        recs = list(csv.DictReader(f))
    body = [[r["candidate"], r["cumulative_train_hours"], r["zero_shot_better_vs_shipped"] or "—",
             r["zero_shot_worse_vs_shipped"] or "—", r["wins_vs_lr"] or "—", r["wins_vs_knn"] or "—", r["adopted"]]
            for r in recs]
    return markdown(["candidate", "training hours", "better than the shipped one", "worse", "wins vs LR", "wins vs KNN",
                     "adopted"], body, "lrrrrrl")


# ---- rewriting and checking --------------------------------------------------------------------------------
def render(text: str) -> str:
    """``text`` with every marked region rebuilt; an unknown table name is a KeyError naming it."""
    def fill(m: "re.Match") -> str:
        name = m.group(2)
        if name not in TABLES:
            raise KeyError(f"unknown results table {name!r} (known: {', '.join(sorted(TABLES))})")
        return m.group(1) + TABLES[name]() + m.group(4)
    return REGION.sub(fill, text)


def differences(text: str) -> List[str]:
    """Names of the marked tables in ``text`` whose content differs from what their files give."""
    return [m.group(2) for m in REGION.finditer(text)
            if m.group(2) not in TABLES or TABLES[m.group(2)]() != m.group(3)]


def doc_paths(root: Path = REPO) -> List[Path]:
    """README.md and every docs/*.md: a table placed in a new page is checked without registering the page."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a table differs")
    args = ap.parse_args(argv)
    stale = []
    for path in doc_paths():
        text = path.read_text()
        if args.check:
            stale += [f"{path.relative_to(REPO)}: {name}" for name in differences(text)]
        else:
            new = render(text)
            if new != text:
                path.write_text(new)
                print(f"rewrote tables in {path.relative_to(REPO)}")
    if stale:
        print("tables that differ from their results files:\n  " + "\n  ".join(stale), file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
