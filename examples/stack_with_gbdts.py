"""MAYA and TabSwift bagged and stacked with LightGBM, CatBoost and XGBoost on a real table.

    python examples/stack_with_gbdts.py                                      # telco_churn, "light", 2 CPU cores
    python examples/stack_with_gbdts.py california_housing --preset best --num-gpus 1 --time-limit 3600
    python examples/stack_with_gbdts.py my.csv --label y
    python examples/stack_with_gbdts.py --smoke --num-cpus 1 --time-limit 60  # tiny models: checks the plumbing

Models: ``autogluon_maya.hyperparameters(preset)`` (see ``autogluon_maya/portfolio.py`` for the evidence
behind each entry), plus XGBoost when the preset has none ("light" leaves it out), so every run has
the three GBDT families next to MAYA and TabSwift.

Tables by name, dataset folder or CSV: see ``examples/example_data.py``.  The rows are split 64/16/20 %.  The fit bags every model
(``--num-bag-folds``) on the 64% training part and stacks one more level on the out-of-fold
predictions (``--num-stack-levels``); the 16% validation part is ``tuning_data`` with
``use_bag_holdout=True``, so AutoGluon cross-validates the models and fits the weighted ensembles on
it (``dynamic_stacking=False``: the stack level is fixed, not chosen by a DyStack sub-fit).  The 20% test
part is only scored: the leaderboard is printed and written to ``<out>/<dataset>_<preset>_leaderboard.csv``,
the test scores as a bar plot to ``<out>/<dataset>_<preset>_test_scores.png``.

TabSwift's folds run one after another in the fitting process and are then refit on all rows
(``_default_ag_args_ensemble_extra``: ICL costs no training, one more context row always helps);
MAYA's folds keep AutoGluon's default (parallel Ray workers when there are cores for them).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
from autogluon_maya import hyperparameters
from example_data import load_table, split

#: tiny sizes for --smoke (validates the script in about a minute on one core; scores are meaningless)
SMOKE_OVERRIDES = {"MAYA": {"max_epochs": 2, "hidden_size": 16, "num_heads": 2},
                   "TABSWIFT": {"n_estimators": 1, "max_context_rows": 256, "fine_tune_steps": 2},
                   "GBM": {"num_boost_round": 20}, "CAT": {"iterations": 20}, "XGB": {"n_estimators": 20}}
FAMILY_COLORS = {"GBDT": "tab:gray", "MAYA": "tab:blue", "TabSwift": "tab:orange", "ensemble": "tab:green",
                 "other": "tab:purple"}


def eval_metric(task: str) -> str:
    """Accuracy for classification, RMSE for regression (the metrics of this package's benchmarks)."""
    return "root_mean_squared_error" if task == "regression" else "accuracy"


def family(model_name: str) -> str:
    if model_name.startswith(("LightGBM", "CatBoost", "XGBoost")):
        return "GBDT"
    if model_name.startswith("Maya"):
        return "MAYA"
    if model_name.startswith("TabSwift"):
        return "TabSwift"
    if model_name.startswith("WeightedEnsemble"):
        return "ensemble"
    return "other"


def portfolio(preset: str, smoke: bool = False, tabswift=None) -> dict:
    """The preset's models plus XGBoost, shrunk to tiny sizes with ``smoke``; ``tabswift`` as
    ``autogluon_maya.hyperparameters`` takes it (None: "light" carries TabSwift where the released weights are on
    this machine)."""
    hp = hyperparameters(preset, tabswift=tabswift)
    hp.setdefault("XGB", {})
    if smoke:
        for key, override in SMOKE_OVERRIDES.items():
            if key not in hp:
                continue
            configs = hp[key] if isinstance(hp[key], list) else [hp[key]]
            for c in configs:
                c.update(override)
    return hp


def fit_stack(train: pd.DataFrame, val: pd.DataFrame, label: str, task: str, hp: dict, time_limit: float,
              num_bag_folds: int, num_stack_levels: int, num_cpus: int | None, num_gpus: float | None,
              path: str | None = None, verbosity: int = 2, **fit_kwargs):
    """Bagged + stacked AutoGluon fit (the validation part as bag holdout); ``fit_kwargs`` go to
    ``TabularPredictor.fit`` (e.g. ``callbacks``)."""
    from autogluon.tabular import TabularPredictor

    kwargs = dict(fit_kwargs)
    if num_cpus:
        kwargs["num_cpus"] = num_cpus
    if num_gpus is not None:
        kwargs["num_gpus"] = num_gpus
    predictor = TabularPredictor(label=label, problem_type=task, eval_metric=eval_metric(task),
                                 path=path or str(Path(tempfile.mkdtemp(prefix="stack_with_gbdts_")) / "ag"),
                                 verbosity=verbosity)
    predictor.fit(train, tuning_data=val, use_bag_holdout=True, hyperparameters=hp, time_limit=time_limit,
                  num_bag_folds=num_bag_folds, num_stack_levels=num_stack_levels, dynamic_stacking=False, **kwargs)
    return predictor


def test_leaderboard(predictor, test: pd.DataFrame, task: str) -> pd.DataFrame:
    """Leaderboard on the test part with the metric in its natural sign (RMSE positive) and the family."""
    lb = predictor.leaderboard(test, silent=True)
    sign = -1 if eval_metric(task) == "root_mean_squared_error" else 1
    lb = lb.assign(test=sign * lb["score_test"], val=sign * lb["score_val"], family=lb["model"].map(family))
    return lb[["model", "family", "stack_level", "test", "val", "fit_time", "pred_time_test"]]


def plot_test_scores(lb: pd.DataFrame, metric: str, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lower_better = metric == "root_mean_squared_error"
    lb = lb.sort_values("test", ascending=lower_better, kind="mergesort").reset_index(drop=True)  # best first
    y = list(range(len(lb)))[::-1]  # best at the top
    fig, ax = plt.subplots(figsize=(7.5, max(3.0, 0.32 * len(lb) + 1.6)))
    bars = ax.barh(y, lb["test"], color=[FAMILY_COLORS[f] for f in lb["family"]])
    ax.set_yticks(y, lb["model"])
    ax.bar_label(bars, labels=[f"{v:.4f}" for v in lb["test"]], padding=2, fontsize=7)
    lo, hi = lb["test"].min(), lb["test"].max()
    span = max(hi - lo, 1e-9)
    ax.set_xlim(max(0.0, lo - 0.5 * span), hi + 0.3 * span)
    ax.set_xlabel(f"test {'RMSE (lower is better)' if lower_better else 'accuracy (higher is better)'}")
    ax.set_title(title, fontsize=9)
    present = [f for f in FAMILY_COLORS if f in set(lb["family"])]
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=FAMILY_COLORS[f]) for f in present], present, fontsize=7,
              loc="upper center", bbox_to_anchor=(0.5, -0.14 if len(lb) > 6 else -0.25), ncol=len(present))
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?", default="telco_churn",
                    help="a table name, dataset folder or CSV (default: %(default)s)")
    ap.add_argument("--label", help="target column of a CSV (default: its last column)")
    ap.add_argument("--preset", default="light", choices=["light", "best"])
    ap.add_argument("--time-limit", type=float, default=1800, help="seconds for the whole fit")
    ap.add_argument("--num-bag-folds", type=int, default=5)
    ap.add_argument("--num-stack-levels", type=int, default=1)
    ap.add_argument("--num-cpus", type=int, default=None, help="default: all cores")
    ap.add_argument("--num-gpus", type=float, default=None, help="default: AutoGluon detects them")
    ap.add_argument("--max-rows", type=int, default=20000, help="subsample larger tables (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="tiny model sizes (checks the script, not the models)")
    ap.add_argument("--out", default="results/stack_with_gbdts")
    return ap.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    from autogluon.core.utils import infer_problem_type

    frame, label = load_table(args.data, args.label, max_rows=args.max_rows, seed=args.seed)
    train, val, test = split(frame, label, seed=args.seed)
    task = infer_problem_type(train[label], silent=True)
    name = Path(args.data).name.split(".")[0]
    metric = eval_metric(task)
    hp = portfolio(args.preset, smoke=args.smoke)
    print(f"{name}: {task}, train/val/test = {len(train)}/{len(val)}/{len(test)} rows, metric {metric}; "
          f"preset {args.preset!r}: {', '.join(hp)}")
    t0 = time.time()
    predictor = fit_stack(train, val, label, task, hp, args.time_limit, args.num_bag_folds,
                          args.num_stack_levels, args.num_cpus, args.num_gpus)
    wall = time.time() - t0
    lb = test_leaderboard(predictor, test, task)
    with pd.option_context("display.width", 200):
        print(f"\nLeaderboard on the test rows ({metric}; fit {wall:.0f} s, best on validation: "
              f"{predictor.model_best}):")
        print(lb.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{name}_{args.preset}{'_smoke' if args.smoke else ''}"
    lb.to_csv(out / f"{stem}_leaderboard.csv", index=False)
    title = (f"{name} ({task}), preset {args.preset!r}{' [smoke: tiny models]' if args.smoke else ''}\n"
             f"{args.num_bag_folds}-fold bagging, {args.num_stack_levels} stack level(s), {args.time_limit:.0f} s")
    plot_test_scores(lb, metric, title, out / f"{stem}_test_scores.png")
    print(f"\nwrote {out / (stem + '_leaderboard.csv')} and {out / (stem + '_test_scores.png')}")


if __name__ == "__main__":
    main()
