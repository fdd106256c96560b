"""The 12 tables of the ensemble benchmark as TabArena user tasks: seven methods at their defaults, bagged the
TabArena way, one outer split per table; resumable.

    python examples/benchmarks/tabarena_run.py --data-dir /data/tables             # the full run (see below)
    python examples/benchmarks/tabarena_run.py --smoke --out /tmp/ta_smoke         # the plumbing, 2-3 min on 2 cores
    python examples/benchmarks/tabarena_run.py --datasets phoneme --methods TabM,MAYA   # some tables, some methods
    python examples/benchmarks/tabarena_compare.py --out <the same --out>          # Elo, ranks, simulated ensembles

The tables (``mixed_ensemble_benchmark.DATASETS``): qsar_biodeg, seismic_bumps, phoneme, spambase, telco_churn,
bank_churn, satimage, letter, otto, ames_housing, cpu_act, house_16H, read from ``--data-dir`` (default
``$AUTOGLUON_MAYA_DATASETS``, else ``./datasets``).  Each becomes a TabArena task with
``UserTask.create_task`` (no OpenML, no download) holding ONE outer split, the split of protocol P1
(``benchlib.p1.p1_data``, seed ``--seed``): TabArena's train part = P1's train + validation rows, its test part =
P1's test rows.  A table above 15,627 rows (``benchlib.ensemble.max_rows_for_train(10000)``, the cap of the other
benchmarks: 10,000 P1 training rows) is first subsampled to that many rows, seeded and stratified for
classification, by ``benchlib.protocol.load_dataset`` -- the same rows the other benchmarks fit on.  Object
columns become ``category`` (TabArena refuses ``object``).  The metric is TabArena's default for the problem
type: ROC-AUC (binary), log loss (multiclass), RMSE (regression); TabArena reports errors (1 - AUC, ...).

The methods, each at its default, built by one ``TabArenaV0pt1ExperimentBundle`` (the settings of TabArena-v0.1's
leaderboard: AutoGluon's default preprocessing, no feature shuffling) with ``n_configs`` 0:

* ``CatBoost``, ``LightGBM``, ``XGBoost``, ``TabM``, ``RealMLP``: TabArena's registry entries;
* MAYA and TabSwift: ``maya_config_generator()`` and ``tabswift_config_generator()`` of
  ``autogluon_maya.integrations.tabarena`` as ``(generator, 0)`` entries, the route TabArena recommends for models
  outside its registry (TabSwift with the checkpoint shipped in the package: no download).

``--methods`` (these labels, comma-separated; default all seven) builds and fits only the named configs; a
config's name and seeds do not depend on which others are built beside it.

TabArena's bagging protocol: 8 bag folds, one bag set, the bundle's seeds (varied across the folds); the
out-of-fold predictions on the train part are the validation predictions TabArena's ensemble simulation uses.
Each config (one bagged model) has ``--time-limit`` seconds (default 300, sized for 2 CPU cores; TabArena's own
limit is 3,600 s per config) and ``--num-cpus`` cores (2); the runner fits one config at a time, and a config
fits its folds one after another in this process (``--parallel-folds``: AutoGluon's parallel fold fitting
with Ray, as TabArena runs it on larger machines).

Worst case at the defaults: 12 tables x 7 configs x 300 s = 25,200 s = 7.0 h of time limits, plus what the
limits do not cover -- loading the task, the test-set predictions, AutoGluon's overrun of a limit (a few
per cent) -- about 8 h in all.  Most configs stop well before their limit on the small tables.

Outputs in ``--out`` (default ``examples/benchmarks/results/tabarena_12``):

* ``results.csv`` (commit it): one row per (table, method): test and validation error, metric, problem
  type, fit and predict seconds, train/test rows -- from TabArena's ``EvaluationRepository.metrics()`` over the
  runner's results --, what the config got against its limit (``time_limit_s``, ``time_used_share`` = fit
  seconds / limit, ``at_limit`` when it used at least 90 % of it, ``folds_fitted`` from the bagged model's info)
  and ``status`` (``ok``, or ``missing`` when the config failed or has not run yet);
* ``settings.json`` (commit it): the settings, the configs and the tables' sizes of every row in
  ``results.csv``, and the code version of the latest run;
* ``raw/`` (do NOT commit; the script writes a ``.gitignore`` there that ignores it all): ``runs/`` the runner's
  ``results.pkl`` per (config, table) -- the cache a rerun resumes from --, ``tasks/`` the TabArena tasks,
  ``repo/`` the ``EvaluationRepository`` (``to_dir``) with the validation and test predictions of the run's
  tables (every method whose fit on them this disk holds and ``results.csv`` reports, not only the ones this run
  fitted), which ``tabarena_compare.py`` loads for the ensemble simulation, ``models/`` where fits write their
  models (removed after each fit).

Resumable: a (config, table) pair with a ``results.pkl`` is loaded, not fitted again; a failed fit is logged,
left out and tried again on the next run.  The settings that define a result (seed, row cap, time limit, folds,
cores, ``--smoke``) are stored in ``settings.json``; a rerun with other values into the same ``--out`` stops
with an error (``--datasets`` and ``--methods`` choose what to fit, not what a result means).

A run over some tables (``--datasets``) or some methods (``--methods``) adds to the folder, per (table,
method): it replaces the ``results.csv`` rows of the pairs it fits and keeps every other row, and
``settings.json`` keeps the sizes of every table with a row.  The package commit matters for the package's own
methods only: a run that fits MAYA or TabSwift stops with an error before fitting when a kept row of MAYA or
TabSwift was made by another package commit (or the package has uncommitted changes), so two versions of these
models are never mixed; the rows of TabArena's registry methods do not depend on this package and are kept
whatever commit wrote them.  So a run spread over machines without the raw cache of each other still ends in
one ``results.csv``; the rows are ordered by table, then method, whichever runs wrote them.  The merging:
``benchlib/tabarena_merge.py``.

The 1,200 s rerun.  At 300 s the neural methods ran out of time on most tables (``at_limit``).  TabM, RealMLP
and MAYA get 1,200 s per config on six tables covering the three problem types, one table per call, into a
folder of their own (the time limit defines a result), committing after each table::

    OUT=examples/benchmarks/results/tabarena_12_1200s
    for t in qsar_biodeg seismic_bumps phoneme satimage ames_housing cpu_act; do
        python examples/benchmarks/tabarena_run.py --datasets $t --methods TabM,RealMLP,MAYA --time-limit 1200 \\
            --out $OUT || break
        git add $OUT/results.csv $OUT/settings.json
        git commit -m "TabArena at 1,200 s per config: $t" -- $OUT/results.csv $OUT/settings.json
    done
    python examples/benchmarks/tabarena_budgets.py    # 300 s against 1,200 s

CatBoost joins ``--methods`` on a table only where it was at its limit at 300 s (``at_limit`` of
``results/tabarena_12/results.csv``: letter and otto, neither of the six).  Worst case: 6 tables x 3 configs x
1,200 s = 21,600 s = 6.0 h of time limits, plus what the limits do not cover.  Spread over machines, give each
its own tables of the list and ``git pull --rebase`` before each table, so that the run keeps the rows the others
committed; when a push then conflicts on ``results.csv``, take the other side's file and repeat the same call:
it loads its fits from ``raw/`` (nothing is fitted again) and writes the merged file.

``--smoke``: two shipped tables (``plugin_tests/data``: qsar_biodeg, ames_housing), 200 rows each, 2 bag
folds, tiny models (MAYA 3 epochs and one member, TabSwift one estimator without fine-tuning, 20 boosting
rounds, 2 epochs for TabM and RealMLP), 30 s per config; ``--out`` defaults to a folder under the system's
temporary directory.  It checks the plumbing, not the models.

Needs ``pip install "autogluon_maya[bench]"`` (tabarena, bencheval, pytabkit for RealMLP) and ``tabm``, the
package TabArena's TabM imports (``pip install tabm``, or ``tabarena[tabm]``); the script checks both before it
starts.  Offline: the tasks are local, the models need no download, and ``HF_HUB_OFFLINE`` is set unless the
environment sets it.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from benchlib.ensemble import max_rows_for_train  # noqa: E402
from benchlib.provenance import code_version  # noqa: E402
from benchlib.tabarena_merge import (LABELS, METHODS, OWN_METHODS, RESULT_SETTINGS,  # noqa: E402,F401
                                      cached_results, check_settings, earlier_tables, kept_from_earlier,
                                      label_of, merged_rows, row_package_commits, table_order,
                                      write_settings)
from mixed_ensemble_benchmark import DATASETS  # noqa: E402  (the 12 tables of the ensemble benchmark)

DEFAULT_OUT = HERE / "results" / "tabarena_12"
SMOKE_DATA = REPO / "plugin_tests" / "data"
SMOKE_TABLES = "qsar_biodeg,ames_housing"
SMOKE_ROWS = 200
#: TabArena's registry names of the five reference methods
REGISTRY_MODELS = ("CatBoost", "LightGBM", "XGBoost", "TabM", "RealMLP")
#: --smoke: tiny settings, merged into each default config (the bundle's per-model hyperparameters)
SMOKE_HYPERPARAMETERS = {
    "CatBoost": {"iterations": 20},
    "LightGBM": {"num_boost_round": 20},
    "XGBoost": {"n_estimators": 20},
    "TabM": {"n_epochs": 2},
    "RealMLP": {"n_epochs": 2},
    "MAYA": {"max_epochs": 3, "ensemble_members": 1},
    "TabSwift": {"n_estimators": 1, "fine_tune": False},
}
NUM_BAG_FOLDS = 8
SMOKE_BAG_FOLDS = 2
#: what TabArena's TabM and RealMLP import when they fit: checked before the run starts
REQUIRED_MODULES = (("tabm", "TabArena's TabM: tabarena[tabm]"),
                    ("pytabkit", "TabArena's RealMLP: tabarena[realmlp]"))
PIP_NAMES = ("tabm", "pytabkit")
GITIGNORE = ("# Raw TabArena artefacts (results.pkl per fit, tasks, the EvaluationRepository): large and\n"
             "# machine-specific. results.csv and settings.json one folder up are the committed form.\n*\n")


# ---- tasks -----------------------------------------------------------------------------------------------
def build_task(path: Path, *, seed: int, max_rows: int, task_dir: Path, smoke: bool):
    """The TabArena task of one table: P1's split of the (capped) table, as a saved ``UserTask``; returns
    ``(user_task, info)`` with the table's sizes."""
    from benchlib.p1 import p1_data
    from tabarena.benchmark.task.user_task import UserTask

    data = p1_data(path, seed=seed, max_rows=max_rows)
    ds = data.dataset
    frame = ds.data.copy()
    for column in frame.columns:  # TabArena takes categoricals as ``category``, never ``object``
        if column != ds.target and frame[column].dtype == object:
            frame[column] = frame[column].astype("category")
    train_rows = sorted(int(i) for i in list(data.train.index) + list(data.val.index))
    test_rows = sorted(int(i) for i in data.test.index)
    user_task = UserTask(task_name=f"{ds.name}_smoke" if smoke else ds.name, task_cache_path=task_dir)
    task = user_task.create_task(target_feature=ds.target,
                                 problem_type="classification" if ds.is_classification else "regression",
                                 dataset=frame, splits={0: {0: (train_rows, test_rows)}})
    user_task.save_task(task)
    info = {"table": ds.name, "dataset": user_task.tabarena_task_name, "task": ds.task, "target": ds.target,
            "rows": len(frame), "features": frame.shape[1] - 1, "train_rows": len(train_rows),
            "test_rows": len(test_rows)}
    return user_task, info


# ---- experiments -----------------------------------------------------------------------------------------
def build_experiments(*, time_limit: float, num_cpus: int, num_gpus: int, smoke: bool, parallel_folds: bool,
                      models_dir: Path, verbosity: int, methods=METHODS) -> list:
    """The default configs of ``methods`` (labels of :data:`METHODS`) as TabArena bag experiments, all from one
    bundle.  A config's name and seed depend on its model alone (each model's default is its ``c1``), so a
    config built with fewer methods is the one the full list builds."""
    from tabarena.benchmark.experiment.bundle import TabArenaV0pt1ExperimentBundle

    from autogluon_maya.integrations.tabarena import maya_config_generator, tabswift_config_generator

    def entry(model, label):
        return (model, 0, SMOKE_HYPERPARAMETERS[label]) if smoke else (model, 0)

    own = {"MAYA": maya_config_generator, "TabSwift": lambda: tabswift_config_generator(checkpoint_path="shipped")}
    models = [entry(own[label]() if label in own else label, label) for label in METHODS if label in methods]
    bundle = TabArenaV0pt1ExperimentBundle(models=models, sequential_local_fold_fitting=not parallel_folds,
                                           model_artifacts_base_path=str(models_dir), verbosity=verbosity,
                                           model_verbosity=None)
    experiments = bundle.build_experiments(time_limit=int(time_limit), num_cpus=num_cpus, num_gpus=num_gpus)
    if smoke:
        experiments = [with_bag_folds(e, SMOKE_BAG_FOLDS) for e in experiments]
    return experiments


def with_bag_folds(experiment, num_bag_folds: int):
    """The same bag experiment with another fold count, rebuilt from the constructor arguments TabArena records
    for its YAML round trip (the bundle itself has no fold-count setting)."""
    kwargs = {**experiment._locals, "num_bag_folds": num_bag_folds}
    return type(experiment)(**kwargs)


# ---- the run ---------------------------------------------------------------------------------------------
def settings_of(args) -> dict:
    return {"seed": args.seed, "max_rows": args.max_rows, "time_limit": args.time_limit,
            "num_bag_folds": SMOKE_BAG_FOLDS if args.smoke else NUM_BAG_FOLDS, "num_bag_sets": 1,
            "num_cpus": args.num_cpus, "num_gpus": args.num_gpus, "smoke": args.smoke,
            "parallel_folds": args.parallel_folds, "bundle": "TabArenaV0pt1ExperimentBundle",
            "tables": args.datasets.split(","), "data_dir": str(args.data_dir)}


def write_raw_gitignore(raw: Path) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    (raw / ".gitignore").write_text(GITIGNORE)


#: a config that used at least this share of its time limit is "at the limit": its models may have been cut short
AT_LIMIT_SHARE = 0.9


def folds_fitted(result: dict) -> int | None:
    """How many bag folds a config fitted, from the runner's result (the bagged model's info); None where the
    result does not say."""
    info = (result.get("method_metadata") or {}).get("info") or {}
    bagged = info.get("bagged_info") or {}
    names = bagged.get("child_model_names")
    return len(names) if names is not None else bagged.get("num_child_models")


def budget_columns(fit_s, time_limit: float, folds) -> dict:
    """What a config got against its limit: the limit, the share of it used, whether it ran up to the limit
    (``at_limit``: at least ``AT_LIMIT_SHARE`` of it used) and the folds it fitted (None: not recorded)."""
    used = None if fit_s is None or pd_isna(fit_s) else float(fit_s) / time_limit
    return {"time_limit_s": time_limit, "time_used_share": None if used is None else round(used, 3),
            "at_limit": None if used is None else bool(used >= AT_LIMIT_SHARE), "folds_fitted": folds}


def pd_isna(v) -> bool:
    import pandas as pd

    return bool(pd.isna(v))


def compact_rows(repo, infos: list[dict], configs: list[str], package_commit: str, time_limit: float,
                 folds: dict | None = None) -> list[dict]:
    """One row per (table, config) from the repository's metrics, with what the config got against its time
    limit (``budget_columns``; ``folds`` maps (dataset, config) to the folds fitted) and the package commit that
    made it; pairs without a result are ``missing``."""
    metrics = repo.metrics().reset_index() if repo is not None else None
    rows = []
    for info in infos:
        dataset = info["dataset"]
        meta = repo.dataset_info(dataset) if repo is not None and dataset in repo.datasets() else {}
        for config in configs:
            hit = None if metrics is None else metrics[(metrics["dataset"] == dataset)
                                                       & (metrics["framework"] == config)]
            row = {"table": info["table"], "method": label_of(config), "config": config, "dataset": dataset,
                   "task": info["task"], "problem_type": meta.get("problem_type"), "metric": meta.get("metric"),
                   "train_rows": info["train_rows"], "test_rows": info["test_rows"]}
            if hit is not None and len(hit):
                r = hit.iloc[0]
                row.update(status="ok", test_error=float(r["metric_error"]),
                           val_error=float(r["metric_error_val"]), fit_s=round(float(r["time_train_s"]), 2),
                           predict_s=round(float(r["time_infer_s"]), 3))
            else:
                row.update(status="missing", test_error=None, val_error=None, fit_s=None, predict_s=None)
            row.update(budget_columns(row["fit_s"], time_limit, (folds or {}).get((dataset, config))))
            rows.append({**row, "package_commit": package_commit})
    return rows


def build_tasks(args, task_dir: Path) -> tuple[list, list[dict]]:
    """The TabArena tasks of ``--datasets`` (:func:`build_task`) and their infos, each announced."""
    user_tasks, infos = [], []
    for table in args.datasets.split(","):
        user_task, info = build_task(Path(args.data_dir) / table, seed=args.seed, max_rows=args.max_rows,
                                     task_dir=task_dir, smoke=args.smoke)
        user_tasks.append(user_task)
        infos.append(info)
        print(f"task {info['table']}: {info['task']}, {info['train_rows']} train / {info['test_rows']} test rows, "
              f"{info['features']} features -> {info['dataset']}", flush=True)
    return user_tasks, infos


def print_results(frame, out: Path, raw: Path) -> None:
    """The merged ``results.csv`` rows on the console, the missing pairs named."""
    import pandas as pd

    missing = frame[frame["status"] != "ok"]
    with pd.option_context("display.max_rows", None, "display.max_columns", None, "display.width", 200):
        print(frame[["table", "method", "metric", "test_error", "val_error", "fit_s", "at_limit", "folds_fitted",
                     "predict_s", "status"]])
    if len(missing):
        print(f"missing ({len(missing)}): "
              + ", ".join(f"{t}/{m}" for t, m in zip(missing["table"], missing["method"])), flush=True)
    print(f"wrote {out / 'results.csv'}, {out / 'settings.json'} and {raw / 'repo'}", flush=True)


def run(args) -> None:
    import pandas as pd
    from tabarena.benchmark.experiment import ExperimentBatchRunner
    from tabarena.benchmark.result import BaselineResult
    from tabarena.benchmark.task.metadata.collection import TaskMetadataCollection
    from tabarena.repository.generate_repo import generate_repo_from_results_lst

    out = Path(args.out).resolve()
    raw = out / "raw"
    settings = settings_of(args)
    check_settings(out, settings)
    code = code_version(out=out)
    kept_rows, kept_infos, settings["tables"] = kept_from_earlier(out, settings, code["package_commit"],
                                                                  args.methods)
    write_raw_gitignore(raw)

    t0 = time.time()
    tables = args.datasets.split(",")
    user_tasks, infos = build_tasks(args, raw / "tasks")
    collection = TaskMetadataCollection.from_user_tasks(user_tasks)

    experiments = build_experiments(time_limit=args.time_limit, num_cpus=args.num_cpus, num_gpus=args.num_gpus,
                                    smoke=args.smoke, parallel_folds=args.parallel_folds,
                                    models_dir=raw / "models", verbosity=args.verbosity, methods=args.methods)
    configs = [e.name for e in experiments]
    print("configs:", ", ".join(configs), flush=True)
    write_settings(out, settings, configs, kept_rows, kept_infos + infos, code)

    runner = ExperimentBatchRunner(expname=str(raw / "runs"), task_metadata=collection, user_tasks=user_tasks,
                                   debug_mode=False, raise_on_failure=False, cache_mode="default")
    results = runner.run(methods=experiments, datasets=[i["dataset"] for i in infos], folds=[0])
    print(f"{len(results)} of {len(configs) * len(infos)} (config, table) results after "
          f"{time.time() - t0:.0f} s", flush=True)
    folds = {(r["task_metadata"]["name"], r["framework"]): folds_fitted(r) for r in results}
    # the repository holds every method of this run's tables that this disk has the fit of, not only the
    # methods this run fitted: tabarena_compare.py simulates a table's ensembles from it
    results = results + cached_results(raw / "runs", [r for r in kept_rows if r["table"] in tables])

    repo = None
    if results:
        repo = generate_repo_from_results_lst(results_lst=[BaselineResult.from_dict(r) for r in results],
                                              task_metadata=collection)
        repo.to_dir(raw / "repo")
    frame = pd.DataFrame(merged_rows(kept_rows, compact_rows(repo, infos, configs, code["package_commit"],
                                                             args.time_limit, folds), settings["tables"]))
    frame.to_csv(out / "results.csv", index=False)
    print_results(frame, out, raw)


def parse_methods(text: str, error=None) -> tuple[str, ...]:
    """``"tabm,MAYA"`` -> ``("TabM", "MAYA")``: the labels of :data:`METHODS` (any case), in their order."""
    canonical = {m.lower(): m for m in METHODS}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n.lower() not in canonical]
    if unknown or not names:
        message = (f"--methods: {'unknown ' + ', '.join(unknown) if unknown else 'none given'}; "
                   f"choose from {', '.join(METHODS)}")
        if error is None:
            raise ValueError(message)
        error(message)
    chosen = {canonical[n.lower()] for n in names}
    return tuple(m for m in METHODS if m in chosen)


def parse_args(argv=None):
    from benchlib.protocol import default_datasets_dir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None,
                    help=f"folder of dataset folders (default: {default_datasets_dir()}; with --smoke {SMOKE_DATA})")
    ap.add_argument("--datasets", default=None,
                    help=f"comma-separated tables (default: the 12 tables; with --smoke {SMOKE_TABLES})")
    ap.add_argument("--out", default=None,
                    help=f"output folder (default: {DEFAULT_OUT}; with --smoke a folder under the temp directory)")
    ap.add_argument("--time-limit", type=float, default=None, help="seconds per config (default 300; smoke 30)")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--num-gpus", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0, help="the P1 split and subsample seed (default 0)")
    ap.add_argument("--max-rows", type=int, default=None,
                    help="subsample larger tables to this many rows (default 15,627, i.e. 10,000 P1 training rows; "
                         f"smoke {SMOKE_ROWS})")
    ap.add_argument("--parallel-folds", action="store_true",
                    help="fit a config's bag folds in parallel with Ray (default: one after another)")
    ap.add_argument("--verbosity", type=int, default=1, help="AutoGluon's verbosity in each fit (default 1)")
    ap.add_argument("--methods", default=",".join(METHODS),
                    help=f"comma-separated methods to fit, of {', '.join(METHODS)} (default: all seven); the "
                         "folder keeps the other methods' rows")
    ap.add_argument("--smoke", action="store_true", help="two tiny tables, tiny models: checks the plumbing")
    args = ap.parse_args(argv)
    args.methods = parse_methods(args.methods, ap.error)
    if args.data_dir is None:
        args.data_dir = str(SMOKE_DATA if args.smoke else default_datasets_dir())
    if args.datasets is None:
        args.datasets = SMOKE_TABLES if args.smoke else DATASETS
    if args.out is None:
        args.out = str(Path(tempfile.gettempdir()) / "tabarena_12_smoke") if args.smoke else str(DEFAULT_OUT)
    if args.time_limit is None:
        args.time_limit = 30.0 if args.smoke else 300.0
    if args.max_rows is None:
        args.max_rows = SMOKE_ROWS if args.smoke else max_rows_for_train(10000)
    lacking = [f"{module} ({why})" for module, why in REQUIRED_MODULES if importlib.util.find_spec(module) is None]
    if lacking:
        ap.error(f"not importable: {', '.join(lacking)}; install with pip install {' '.join(PIP_NAMES)}")
    missing = [t for t in args.datasets.split(",") if not (Path(args.data_dir) / t / "meta.json").is_file()]
    if missing:
        ap.error(f"no dataset folder (data.csv.gz + meta.json) for {', '.join(missing)} in {args.data_dir}; "
                 f"pass --data-dir or set $AUTOGLUON_MAYA_DATASETS")
    return args


def main(argv=None) -> None:
    # before anything imports huggingface_hub (which reads it once): nothing here downloads
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    run(parse_args(argv))


if __name__ == "__main__":
    main()
