"""Tables of docs/ensemble_benchmark.md (and README.md's ``ensemble-all``): the 600 s ensemble
benchmark's first run, its two split seeds and the run with every family."""

from __future__ import annotations

from typing import Dict, List, Optional

from .common import (ensemble_latest, ensemble_ours, error_of_row, fmt, markdown, model_value, percent, rank_of,
                     rer, table)


ENSEMBLE_CONFIGS = {"gbdt": "trees alone", "ours": "+ MAYA + TabSwift", "ag_dl": "+ TabM + RealMLP"}
#: level-1 bagged models of the ensemble fits: (label, config of the fit it comes from, model name)
LEVEL1 = (("MAYA", "ours", "Maya_BAG_L1"), ("TabSwift", "ours", "TabSwift_BAG_L1"), ("TabM", "ag_dl", "TabM_BAG_L1"),
          ("RealMLP", "ag_dl", "RealMLP_BAG_L1"), ("CatBoost", "gbdt", "CatBoost_BAG_L1"),
          ("LightGBM", "gbdt", "LightGBM_BAG_L1"))

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
                    + [percent(rer(fits["ours"], g)), percent(rer(fits["ag_dl"], g))])
    return markdown(["dataset, test score"] + list(ENSEMBLE_CONFIGS.values())
                    + ["MAYA + TabSwift vs trees", "TabM + RealMLP vs trees"], body)


@table("ensemble-first-run-summary")
def ensemble_first_run_summary() -> str:
    from ..ensemble import mean_finite, win_tie_loss

    def line(label: str, a_rows: Dict[str, dict], b_rows: Dict[str, dict]) -> List[str]:
        common = [d for d in a_rows if d in b_rows]
        pairs = [(error_of_row(a_rows[d], a_rows[d]["test_score"]), error_of_row(b_rows[d], b_rows[d]["test_score"]))
                 for d in common]
        wtl = win_tie_loss(pairs)
        rers = [rer(a_rows[d], b_rows[d]) for d in common]
        worst = min(range(len(common)), key=lambda i: rers[i])
        return [label, f"{wtl.wins} / {wtl.ties} / {wtl.losses}", f"{wtl.p_value:.2f}", percent(mean_finite(rers)[0]),
                f"{percent(rers[worst])} ({common[worst]})"]

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
                    + [percent(sum(rer(f[a], f[b]) for f in fs) / len(fs)) for _, a, b in compared])
    return markdown(["dataset, test score (mean over seeds)", "seeds"] + list(configs.values())
                    + [label for label, _, _ in compared], body)


@table("ensemble-two-seeds-targets")
def ensemble_two_seeds_targets(folder: str = TWO_SEEDS) -> str:
    """Each comparison over the (table, seed) pairs measured: pairs at least as good, the mean relative error
    reduction, the worst table (mean over its seeds), whether each target is met (only once all 24 pairs
    are measured; before that, the verdict says how many are), and the pairs better / worse with the sign test's
    p-value (above 0.1: level within noise)."""
    from ..ensemble import mean_finite
    from ..stats import p_text, sign_test_p

    fits = two_seed_fits(folder)
    n, by_table = len(fits), _by_table(fits)

    def judged(cell: str, want: Optional[str], ok: bool) -> str:
        if want is None:
            return cell
        verdict = ("met" if ok else "missed") if n == TWO_SEED_PAIRS else f"{n} of {TWO_SEED_PAIRS} pairs measured"
        return f"{cell} (target ≥ {want}: {verdict})"

    body = []
    for label, a, b, min_pairs, min_mean, min_table in TWO_SEED_TARGETS:
        rers = [rer(f[a], f[b]) for f in fits.values()]
        at_least = sum(r >= 0 for r in rers)
        mean = mean_finite(rers)[0]
        better, worse = sum(r > 0 for r in rers), sum(r < 0 for r in rers)
        per_table = {d: sum(rer(f[a], f[b]) for f in fs) / len(fs) for d, fs in by_table.items()}
        worst = min(per_table, key=per_table.get)
        body.append([label,
                     judged(f"{at_least} of {n}", None if min_pairs is None else str(min_pairs),
                            min_pairs is not None and at_least >= min_pairs),
                     judged(percent(mean), None if min_mean is None else percent(min_mean),
                            min_mean is not None and mean >= min_mean),
                     judged(f"{percent(per_table[worst])} ({worst})", None if min_table is None else percent(min_table),
                            min_table is not None and per_table[worst] >= min_table),
                     f"{better} / {worse} ({p_text(sign_test_p(better, worse))})"])
    return markdown(["comparison, (table, seed) pairs", "pairs at least as good", "mean relative error reduction",
                     "worst table (mean over seeds)", "better / worse (sign test p)"], body, "lrrlr")


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
    """:func:`ensemble_all` with each target's verdict (docs/ensemble_benchmark.md)."""
    return ensemble_all(folder, targets=True)


@table("ensemble-all")
def ensemble_all(folder: str = ALL_FOLDER, targets: bool = False) -> str:
    """Each comparison over the (table, seed) pairs where both fits exist: pairs at least as good, the mean and
    the median relative error reduction, the worst table (mean over its seeds), the mean without the best table,
    with ``targets`` each target's verdict once all 24 pairs are measured (before that, how many are), and the
    pairs better / worse with the sign test's p-value (above 0.1: level within noise)."""
    import statistics

    from ..ensemble import mean_finite
    from ..stats import p_text, sign_test_p

    fits = all_fits(folder)
    body = []
    for label, a, b, min_pairs, min_mean, min_median, min_table in ALL_TARGETS:
        pairs = {k: f for k, f in fits.items() if a in f and b in f}
        n = len(pairs)
        if not n:
            body.append([label, f"0 of {TWO_SEED_PAIRS} pairs measured", "", "", "", ""])
            continue

        def judged(cell: str, want: Optional[str], ok: bool) -> str:
            if want is None or not targets:
                return cell
            verdict = ("met" if ok else "missed") if n == TWO_SEED_PAIRS else f"{n} of {TWO_SEED_PAIRS} measured"
            return f"{cell} (≥ {want}: {verdict})"

        rers = [rer(f[a], f[b]) for f in pairs.values()]
        at_least, mean, median = sum(r >= 0 for r in rers), mean_finite(rers)[0], statistics.median(rers)
        better, worse = sum(r > 0 for r in rers), sum(r < 0 for r in rers)
        per_table: Dict[str, list] = {}
        for (d, _), f in pairs.items():
            per_table.setdefault(d, []).append(rer(f[a], f[b]))
        per_table = {d: sum(v) / len(v) for d, v in per_table.items()}
        worst, best = min(per_table, key=per_table.get), max(per_table, key=per_table.get)
        rest = mean_finite(rer(f[a], f[b]) for (d, _), f in pairs.items() if d != best)[0]
        body.append([label,
                     judged(f"{at_least} of {n}", None if min_pairs is None else str(min_pairs),
                            min_pairs is not None and at_least >= min_pairs),
                     judged(percent(mean), None if min_mean is None else percent(min_mean),
                            min_mean is not None and mean >= min_mean),
                     judged(percent(median), None if min_median is None else percent(min_median),
                            min_median is not None and median >= min_median),
                     judged(f"{percent(per_table[worst])} ({worst})", None if min_table is None else percent(min_table),
                            min_table is not None and per_table[worst] >= min_table),
                     f"{percent(rest)} (without {best})" if len(per_table) > 1 else "—",
                     f"{better} / {worse} ({p_text(sign_test_p(better, worse))})"])
    return markdown(["comparison, (table, seed) pairs", "pairs at least as good", "mean relative error reduction",
                     "median", "worst table (mean over seeds)", "mean without the best table",
                     "better / worse (sign test p)"], body, "lrrrllr")


def final_weight_text(row: dict) -> str:
    """The weight of the final model on each neural family at level 1 (``MAYA 0.33``) and on the level-2 models
    (``RealMLP L2 0.94``, ``trees L2 0.60``), which take every level-1 model's predictions as features, so a
    final model on level-2 trees alone still uses the neural models; "trees only" when every weight is on a
    level-1 tree."""
    from ..ensemble import NEURAL_FAMILIES, family, final_weights, stack_level

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
    from ..ensemble import final_weights

    def val(r: dict, name: str, sign: float) -> Optional[float]:
        v = model_value(r, name, "val")
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
            rank_sum[label] += rank_of(v, vals.values(), higher)
        body.append(row)
        n += 1
    body.append(["average rank (not fitted: last)"] + [f"{rank_sum[m] / n:.2f}" for m, _, _ in LEVEL1])
    return markdown(["dataset, test score (seconds used)"] + [m for m, _, _ in LEVEL1], body)
