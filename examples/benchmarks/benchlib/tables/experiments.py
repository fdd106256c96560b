"""Tables of docs/experiments.md: the experiments behind MAYA's and the ensemble's defaults."""

from __future__ import annotations

import csv
import json
from functools import partial
from typing import Optional, Sequence

from .common import (LS, RESULTS, before_after, cell, ensemble_ours, error_of_row, fmt, markdown, model_value,
                     seeds, table, variant_rows)
from .ensemble_benchmark import TWO_SEEDS


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
        body.append([d + (" ↓" if b["task"] == "regression" else ""), before_after(b["val_score"], o["val_score"]),
                     before_after(b["test_score"], o["test_score"]),
                     before_after(model_value(b, "TabSwift_BAG_L1", "val"), model_value(o, "TabSwift_BAG_L1", "val")),
                     before_after(model_value(b, "Maya_BAG_L1", "val"), model_value(o, "Maya_BAG_L1", "val")),
                     before_after(model_value(b, "Maya_BAG_L1", "allotted_s"), model_value(o, "Maya_BAG_L1", "allotted_s"),
                          lambda v: f"{v:.0f}"),
                     before_after(b["neural_weight"], o["neural_weight"], lambda v: f"{v:.2f}")])
    return markdown(["dataset (↓: RMSE)", "final model, val", "final model, test", "TabSwift L1, val",
                     "MAYA L1, val", "MAYA L1, allotted s", "neural weight"], body)


table("exp-light-ft")(lambda: ensemble_pair("ensemble_600s", "ensemble_600s_light_ft"))
table("exp-fair-share")(
    lambda: ensemble_pair("ensemble_600s_fair_share", "ensemble_600s_fair_share", candidate=True, seeds=(0, 1)))

def ensemble_extra(base_folder: str, candidate_folder: str, extra: str, seeds: Sequence[int] = (0,)) -> str:
    """A candidate that adds one level-1 model (``extra``, e.g. ``Maya_plr_BAG_L1``) to ``ours``: per (dataset, seed),
    the final model's validation and test score and the fit's seconds (``base_folder``'s ``ours`` rows without
    candidate entries -> ``candidate_folder``'s with), the extra model's validation score, seconds and weight in
    the final model; then the pairs whose final validation is better / level / worse, the mean relative
    reduction of the final model's validation error and the pairs in which the extra model carries weight."""
    from ..ensemble import final_weights, mean_finite, outcome, relative_error_reduction

    body, outcomes, gains, weighted = [], [], [], 0
    for seed in seeds:
        base, cand = ensemble_ours(base_folder, False, seed), ensemble_ours(candidate_folder, True, seed)
        for d, b in base.items():
            c = cand.get(d)
            if c is None:
                continue
            e_b, e_c = error_of_row(b, b["val_score"]), error_of_row(c, c["val_score"])
            outcomes.append(outcome(e_c, e_b))
            gains.append(relative_error_reduction(e_c, e_b))
            val, wall = model_value(c, extra, "val"), model_value(c, extra, "wall_s")
            weight = final_weights(c).get(extra, 0.0)
            weighted += weight > 0
            body.append([f"{d}, seed {seed}" + (" ↓" if b["task"] == "regression" else ""),
                         before_after(b["val_score"], c["val_score"]), before_after(b["test_score"], c["test_score"]),
                         "—" if val is None else fmt(val), "—" if wall is None else f"{wall:.0f}",
                         f"{weight:.2f}", before_after(b["fit_s"], c["fit_s"], lambda v: f"{v:.0f}")])
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


@table("exp-replanning")
def exp_replanning() -> str:
    f = "ensemble_members/replanning_and_screens"
    body = [["members planned once, after the first", cell(f"{f}/letter600", "letter", "MAYA"), "—"],
            ["planned again before each member (adopted)", cell(f"{f}/letter600_replan", "letter", "MAYA"),
             cell(f"{f}/letter600_replan", "letter", "NN_TORCH")]]
    return markdown(["letter at 600 s, accuracy", "MAYA", "NN_TORCH"], body)


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


# ---- one folder's variants (rows) on one or two tables (columns) -------------------------------------------------
#: table -> (folder, tables, header, (model, label) per row)
VARIANT_GRIDS = {
    "exp-members": ("ensemble_members/california_600s", ("california_housing",),
                    ["california_housing, 600 s", "test RMSE ↓"],
                    (("MAYA", "one network"), ("MAYA@m1", "one network (`ensemble_members=1`)"),
                     ("MAYA@auto2", "up to three members (`auto`, adopted)"))),
    "exp-screens-letter-satimage": ("ensemble_members/replanning_and_screens/screens", ("letter", "satimage"),
                                    ["screen (300 s, accuracy)", "letter", "satimage"],
                                    (("MAYA@h128", "`hidden_size=128`"), ("MAYA@lr2e3", "`learning_rate=0.002`"),
                                     ("MAYA@b64", "`batch_size=64`"), ("MAYA@dec2", "`num_decoder_layers=2`"),
                                     ("MAYA@h8br4", "`num_heads=8, num_branch=4`"), ("NN_TORCH", "NN_TORCH"))),
    "exp-anneal": ("optimisation/anneal_and_batch/multiclass", ("letter", "satimage"),
                   ["300 s, 2 cores, accuracy", "letter", "satimage"],
                   (("MAYA", "default (anneal 0.3, batch 128)"), ("MAYA@noanneal", "`budget_anneal=None`"),
                    ("MAYA@b256", "`batch_size=256`"))),
    "exp-batch": ("optimisation/multiclass_batch", ("letter",), ["letter, batch rows (300 s)", "accuracy"],
                  (("MAYA", "32 rows per class (832)"), ("MAYA@b256", "256"), ("MAYA@b128", "128"))),
    "exp-california-early": ("optimisation/california_600s", ("california_housing",),
                             ["california_housing, 600 s", "test RMSE ↓"],
                             (("MAYA", "default"), ("MAYA@d128", "`hidden_size=128, num_heads=8`"))),
}


def variant_grid(folder: str, datasets: Sequence[str], header: Sequence[str], variants: Sequence[tuple]) -> str:
    return markdown(header, variant_rows(folder, datasets, variants))


for _name, _spec in VARIANT_GRIDS.items():
    table(_name)(partial(variant_grid, *_spec))
