"""Tables of docs/maya.md: MAYA alone at 300 s, its settings experiments and the trials on the decision
tables."""

from __future__ import annotations

from functools import partial

from .common import (DECISION_TABLES, SINGLE, TABLES12, TRIAL_HEADER, budget_pairs, budget_trials, decision_trials,
                     fmt, latest_rows, markdown, rank_of, score, seed_means, settings_table, table, trial_row)


ALONE = (("MAYA", "MAYA"), ("TABM", "TabM"), ("REALMLP", "RealMLP"), ("CAT", "CatBoost"), ("GBM", "LightGBM"))


@table("maya-alone-300s")
def maya_alone_300s() -> str:
    """MAYA alone beside TabM, RealMLP, CatBoost and LightGBM at their defaults, 300 s each on 2 cores: the test
    score per table, a mean over the split seeds every model has, the best in bold; MAYA's and TabM's fit
    seconds; whether MAYA >= TabM, with the sign test of ahead against behind; the average rank of each model
    (1 = best) over the tables shown."""
    from ..stats import p_text, sign_test_p

    models = [m for m, _ in ALONE]
    body, rank_sum, wins, ahead, losses = [], {m: 0.0 for m in models}, 0, 0, 0
    for d in TABLES12:
        recs, common, mean = seed_means(SINGLE, d, models)
        if not common:
            continue
        regression = recs["GBM"][common[0]]["task"] == "regression"
        test = {m: mean(m, score) for m in models}
        best = (min if regression else max)(test.values())
        for m in models:
            rank_sum[m] += rank_of(test[m], test.values(), not regression)
        win = test["MAYA"] <= test["TABM"] if regression else test["MAYA"] >= test["TABM"]
        wins += win
        losses += test["MAYA"] > test["TABM"] if regression else test["MAYA"] < test["TABM"]
        ahead += test["MAYA"] < test["TABM"] if regression else test["MAYA"] > test["TABM"]
        seconds = lambda m: f"{mean(m, lambda r: float(r['fit_s'])):.0f}"  # noqa: E731
        body.append([f"{d} ({'RMSE ↓' if regression else 'accuracy'})", " ".join(map(str, common))]
                    + [f"**{fmt(test[m])}**" if test[m] == best else fmt(test[m]) for m in models]
                    + [f"{seconds('MAYA')} / {seconds('TABM')}", "yes" if win else "no"])
    n = len(body)
    body.append([f"**{n} tables: average rank**", ""] + [f"{rank_sum[m] / max(n, 1):.2f}" for m in models]
                + ["", f"**{wins} of {n}** (ahead {ahead}, behind {losses}: sign test p = "
                       f"{p_text(sign_test_p(ahead, losses))})"])
    header = ["table", "seeds"] + [f"{label} test" for _, label in ALONE] + ["fit s MAYA / TabM", "MAYA >= TabM"]
    return markdown(header, body, "ll" + "r" * len(models) + "rl")


# ---- settings experiments: one row per (table, seed), one column per variant, the first the baseline -----------
EMBEDDINGS = (("MAYA", "linear (`None`)"), ("MAYA@periodic", "`periodic`"), ("MAYA@piecewise", "`piecewise`"))
#: TabM's parameter-efficient members and RealMLP's / TabM's input scaling
TABM_SCALING = (("MAYA", "default"), ("MAYA@k4", "`tabm_k=4`"), ("MAYA@robust", '`"robust_smooth_clip"`'),
                ("MAYA@noisyq", '`"noisy_quantile"`'), ("MAYA@m8", "`ensemble_members=8`"))
TABM_INSTEAD = (("MAYA@m1", "one network"), ("MAYA@k4m1", "one network, `tabm_k=4`"),
                ("MAYA", "default (up to 3 networks)"))
#: more patience, and the weight average for regression
PATIENCE = (("MAYA@again", "default (`patience=16`)"), ("MAYA@p32", "`patience=32`"))
EMA_REGRESSION = (("MAYA@again", "default (`ema_epochs=5`)"), ("MAYA@noema", "`ema_epochs=None`"))

#: table -> (folder, variants, score key, the baseline's name in the summary rows (None: its label))
SETTINGS_TABLES = {
    "maya-embeddings-val": ("num_embeddings", EMBEDDINGS, "val_score", "linear"),
    "maya-embeddings-test": ("num_embeddings", EMBEDDINGS, "test", "linear"),
    "maya-tabm-scaling-val": ("maya_tabm_and_scaling", TABM_SCALING, "val_score", None),
    "maya-tabm-instead-val": ("maya_tabm_and_scaling", TABM_INSTEAD, "val_score", "one network"),
    "maya-tabm-scaling-test": ("maya_tabm_and_scaling", TABM_SCALING, "test", None),
    "maya-patience-val": ("maya_patience_and_ema", PATIENCE, "val_score", "the default"),
    "maya-ema-regression-val": ("maya_patience_and_ema", EMA_REGRESSION, "val_score", "the default"),
}


# ---- trials on the 13 decision tables, against the default on validation -------------------------------------
#: how MAYA spends its budget: (model name in the results, what it changes against the default)
BUDGET_TRIALS = (("MAYA@loss", '`stop_on="loss"`'), ("MAYA@v1", "`validation_every=1`"),
                 ("MAYA@reg", "`grad_clip=1.0`, `weight_decay=3e-4`"), ("MAYA@L2", "`num_layers=2`"),
                 ("MAYA@mc_pw", 'multiclass `num_embeddings="piecewise"`'),
                 ("MAYA@mc_q1", 'multiclass `numeric_transform="quantile"`, `numeric_scale=1`'))
#: the settings that had rested on one seed, against the constant-rate default; a classification or regression
#: setting ran on those tables only
CONSTANT_TRIALS = (("MAYA@br2", "`num_branch=2` for classification, against 4 (the default then)"),
                   ("MAYA@br4", "`num_branch=4` for regression, against 2"),
                   ("MAYA@ema", "`ema_epochs=5` for classification (default off, the paper's)"),
                   ("MAYA@serial", "`parallel_members=1`: members one at a time (default: the first two at once)"))
#: the learning-rate schedule and the batch against the paper's: (what the trial changes, its (baseline model,
#: trial model) comparisons).  The schedule is that of recipe="paper" with every other setting at the default; the
#: paper recipe keeps the linear numeric token, so on the binary and regression tables both sides run the linear
#: token (``MAYA@lin``), on multiclass (linear by default) the default itself
DECISION_TRIALS = (
    ("constant learning rate, decay on weight matrices only (the paper's), against the plateau cut",
     (("MAYA", "MAYA@sched_m"), ("MAYA@lin", "MAYA@sched_lin_b"), ("MAYA@lin", "MAYA@sched_lin_r"))),
    ("`batch_size=1024` (Table 12's smallest) against `\"auto\"` (128 / 256)", (("MAYA", "MAYA@b1024"),)))
#: the columns of the per-pair table of those trials: batch 1024, the default with the linear token (binary,
#: regression) and the constant rate (one trial model per task)
DECISION_COLUMNS = (("MAYA@b1024", "batch 1024"), ("MAYA@lin", "default, linear token"),
                    (("MAYA@sched_m", "MAYA@sched_lin_b", "MAYA@sched_lin_r"), "constant rate"))

#: table -> (builder, its arguments)
TRIAL_TABLES = {
    "maya-budget-trials": (budget_trials, ("maya_budget", "MAYA", BUDGET_TRIALS)),
    "maya-budget-pairs": (budget_pairs, ("maya_budget", "MAYA", BUDGET_TRIALS)),
    "maya-constant-trials": (budget_trials, ("maya_decisions_constant", "MAYA", CONSTANT_TRIALS)),
    "maya-constant-pairs": (budget_pairs, ("maya_decisions_constant", "MAYA", CONSTANT_TRIALS)),
    "maya-decision-trials": (decision_trials, ("maya_decisions", DECISION_TRIALS)),
    "maya-decision-pairs": (budget_pairs, ("maya_decisions", "MAYA", DECISION_COLUMNS)),
}

for _name, _args in SETTINGS_TABLES.items():
    table(_name)(partial(settings_table, *_args))
for _name, (_builder, _args) in TRIAL_TABLES.items():
    table(_name)(partial(_builder, *_args))


# ---- the numeric inputs and the weight-average rule, judged again -----------------------------------------------
INPUTS = "maya_inputs_and_average"
MMQ5 = '`numeric_transform="minmax_or_quantile"`, `numeric_scale=5`'
AVERAGE = '`ema_keep="average"`: the average alone, against the better of it and the live weights'
MULTICLASS_TABLES = DECISION_TABLES[8:]
BINARY_REGRESSION_TABLES = DECISION_TABLES[:8]
REGRESSION_TABLES = DECISION_TABLES[4:8]
#: (label, comparisons, tables, split seeds)
INPUT_TRIALS = (
    (f"{MMQ5}, multiclass: the five decision tables, seeds 0-1", MULTICLASS_TABLES, (0, 1)),
    (f"{MMQ5}, multiclass: the five decision tables, seeds 0-2", MULTICLASS_TABLES, (0, 1, 2)),
    (f"{MMQ5}, multiclass: scikit-learn's digits, seeds 0-2", ("digits",), (0, 1, 2)),
    (f"{MMQ5}, multiclass: the five decision tables and digits, seeds 0-2", MULTICLASS_TABLES + ("digits",),
     (0, 1, 2)),
    (f"{MMQ5}, binary and regression: the eight decision tables, seeds 0-1", BINARY_REGRESSION_TABLES, (0, 1)),
)


@table("maya-inputs-trials")
def inputs_trials() -> str:
    latest = latest_rows(INPUTS)
    body = [trial_row(latest, label, (("MAYA", "MAYA@mmq5"),), tables, seeds) for label, tables, seeds in INPUT_TRIALS]
    body.append(trial_row(latest, AVERAGE + ", the four regression decision tables, seeds 0-1",
                          (("MAYA", "MAYA@avg"),), REGRESSION_TABLES, (0, 1)))
    return markdown(TRIAL_HEADER, [r for r in body if r])


table("maya-inputs-pairs")(partial(budget_pairs, INPUTS, "MAYA", (("MAYA@mmq5", MMQ5), ("MAYA@avg", "`ema_keep=\"average\"`")),
                                   DECISION_TABLES + ("digits",), (0, 1, 2)))
