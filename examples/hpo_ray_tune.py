"""Hyperparameter search for MAYA and/or TabSwift with AutoGluon's Ray Tune backend, on a real table.

    python examples/hpo_ray_tune.py                                   # qsar_biodeg, MAYA + TABSWIFT, 4 trials each
    python examples/hpo_ray_tune.py telco_churn --models MAYA --num-trials 8 --time-limit 1800
    python examples/hpo_ray_tune.py --num-gpus 1 --gpus-per-trial 0.25   # 4 trials at a time on one GPU
    python examples/hpo_ray_tune.py --num-cpus 1 --num-trials 2 --time-limit 60 --max-epochs 2   # smoke run

Tables by name, dataset folder or CSV: see ``examples/example_data.py``.  The rows are split 64/16/20 %; the
validation part is AutoGluon's ``tuning_data`` and scores every trial; the test part is only reported.  Search spaces: MAYA's
``maya_search_space()`` (on a CPU Table 12 narrowed to CPU sizes, on a GPU the
paper's Table 12; starting from the defaults) and TabSwift's
``tabswift_search_space()`` (ensemble size, context rows, early exit, fine-tuning).  Both models send
their HPO to Ray Tune (``_get_hpo_backend``), which runs trials as parallel Ray tasks: on CPUs each trial
takes ``--cpus-per-trial`` cores; with ``--num-gpus`` each trial gets ``--gpus-per-trial`` of a GPU
(fractional GPUs via ``ag_args_fit``, so several small trials share one device) and AutoGluon divides
the CPUs between the trials that run at once.

Prints one row per trial (validation score, test score, fit time, the sampled configuration) and the
best configuration per model, chosen on validation; ``--out`` also writes them as CSV/JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import pandas as pd

import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
from example_data import load_table, split

SPACES = ("MAYA", "TABSWIFT")


def search_space(key: str, max_epochs: int | None) -> dict:
    if key == "MAYA":
        hp = autogluon_maya.maya_search_space()
        if max_epochs is not None:
            hp["max_epochs"] = max_epochs
        return hp
    if key == "TABSWIFT":
        return autogluon_maya.tabswift_search_space()
    raise ValueError(f"no search space for {key!r}; choose from {', '.join(SPACES)}")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", nargs="?", default="qsar_biodeg",
                    help="a table name, dataset folder or CSV (default: %(default)s)")
    ap.add_argument("--label", help="target column of a CSV (default: its last column)")
    ap.add_argument("--models", default="MAYA,TABSWIFT", help="comma-separated: MAYA, TABSWIFT")
    ap.add_argument("--num-trials", type=int, default=4, help="trials per model")
    ap.add_argument("--time-limit", type=float, default=900, help="seconds for the whole fit (all models, all trials)")
    ap.add_argument("--searcher", default="random", choices=["random", "bayes"])
    ap.add_argument("--num-cpus", type=int, default=None, help="CPU cores for AutoGluon (default: all)")
    ap.add_argument("--cpus-per-trial", type=int, default=None,
                    help="cores per trial on CPU (default: AutoGluon decides; 1 core total = sequential trials)")
    ap.add_argument("--num-gpus", type=float, default=0, help="GPUs for AutoGluon (0 = CPU only)")
    ap.add_argument("--gpus-per-trial", type=float, default=0.5,
                    help="fraction of a GPU per trial when --num-gpus > 0 (0.5 = two trials share one GPU)")
    ap.add_argument("--max-epochs", type=int, default=None, help="cap MAYA's epochs (smoke runs)")
    ap.add_argument("--max-rows", type=int, default=20000, help="subsample larger tables (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="folder for trials.csv and best_configs.json")
    return ap.parse_args(argv)


def build_hyperparameters(args) -> dict:
    keys = [k.strip().upper() for k in args.models.split(",") if k.strip()]
    hp = {}
    for key in keys:
        space = search_space(key, args.max_epochs)
        ag_args_fit = {}
        if args.num_gpus > 0:
            if not 0 < args.gpus_per_trial <= 1:
                raise SystemExit("--gpus-per-trial must be in (0, 1]")
            ag_args_fit["num_gpus"] = args.gpus_per_trial
        # on CPU leave num_gpus out: AutoGluon 1.6's HPO executor divides by a user-given num_gpus (0 ->
        # ZeroDivisionError); fit(num_gpus=0) already keeps every trial on the CPU
        if args.cpus_per_trial:
            ag_args_fit["num_cpus"] = args.cpus_per_trial
        if ag_args_fit:
            space["ag_args_fit"] = ag_args_fit
        hp[key] = space
    return hp


def trials_table(predictor, test: pd.DataFrame, spaces: dict) -> pd.DataFrame:
    lb = predictor.leaderboard(test, silent=True).set_index("model")
    info = predictor.info()["model_info"]
    rows = []
    for name in predictor.model_names():
        if "/" not in name:  # WeightedEnsemble or a model that skipped HPO
            continue
        family = name.split("/")[0]
        key = {autogluon_maya.MayaModel.ag_name: "MAYA", autogluon_maya.TabSwiftModel.ag_name: "TABSWIFT"}.get(family)
        params = info[name]["hyperparameters"]
        searched = {k: params.get(k) for k in (spaces.get(key) or {}) if k != "ag_args_fit"}
        rows.append({"model": name, "family": family, "score_val": lb.loc[name, "score_val"],
                     "score_test": lb.loc[name, "score_test"], "fit_time_s": lb.loc[name, "fit_time"],
                     "config": searched,
                     "trained": {k: v for k, v in info[name].get("hyperparameters_fit", {}).items()
                                 if not k.startswith("ag.")}})
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    from autogluon.tabular import TabularPredictor

    args = parse_args(argv)
    from autogluon.core.utils import infer_problem_type

    frame, label = load_table(args.data, args.label, max_rows=args.max_rows, seed=args.seed)
    train, val, test = split(frame, label, seed=args.seed)
    task = infer_problem_type(train[label], silent=True)
    metric = "root_mean_squared_error" if task == "regression" else "accuracy"
    print(f"{args.data}: {task}, train/val/test = {len(train)}/{len(val)}/{len(test)} rows, metric {metric}")
    hp = build_hyperparameters(args)
    fit_kwargs = {}
    if args.num_cpus:
        fit_kwargs["num_cpus"] = args.num_cpus
    predictor = TabularPredictor(label=label, problem_type=task, eval_metric=metric,
                                 path=str(Path(tempfile.mkdtemp(prefix="hpo_ray_tune_")) / "ag"), verbosity=2)
    predictor.fit(train, tuning_data=val, hyperparameters=hp, time_limit=args.time_limit,
                  num_gpus=args.num_gpus, fit_weighted_ensemble=False,
                  hyperparameter_tune_kwargs={"num_trials": args.num_trials, "scheduler": "local",
                                              "searcher": args.searcher},
                  **fit_kwargs)

    table = trials_table(predictor, test, hp)
    if table.empty:
        raise SystemExit("no trial finished within the time limit; raise --time-limit")
    sign = -1 if metric == "root_mean_squared_error" else 1  # AutoGluon's scores are higher-is-better
    print(f"\nTrials ({metric}; chosen on validation, test shown for information):")
    for family, rows in table.groupby("family", sort=False):
        configs = pd.DataFrame(list(rows["config"]), index=rows.index)
        varied = [c for c in configs if configs[c].astype(str).nunique() > 1] or list(configs)[:6]
        scores = (sign * rows[["score_val", "score_test"]]).set_axis(["val", "test"], axis=1)
        shown = pd.concat([rows[["model"]], scores, rows[["fit_time_s"]].round(1), configs[varied]], axis=1)
        with pd.option_context("display.width", 250, "display.max_columns", 50):
            print(f"\n{family}: {len(rows)} trial(s); columns = the searched settings that differ between trials")
            print(shown.to_string(index=False))
    best = {}
    for family, rows in table.groupby("family", sort=False):
        row = rows.sort_values("score_val", ascending=False).iloc[0]
        best[family] = {"model": row["model"], "val": float(sign * row["score_val"]),
                        "test": float(sign * row["score_test"]), "config": row["config"],
                        "trained": row["trained"]}
        print(f"\nBest {family} trial: {row['model']} (val {metric} {sign * row['score_val']:.4f}, "
              f"test {sign * row['score_test']:.4f})\n  config: {row['config']}")
        if row["trained"]:
            print(f"  as trained: {row['trained']}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.assign(config=table["config"].map(lambda c: json.dumps(c, default=str))).drop(columns="trained").to_csv(
            out / "trials.csv", index=False)
        (out / "best_configs.json").write_text(json.dumps(best, indent=2, default=str))
        print(f"\nwrote {out / 'trials.csv'} and {out / 'best_configs.json'}")


if __name__ == "__main__":
    main()
