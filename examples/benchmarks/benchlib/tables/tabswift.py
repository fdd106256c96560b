"""Tables of docs/tabswift.md: TabSwift zero-shot, fine_tune="auto" and more members."""

from __future__ import annotations

from functools import partial

from .common import (SINGLE, TABLES12, budget_pairs, budget_trials, fmt, grid, markdown, rows, score, seed_means,
                     settings_table, table)


@table("tabswift-zero-shot")
def tabswift_zero_shot() -> str:
    return grid("tabswift_zero_shot", ("bank_churn", "phoneme", "qsar_biodeg", "satimage", "seismic_bumps",
                                       "spambase", "telco_churn", "ames_housing", "cpu_act", "pol"),
                ("TABSWIFT", "TABSWIFT@finetuned", "LR", "KNN", "GBM", "CAT"), ranks=True,
                labels={"TABSWIFT": "TabSwift zero-shot", "TABSWIFT@finetuned": "TabSwift fine-tuned"})


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
        recs, common, mean = seed_means(SINGLE, d, base + tuple(m for m, _ in variants))
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


#: fine_tune="auto" at 100 and 400 steps, on 4 tables outside the 12
FT_STEPS = (("TABSWIFT@auto", "100 steps"), ("TABSWIFT@steps400", "400 steps (the default now)"))
#: the shipped weights, zero-shot, with 16 members against the default 8, on the decision tables
TABSWIFT_MEMBERS = (("TABSWIFT@m16", "`n_estimators=16`"),)

table("tabswift-fine-tune-steps-val")(partial(settings_table, "tabswift_fine_tune_steps", FT_STEPS, "val_score",
                                              "100 steps"))
table("tabswift-fine-tune-steps-test")(partial(settings_table, "tabswift_fine_tune_steps", FT_STEPS, "test",
                                               "100 steps"))
table("tabswift-members")(partial(budget_trials, "tabswift_members", "TABSWIFT", TABSWIFT_MEMBERS))
table("tabswift-members-pairs")(partial(budget_pairs, "tabswift_members", "TABSWIFT", TABSWIFT_MEMBERS))


@table("tabswift-light-rows")
def tabswift_light_rows() -> str:
    """The shipped TabSwift in the "light" preset, by training rows, on the 13 decision tables' validation rows
    (``examples/benchmarks/tabswift_light_rows.py``)."""
    from tabswift_light_rows import DEFAULT_OUT, read_rows, rows_table

    return rows_table(read_rows(DEFAULT_OUT))
