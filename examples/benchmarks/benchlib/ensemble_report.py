"""The report of the ensemble benchmark (``examples/benchmarks/mixed_ensemble_benchmark.py``): ``results.md``,
``error_reduction.png`` and ``pama.png`` from the rows of ``results.jsonl`` (``benchlib.ensemble_store``).

Sections: the summary (each compared pair's wins / ties / losses, sign test and relative error reductions) and the
targets, per dataset, the fits, PAMA of the individual models, where the best tree is wrong and a neural model
right, the neural models, and ``ours`` across package versions.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from .ensemble_store import CONFIGS, SETTINGS, latest_ok, name_tag, read_rows, versions
from .provenance import package_repo

#: (A, B) pairs the report compares, A's relative error reduction over B
COMPARISONS = (("ours", "gbdt"), ("ours", "ag_dl"), ("all", "ag_dl"), ("all", "gbdt"))


def compare(latest: dict) -> list[dict]:
    """One entry per dataset: the three errors, the relative error reductions of ours, the winner."""
    from .ensemble import outcome, relative_error_reduction

    out = []
    for dataset in dict.fromkeys(d for d, _ in latest):
        fits = {c: latest.get((dataset, c)) for c in CONFIGS}
        errors = {c: float(r["test_error"]) for c, r in fits.items() if r is not None}
        any_row = next(r for r in fits.values() if r is not None)
        entry = {"dataset": dataset, "task": any_row["task"], "metric": any_row["metric"],
                 "n_train": any_row.get("n_train"), "fits": fits, "errors": errors,
                 "scores": {c: float(r["test_score"]) for c, r in fits.items() if r is not None}}
        for a, b in COMPARISONS:
            if a in errors and b in errors:
                key = b if a == "ours" else f"{a}_{b}"  # ours vs B: rer_B, any other A: rer_A_B
                entry[f"rer_{key}"] = relative_error_reduction(errors[a], errors[b])
                entry[f"vs_{key}"] = outcome(errors[a], errors[b])
        if errors:
            low = min(errors.values())
            entry["winner"] = "=".join(c for c in CONFIGS if c in errors and outcome(errors[c], low) == "tie")
        out.append(entry)
    return out



def versions_section(rows: list[dict], settings: dict | None, repo: Path | None = None) -> list[str]:
    """``ours`` at every package version the results hold, and each version against the one before it on
    the validation rows (where a change is chosen) and on the test rows."""
    from .ensemble import error_of, mean_finite, relative_error_reduction, win_tie_loss

    order, latest = versions(rows, settings, repo)
    if not order:
        return []
    lines = ["## `ours` across package versions", "",
             "The latest `ours` fit of each package version (the last commit that changed `autogluon_maya` or the "
             "fit helper). `val` is the P1 validation part, on which AutoGluon also fits the ensemble weights and "
             "picks the final model: optimistic for every version alike. A change to the package is judged on "
             "`val`, never on `test`.", ""]
    datasets = list(dict.fromkeys(d for d, _ in latest))
    for older, newer in zip(order, order[1:]):
        common = [d for d in datasets if (d, older) in latest and (d, newer) in latest]
        if not common:
            continue
        for part, key in (("validation", "val_score"), ("test", "test_score")):
            errs = [(error_of(float(latest[(d, newer)][key]), latest[(d, newer)]["metric"]),
                     error_of(float(latest[(d, older)][key]), latest[(d, older)]["metric"])) for d in common]
            wtl = win_tie_loss(errs)
            mean, _ = mean_finite(relative_error_reduction(a, b) for a, b in errs)
            lines.append(f"- {newer} vs {older} on {len(common)} datasets, {part}: {wtl.wins} wins / {wtl.ties} ties "
                         f"/ {wtl.losses} losses, mean relative error reduction {_pct(mean)}")
    gbdt = latest_ok([r for r in rows if r["config"] == "gbdt"], settings)
    lines += ["", "| dataset | version | val | test | wall s | neural weight | best model | gbdt val / test |",
              "|---|---|---:|---:|---:|---:|---|---:|"]
    for (d, v), r in sorted(latest.items(), key=lambda kv: (datasets.index(kv[0][0]), order.index(kv[0][1]))):
        m = "accuracy" if r["metric"] == "accuracy" else "rmse"
        g = gbdt.get((d, "gbdt"))
        g_text = "—" if g is None else f"{_score(float(g['val_score']), m)} / {_score(float(g['test_score']), m)}"
        lines.append(f"| {d} | {v} | {_score(float(r['val_score']), m)} | {_score(float(r['test_score']), m)} | "
                     f"{float(r['fit_s']):.0f} | {float(r.get('neural_weight') or 0):.2f} | {r.get('best_model', '')} "
                     f"| {g_text} |")
    lines.append("")
    return lines


def neural_models_section(latest: dict, order: list[str]) -> list[str]:
    """Every neural model of the ``ours`` and ``ag_dl`` fits: the time AutoGluon allotted it and the time it
    took, its validation score beside the best tree's at the same stack level, and its weight in the final
    model; then, per configuration, what its level-2 neural stackers cost and what weight they got."""
    from .ensemble import base_name, family, final_weights

    lines = ["## The neural models", "",
             "Every neural model fitted in `ours` (MAYA, TabSwift) and `ag_dl` (TabM, RealMLP): seconds AutoGluon "
             "allotted it and seconds its bagged fit took (wall clock, parallel fold start-up included), its "
             "validation score beside the best tree model's at the same stack level, and its weight in the final "
             "model.", "",
             "| dataset | config | model | allotted s | took s | share of the fit | val | best tree val | "
             "weight in the final model |", "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    stackers = {}
    for (d, cfg), r in sorted(latest.items(), key=lambda kv: (order.index(kv[0][0]), CONFIGS.index(kv[0][1]))):
        if cfg == "gbdt":
            continue
        models = r.get("models") or {}
        accuracy = r["metric"] == "accuracy"
        metric = "accuracy" if accuracy else "rmse"
        final = final_weights(r)
        for m, v in sorted(models.items(), key=lambda kv: (kv[1].get("level") or 0, kv[0])):
            if family(m) in ("GBDT", "ensemble"):
                continue
            trees = [t["val"] for n, t in models.items() if family(n) == "GBDT" and t.get("level") == v.get("level")]
            best_tree = (max if accuracy else min)(trees) if trees else None
            weight = float(final.get(m, 0.0))
            if (v.get("level") or 0) >= 2:
                stackers.setdefault(cfg, []).append((float(v.get("fit_share") or 0), weight))
            allotted = v.get("allotted_s")
            lines.append(f"| {d} | {cfg} | {base_name(m)}@L{v.get('level')} | "
                         f"{'—' if allotted is None else f'{float(allotted):.0f}'} | {float(v.get('wall_s') or 0):.0f} | "
                         f"{100 * float(v.get('fit_share') or 0):.0f}% | {_score(float(v['val']), metric)} | "
                         f"{'—' if best_tree is None else _score(float(best_tree), metric)} | {weight:.2f} |")
    lines.append("")
    for cfg, st in stackers.items():
        shares = [s for s, _ in st]
        weighted = sum(1 for _, w in st if w > 0)
        lines.append(f"- `{cfg}`: {len(st)} level-2 neural stackers fitted, {100 * min(shares):.0f}-"
                     f"{100 * max(shares):.0f} % of their fit's wall time each; weighted in the final model: "
                     f"{weighted} of {len(st)}")
    return lines + ([""] if stackers else [])


def _targets(summary: dict, over: list, starved: list) -> list[str]:
    """The bar the package sets itself: ours at least as good as gbdt on 2/3 of the tables, never more than
    3 % worse, 3 % fewer errors on average, at least as good as ag_dl on half; every fit within its time."""
    import math

    def mark(ok: bool) -> str:
        return "met" if ok else "**missed**"

    out = ["## Targets", ""]
    if "gbdt" in summary:
        wtl, mean, worst = summary["gbdt"]
        need = math.ceil(2 * wtl.n / 3)
        at_least = wtl.wins + wtl.ties
        out += [f"- ours ≥ gbdt on ≥ {need} of {wtl.n}: {at_least} — {mark(at_least >= need)}",
                f"- no dataset with a relative error increase above 3 % over gbdt: worst {_pct(worst)} — "
                f"{mark(not worst < -0.03)}",
                f"- mean relative error reduction over gbdt ≥ 3 %: {_pct(mean)} — {mark(mean >= 0.03)}"]
    if "ag_dl" in summary:
        wtl = summary["ag_dl"][0]
        need = math.ceil(wtl.n / 2)
        at_least = wtl.wins + wtl.ties
        out.append(f"- ours ≥ ag_dl on ≥ {need} of {wtl.n}: {at_least} — {mark(at_least >= need)}")
    if "all_ag_dl" in summary:
        wtl, mean, _ = summary["all_ag_dl"]
        need = math.ceil(2 * wtl.n / 3)
        at_least = wtl.wins + wtl.ties
        out += [f"- all ≥ ag_dl on ≥ {need} of {wtl.n}: {at_least} — {mark(at_least >= need)}",
                f"- mean relative error reduction of all over ag_dl ≥ 1 %: {_pct(mean)} — {mark(mean >= 0.01)}"]
    out += [f"- every fit within time_limit × 1.05 + 2 s: {mark(not over)}",
            f"- no `ours` fit with neither MAYA nor TabSwift fitted: {mark(not starved)}", ""]
    return out


def _pct(v) -> str:
    import math

    return "n/a" if v is None or not math.isfinite(v) else f"{100 * v:+.2f}%"


def _score(v: float, metric: str) -> str:
    return f"{v:.4f}" if metric == "accuracy" or abs(v) < 1000 else f"{v:,.0f}"


def _neural(r: dict) -> str:
    from .ensemble import base_name

    return ", ".join(base_name(m) for m in r.get("neural_fitted_l1", [])) or "none"



def write_report(out: Path, settings: dict | None = None, seed: int | None = None) -> str:
    """The report (:func:`report_paths`: ``results.md``, ``error_reduction.png`` and ``pama.png``, named by split
    seed and candidate) from the results file: the rows of ``settings``, or of the latest ok row's settings (of
    split seed ``seed``, if given; a seed without rows is a ValueError)."""
    from . import plots

    rows = read_rows(out)
    settings = _settings_to_report(rows, out, settings, seed)
    latest = latest_ok(rows, settings)
    comp = compare(latest)
    s = settings or {}
    smoke = str(s.get("smoke")) == "True"
    summary, titles, shown = _summary_section(comp, latest)
    order = [c["dataset"] for c in comp]
    pama_lines, pama0, n_datasets = _pama_section(comp)
    lines = (_header(latest, s, smoke) + summary + _per_dataset_section(comp, shown) + _fits_section(latest, rows, order)
             + pama_lines + _tree_vs_neural_section(comp) + neural_models_section(latest, order)
             + versions_section(rows, settings, package_repo()))
    text = "\n".join(lines)
    paths = report_paths(out, s.get("seed"), bool(s.get("ours_add")))
    paths["results.md"].write_text(text)
    plot(comp, paths["error_reduction.png"], smoke, "; ".join(titles))
    plots.pama_bar(pama0, paths["pama.png"], 0.0, n_datasets)
    return text


def _settings_to_report(rows: list[dict], out: Path, settings: dict | None, seed: int | None) -> dict | None:
    """``settings``, or those of the latest ok row (of split seed ``seed``, if given)."""
    pool = [r for r in rows if seed is None or int(r.get("seed") or 0) == seed]
    if rows and not pool:
        raise ValueError(f"no results of split seed {seed} in {out}")
    if settings is None and pool:  # the settings of the latest ok row
        last = next((r for r in reversed(pool) if r["status"] == "ok"), pool[-1])
        settings = {k: last.get(k) for k in SETTINGS if k in last}
    return settings


def _header(latest: dict, s: dict, smoke: bool) -> list[str]:
    lines = ["# AutoGluon's ensemble: GBDTs alone, + MAYA + TabSwift, + TabM + RealMLP, at one time budget", ""]
    if smoke:
        lines += ["**SMOKE RUN: tiny model sizes; the scores say nothing about the models.**", ""]
    ens = next((r.get("ensembling") for r in latest.values() if r.get("ensembling")), None)
    commits = sorted({r.get("code_commit") or r.get("commit", "?") for r in latest.values()})
    lines += [f"Protocol P1 (64/16/20, seed {s.get('seed', '?')}, at most {s.get('max_train_rows', '?')} training "
              f"rows), one whole AutoGluon fit per cell, {s.get('time_limit', '?')} s each on "
              f"{s.get('num_cpus', '?')} CPU core(s), GPUs: {s.get('num_gpus')}; "
              f"{ens or 'ensembling not recorded'}; preset `{s.get('preset', '?')}`"
              + (f", ours with the candidate entries `{s['ours_add']}`" if s.get("ours_add") else "")
              + f". Code commit(s): {', '.join(commits) or '-'}.", "",
              "`gbdt` = LightGBM + CatBoost + XGBoost; `ours` = the same + MAYA + TabSwift; `ag_dl` = the same + "
              "TabM + RealMLP. Score: test accuracy (↑) or RMSE (↓) of the model AutoGluon picks on validation. "
              "Error e = 1 − accuracy or RMSE; relative error reduction of ours over B = (e_B − e_ours) / e_B "
              "(positive: ours is better).", ""]
    return lines


def _summary_section(comp: list[dict], latest: dict) -> tuple[list[str], list[str], list[str]]:
    """The summary and the targets; the plot's subtitles; the configurations shown (``all`` where it has rows)."""
    from .ensemble import win_tie_loss

    lines, titles, summary = _comparison_lines(comp)
    lines = ["## Summary", ""] + lines
    pairs = [(c["errors"]["ag_dl"], c["errors"]["gbdt"]) for c in comp if {"ag_dl", "gbdt"} <= set(c["errors"])]
    if pairs:
        wtl = win_tie_loss(pairs)
        lines.append(f"- for reference, ag_dl vs gbdt: {wtl.wins}/{wtl.ties}/{wtl.losses} (p = {wtl.p_value:.3g})")
    shown = [k for k in CONFIGS if k != "all" or any(cfg == k for _, cfg in latest)]  # "all" where it has rows
    full = [c["fits"] for c in comp if all(c["fits"][k] is not None for k in shown)]
    if full:
        medians = ", ".join(f"{k} {statistics.median(float(f[k]['predict_s_per_1k']) for f in full):.2f} s"
                            for k in shown)
        lines.append(f"- predict time of the final model per 1,000 test rows, median over the {len(full)} datasets "
                     f"with all {len(shown) if len(shown) != 3 else 'three'} fits: {medians}")
    over = [(d, c) for (d, c), r in latest.items() if r.get("over_time")]
    starved = [d for (d, c), r in latest.items() if c == "ours" and not r.get("neural_fitted_l1")]
    lines += [f"- fits over time_limit × 1.05 + 2 s: {', '.join(f'{d}/{c}' for d, c in over) or 'none'}",
              f"- `ours` fits with neither MAYA nor TabSwift fitted: {', '.join(starved) or 'none'}", ""]
    lines += _targets(summary, over, starved)
    return lines, titles, shown


def _comparison_lines(comp: list[dict]) -> tuple[list[str], list[str], dict]:
    """One line per compared pair (:data:`COMPARISONS`), the plot's subtitles, and per pair its win / tie / loss,
    mean and worst relative error reduction (for the targets)."""
    from .ensemble import mean_finite, win_tie_loss

    lines, titles, summary = [], [], {}
    for a, b in COMPARISONS:
        key = b if a == "ours" else f"{a}_{b}"
        measured = [c for c in comp if f"rer_{key}" in c]
        if not measured:
            if a == "ours":
                lines.append(f"- ours vs {b}: no dataset with both fits yet")
            continue
        wtl = win_tie_loss([(c["errors"][a], c["errors"][b]) for c in measured])
        if a == "ours":
            titles.append(f"W/T/L vs {b}: {wtl.wins}/{wtl.ties}/{wtl.losses}")
        rers = {c["dataset"]: c[f"rer_{key}"] for c in measured}
        mean, left_out = mean_finite(rers.values())
        worst = min(rers, key=rers.get)
        best = max(rers, key=rers.get)
        summary[key] = (wtl, mean, rers[worst])
        rest = mean_finite(v for d, v in rers.items() if d != best)[0] if len(rers) > 1 else float("nan")
        lines.append(f"- {a} vs {b} on {wtl.n} datasets: **{wtl.wins} wins / {wtl.ties} ties / {wtl.losses} "
                     f"losses** (two-sided sign test over the {wtl.wins + wtl.losses} non-ties: p = "
                     f"{wtl.p_value:.3g}); mean relative error reduction **{_pct(mean)}**"
                     f"{f' ({left_out} undefined left out)' if left_out else ''}, median "
                     f"{_pct(statistics.median(rers.values()))}; worst dataset {_pct(rers[worst])} ({worst}); "
                     f"without the best dataset ({best}): mean {_pct(rest)}")
    return lines, titles, summary


def _per_dataset_section(comp: list[dict], shown: list[str]) -> list[str]:
    extra = [(a, b) for a, b in COMPARISONS if a != "ours" and a in shown and b in shown]
    lines = ["## Per dataset", "",
              f"| dataset | task | train rows | metric | {' | '.join(shown)} | ours vs gbdt | ours vs ag_dl | "
              + "".join(f"{a} vs {b} | " for a, b in extra) + "winner | neural weight (ours / ag_dl) |",
              "|---|---|---:|---|" + "---:|" * len(shown) + "---:|---:|" + "---:|" * len(extra) + "---|---:|"]
    for c in comp:
        m = c["metric"]
        cells = []
        for cfg in shown:
            v = c["scores"].get(cfg)
            cell = "—" if v is None else _score(v, m)
            cells.append(f"**{cell}**" if v is not None and cfg in c.get("winner", "").split("=") else cell)
        nw = " / ".join("—" if c["fits"][k] is None else f"{float(c['fits'][k].get('neural_weight') or 0):.2f}"
                        for k in ("ours", "ag_dl"))
        metric_text = "RMSE ↓" if m != "accuracy" else "acc ↑"
        lines.append(f"| {c['dataset']} | {c['task']} | {c['n_train']} | {metric_text} "
                     f"| {' | '.join(cells)} | {_pct(c.get('rer_gbdt'))} | {_pct(c.get('rer_ag_dl'))} | "
                     + "".join(f"{_pct(c.get(f'rer_{a}_{b}'))} | " for a, b in extra)
                     + f"{c.get('winner', '—')} | {nw} |")
    lines += ["", "`neural weight`: share of the final model's weighted ensemble on MAYA/TabSwift (ours) or "
              "TabM/RealMLP (ag_dl) models, L2 stackers of those families included.", ""]
    return lines


def _fits_section(latest: dict, rows: list[dict], order: list[str]) -> list[str]:
    from .ensemble import base_name, final_weights, stack_level

    lines = ["## The fits", "",
              "| dataset | config | wall s / limit | best model | its ensemble weights | neural L1 models fitted | "
              "not fitted (why) | largest fit-time shares | predict s / 1k rows | commit |",
              "|---|---|---:|---|---|---|---|---|---:|---|"]
    for (d, cfg), r in sorted(latest.items(), key=lambda kv: (order.index(kv[0][0]), CONFIGS.index(kv[0][1]))):
        models = r.get("models") or {}
        shares = sorted(((m, v.get("fit_share") or 0) for m, v in models.items()), key=lambda t: -t[1])[:3]
        share_text = ", ".join(f"{base_name(m)}@L{models[m].get('level')} {100 * v:.0f}%" for m, v in shares) or "—"
        final = sorted(final_weights(r).items(), key=lambda t: -t[1])
        weight_text = ", ".join(f"{base_name(m)}@L{stack_level(m)} {w:.2f}" for m, w in final) or "—"
        skipped = "; ".join(f"{m} ({v['reason']})" for m, v in (r.get("skipped") or {}).items()) or "none"
        flag = " **OVER**" if r.get("over_time") else ""
        lines.append(f"| {d} | {cfg} | {float(r['fit_s']):.0f} / {float(r['time_limit']):.0f}{flag} | "
                     f"{r.get('best_model', '')} | {weight_text} | {_neural(r) if cfg != 'gbdt' else '—'} | "
                     f"{skipped} | "
                     f"{share_text} | "
                     f"{r.get('predict_s_per_1k', '—')} | {r.get('commit', '?')} |")
    failed = sorted({(r["dataset"], r["config"]) for r in rows if r["status"] != "ok"} - set(latest))
    if failed:
        lines += ["", "Failed, no ok result yet: " + ", ".join(f"{d}/{c}" for d, c in failed)]
    lines.append("")
    return lines


def _pama_section(comp: list[dict]) -> tuple[list[str], object, int]:
    """PAMA of the L1 models of the fits on their own: the section, PAMA at 0 % (for the figure) and the number
    of datasets."""
    from .ensemble import base_name, family, pama_of_models

    scores, higher = {}, {}
    for c in comp:
        seen = set()
        scores[c["dataset"]] = {}
        for cfg in CONFIGS:  # each model from the first configuration that has it: trees from gbdt
            r = c["fits"][cfg]
            for m, v in ((r or {}).get("models") or {}).items():
                label = base_name(m)
                if v.get("level") == 1 and family(m) != "ensemble" and label not in seen:
                    seen.add(label)
                    scores[c["dataset"]][label] = v["test"]
        higher[c["dataset"]] = c["metric"] == "accuracy"
    scores = {d: v for d, v in scores.items() if v}
    pama0 = pama_of_models(scores, higher, 0.0)
    pama1 = pama_of_models(scores, higher, 0.01)
    lines = ["## PAMA of the individual models", "",
              f"The L1 models of the fits on their own (test scores; trees from the `gbdt` fit, MAYA/TabSwift from "
              f"`ours`, TabM/RealMLP from `ag_dl`), over {len(scores)} datasets. PAMA = % of datasets where the model "
              "is the best (ties count) / within 1 % of the best; a model not fitted on a dataset never counts.", "",
              "| model | family | PAMA % (best) | PAMA % (within 1 %) |", "|---|---|---:|---:|"]
    for m in pama0.index:
        lines.append(f"| {m} | {family(m)} | {pama0[m]:.0f} | {pama1[m]:.0f} |")
    lines += ["", "| dataset | best individual model | family | score |", "|---|---|---|---:|"]
    for d, sc in scores.items():
        best = (max if higher[d] else min)(sc, key=sc.get)
        lines.append(f"| {d} | {best} | {family(best)} | {_score(sc[best], 'accuracy' if higher[d] else 'rmse')} |")
    lines.append("")
    return lines, pama0, len(scores)


def _tree_vs_neural_section(comp: list[dict]) -> list[str]:
    from .ensemble import base_name

    lines = ["## Where the best tree model is wrong and a neural model is right (classification test rows)", "",
              "Best tree = the L1 GBDT with the best validation score in that fit. Counts of test rows.", "",
              "| dataset | config | test rows | tree wrong | … of which a neural model right | per model | "
              "tree right where all neural wrong |", "|---|---|---:|---:|---:|---|---:|"]
    for c in comp:
        for cfg in ("ours", "ag_dl"):
            r = c["fits"][cfg]
            t = (r or {}).get("tree_vs_neural")
            if not t:
                continue
            per = ", ".join(f"{base_name(m)} {k}" for m, k in t["right_when_tree_wrong"].items()) or "no neural model"
            converse = t["tree_right_when_all_wrong"]
            lines.append(f"| {c['dataset']} | {cfg} | {t['n']} | {t['tree_wrong']} | {t['any_right_when_tree_wrong']} "
                         f"| {per} | {'—' if converse is None else converse} |")
    lines.append("")
    return lines


def report_paths(out: Path, seed, candidate: bool = False) -> dict[str, Path]:
    """The report's files: ``results.md``, ``error_reduction.png`` and ``pama.png``, each with
    :func:`name_tag` before the suffix, as the logs are named."""
    tag = name_tag(seed, candidate)
    return {name: out / f"{Path(name).stem}{tag}{Path(name).suffix}"
            for name in ("results.md", "error_reduction.png", "pama.png")}


def plot(comp: list[dict], path: Path, smoke: bool, subtitle: str = "") -> None:
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    comp = [c for c in comp if "rer_gbdt" in c or "rer_ag_dl" in c]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.9 * len(comp) + 2), 5.0))
    if not comp:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no dataset with ours and another configuration finished yet", ha="center", va="center")
    else:
        x = np.arange(len(comp))
        for i, (other, color) in enumerate((("gbdt", "tab:gray"), ("ag_dl", "tab:purple"))):
            vals = [100 * c.get(f"rer_{other}", float("nan")) for c in comp]
            vals = [v if math.isfinite(v) else 0.0 for v in vals]
            bars = ax.bar(x + (i - 0.5) * 0.4, vals, 0.4, color=color, label=f"ours over {other}")
            ax.bar_label(bars, labels=[f"{v:+.1f}" for v in vals], padding=2, fontsize=6)
        ax.set_xticks(x, [f"{c['dataset']}\n({'acc' if c['metric'] == 'accuracy' else 'RMSE'})" for c in comp],
                      fontsize=7, rotation=30, ha="right")
        ax.axhline(0, color="black", lw=0.8)
        ax.set_ylabel("relative test error reduction of ours (%)\n(e_B − e_ours) / e_B")
        ax.legend(fontsize=8)
    ax.set_title("ours (GBDTs + MAYA + TabSwift) against gbdt (GBDTs alone)\nand ag_dl (GBDTs + TabM + RealMLP) at the "
                 f"same time budget{' [SMOKE: tiny models]' if smoke else ''}\n{subtitle}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)

