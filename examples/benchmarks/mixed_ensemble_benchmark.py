"""Benchmark: AutoGluon's ensemble of GBDTs alone, with MAYA + TabSwift, and with TabM + RealMLP, at one budget.

    python examples/benchmarks/mixed_ensemble_benchmark.py                # 12 tables x 3 configs, 600 s, 2 cores
    python examples/benchmarks/mixed_ensemble_benchmark.py --report-only  # rebuild the latest seed's report
    python examples/benchmarks/mixed_ensemble_benchmark.py --data-dir /data/tables --datasets a,b,c --out /tmp/b
    python examples/benchmarks/mixed_ensemble_benchmark.py --smoke --time-limit 120 \
        --datasets qsar_biodeg,cpu_act --out /tmp/ens_smoke                # tiny models: checks the plumbing
    python examples/benchmarks/mixed_ensemble_benchmark.py --configs ours --out /tmp/candidate \
        --ours-add '{"MAYA": {"ag_args": {"priority": 80}}}'                # a candidate preset, package unchanged

Three configurations per dataset, each ONE whole AutoGluon fit (``TabularPredictor.fit``) with the same
``--time-limit`` (seconds for the whole fit, default 600), the same cores (``--num-cpus``, default 2; no GPU
unless ``--num-gpus``) and the same ensembling, stated in every result row (``ensembling``):
5-fold bagging (``--num-bag-folds``), one stack level (``--num-stack-levels``; the L2 models see the L1
out-of-fold predictions), weighted ensembles on top of each level, ``dynamic_stacking=False``, and the P1
validation part as the bag holdout (``use_bag_holdout=True``) on which AutoGluon fits the weighted ensembles
and picks the final model.

- ``gbdt``:  LightGBM + CatBoost + XGBoost (the tree entries of the preset, plus XGB);
- ``ours``:  the same trees + MAYA + TabSwift as ``autogluon_maya.hyperparameters(--preset)`` gives them
  (``light``: the preset for CPUs), i.e. the preset plus XGB (``examples/stack_with_gbdts.portfolio``);
- ``ag_dl``: the same trees + TabM + RealMLP, AutoGluon's own CPU-capable deep models, as
  ``TabularPredictor.fit(hyperparameters={..., "TABM": {}, "REALMLP": {}})`` schedules them: their defaults and
  class priorities (LightGBM 90, TabM 85, RealMLP 75, CatBoost 70, XGBoost 40), no time share of ours
  (``pip install "autogluon_maya[bench]"`` brings pytabkit);
- ``all``: the trees + MAYA + TabSwift + TabM + RealMLP.  The ``light`` preset's share mechanism extended to three
  neural families (``ALL_SCHEDULE``): after LightGBM, TabM, MAYA and RealMLP in turn, each allowed at most an equal
  share of the level's time left when it starts (1/5, 1/4, 1/3, ``ag_args_fit.max_time_limit_ratio``), so CatBoost
  and XGBoost keep at least the last 2/5; TabSwift (seconds) last, at level 1 only, as in the preset.  The
  shares follow from counting the families, not from a search on the benchmark tables.

Every configuration shares the trees: LightGBM, CatBoost and XGBoost at AutoGluon's defaults.

Rows written by an earlier version of this script under the name ``mixed`` are read as ``ours``.

Protocol P1 (``benchlib.protocol``), seed ``--seed`` (0): 64/16/20 train/validation/test split,
stratified for classification; tables larger than ``--max-train-rows`` (10,000) training rows are subsampled
(seeded, stratified) to 15,627 rows first, which P1 splits into 10,000 / 2,501 / 3,126.  The score of a fit is
the test accuracy (or RMSE) of the model AutoGluon picks on validation; its error e is 1 - accuracy or RMSE.

Every fit records (one JSON line in ``results.jsonl``): the commit of the package code (``commit``: short
hash of HEAD, ``-dirty`` when tracked files outside ``examples/benchmarks/results`` changed; ``code_commit``:
the last commit that touched anything outside the results folders), every fitted model (family, stack
level, validation and test score, the wall time of its whole fit (``ModelWallClock``, Ray start-up of the
parallel folds included) and its share of the fit's wall time, AutoGluon's own ``fit_time_marginal``, bag
folds fitted; for MAYA and TabSwift the folds that fell back to the prior, for MAYA the rules that stopped
its networks), every requested model that was not fitted and why (``time``, ``memory``, ``error``,
``constraint`` from AutoGluon's model failures; ``not started`` when AutoGluon skipped it for lack of time,
which it does without recording a failure), the weights of every weighted ensemble, the predictor's
inference time per 1,000 test rows (best model, persisted, after a warm-up call), the fit's wall time
against ``time_limit`` (``over_time``: more than ``time_limit x 1.05 + 2 s``), and on classification
tables the counts of test rows where the best tree model (by validation) is wrong and a neural model right.

Outputs in ``--out``: ``results.jsonl`` (appended, one row per finished or failed fit), ``results.md`` (the
report), ``error_reduction.png``, ``pama.png`` and ``logs/<dataset>_<config>.log`` (AutoGluon's output of
the latest fit of that pair).  A split seed other than 0 adds ``_seed<N>`` to the names of the report, its
PNGs and the logs, and a candidate preset (``--ours-add``) adds ``_candidate``, so one folder holds a report per
seed and candidate.  Resumable and cumulative: a (dataset, config) pair that has an ``ok`` row with
the same settings is skipped (``--refit`` fits it again, ``--refit-stale`` when no ``ok`` row ran this
checkout's package version; the report takes the latest ``ok`` row); failed
fits are recorded and retried on the next run.  Every fit runs in its own child process, so a crash or an
out-of-memory kill becomes a failure row, not the end of the run.

This is a benchmark, not a test: its numbers depend on the hardware, the load, the budget and the code of
the recorded commit.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/stack_with_gbdts.py (portfolio helper)

from benchlib.provenance import RESULTS_DIR, code_version, package_commit, package_repo  # noqa: E402

#: 6 binary, 3 multiclass, 3 regression tables (letter, otto and house_16H are subsampled)
DATASETS = ("qsar_biodeg,seismic_bumps,phoneme,spambase,telco_churn,bank_churn,"
            "satimage,letter,otto,ames_housing,cpu_act,house_16H")
CONFIGS = ("gbdt", "ours", "ag_dl", "all")
OLD_CONFIG_NAMES = {"mixed": "ours"}
GBDT_KEYS = ("GBM", "CAT", "XGB")
AG_DL_SMOKE = {"TABM": {"n_epochs": 2}, "REALMLP": {"n_epochs": 2}}
#: ``all``: (model key, priority, the most of the level's time left it may take); LightGBM (90) goes first
ALL_SCHEDULE = (("TABM", 85, 1 / 5), ("MAYA", 80, 1 / 4), ("REALMLP", 75, 1 / 3))
#: (A, B) pairs the report compares, A's relative error reduction over B
COMPARISONS = (("ours", "gbdt"), ("ours", "ag_dl"), ("all", "ag_dl"), ("all", "gbdt"))
#: settings that identify a result: a pair is "done" only for the same values of these
SETTINGS = ("preset", "time_limit", "max_train_rows", "seed", "num_bag_folds", "num_stack_levels", "num_cpus",
            "num_gpus", "smoke", "ours_add")
CHILD_GRACE_S = 600


def config_hyperparameters(config: str, preset: str, smoke: bool, ours_add: dict | None = None) -> dict:
    """The ``hyperparameters`` of one configuration; the trees are the same dict entries in all three.
    ``ours_add`` (``--ours-add``): a candidate preset measured without changing the package, ``ours`` only
    (:func:`_candidate_entry` says how each entry meets the preset's)."""
    from stack_with_gbdts import portfolio

    hp = portfolio(preset, smoke=smoke)  # the preset + XGB (+ tiny sizes with smoke)
    trees = {k: v for k, v in hp.items() if k in GBDT_KEYS}
    if config == "gbdt":
        return trees
    if config == "ours":
        return {**hp, **{key: _candidate_entry(hp.get(key), entry) for key, entry in (ours_add or {}).items()}}
    dl = {"TABM": {}, "REALMLP": {}}  # AutoGluon's defaults and class priorities
    if smoke:
        for key, override in AG_DL_SMOKE.items():
            dl[key].update(override)
    if config == "ag_dl":
        return {**trees, **dl}
    if config == "all":
        out = {**hp, **dl}
        for key, priority, ratio in ALL_SCHEDULE:
            out[key] = _candidate_entry(out[key], {"ag_args": {"priority": priority},
                                                   "ag_args_fit": {"max_time_limit_ratio": ratio}})
        return out
    raise ValueError(f"unknown config {config!r}; choose from {', '.join(CONFIGS)}")


def _candidate_entry(preset_entry, entry):
    """One ``--ours-add`` entry against the preset's entry of its key: a config (dict) is merged into the
    preset's config the way ``hyperparameters(overrides=...)`` merges (``ag_args``, ``ag_args_fit`` and
    ``ag_args_ensemble`` one level deep), so the preset's fit order and stacking flags stay unless the candidate
    names them; a list of configs, or a key the preset does not have, is taken as given."""
    import copy

    from autogluon_maya.portfolio import _merge

    entry = copy.deepcopy(entry)
    if isinstance(entry, dict) and isinstance(preset_entry, dict):
        return _merge(copy.deepcopy(preset_entry), entry)
    return entry


def ensembling(args_or_spec) -> str:
    get = args_or_spec.get if isinstance(args_or_spec, dict) else lambda k: getattr(args_or_spec, k)
    return (f"{get('num_bag_folds')}-fold bagging, {get('num_stack_levels')} stack level(s), weighted ensembles, "
            "dynamic_stacking=False, P1 validation part as bag holdout")


# ---- one fit (runs in a child process) -----------------------------------------------------------------
_FAILURE_KINDS = {"TimeLimitExceeded": "time", "InsufficientTime": "time", "NotEnoughMemoryError": "memory",
                  "NotEnoughCudaMemoryError": "memory", "MemoryError": "memory", "OutOfMemoryError": "memory"}


def expected_models(hp: dict, num_stack_levels: int) -> list[str]:
    """The bagged model names AutoGluon gives the configs of ``hp`` at the stack levels each may run at
    (``ag_args``: ``valid_base=False`` leaves out level 1, ``valid_stacker=False`` the levels above it)."""
    from autogluon.tabular.registry import ag_model_registry

    names = []
    for key, configs in hp.items():
        cls = ag_model_registry.key_to_cls(key)
        for c in configs if isinstance(configs, list) else [configs]:
            ag_args = c.get("ag_args", {})
            name = ag_args.get("name") or ag_args.get("name_prefix", "") + cls.ag_name + ag_args.get("name_suffix", "")
            levels = [lv for lv in range(1, num_stack_levels + 2)
                      if (ag_args.get("valid_base", True) if lv == 1 else ag_args.get("valid_stacker", True))]
            names += [f"{name}_BAG_L{level}" for level in levels]
    return names


def skipped_models(expected: list[str], fitted: list[str], failures: dict, constraint: dict,
                   started: dict | None = None) -> dict:
    """Requested models that are not among the fitted ones, with why: AutoGluon's recorded failure
    (``time`` / ``memory`` / ``error``), a fit constraint, or ``not started`` (no failure recorded: AutoGluon
    skips a model without one when its level has no time left).  ``started``: the wall-clock records of
    ``ModelWallClock``, which tell a model the trainer never reached from one it reached with too little time."""
    started = started or {}
    out = {}
    for name in expected:
        if name in fitted:
            continue
        if name in failures:
            f = failures[name]
            out[name] = {"reason": _FAILURE_KINDS.get(f["exc_type"], "error"),
                         "detail": f"{f['exc_type']}: {str(f['exc_str'])[:300]}",
                         "after_s": round(float(f.get("total_time") or 0.0), 1)}
        elif name in constraint:
            out[name] = {"reason": "constraint", "detail": str(constraint[name])[:300]}
        elif name in started:
            allotted = started[name].get("allotted_s")
            out[name] = {"reason": "not started", "detail": "reached with too little time left"
                         + ("" if allotted is None else f" ({allotted:.1f} s)")}
        else:
            out[name] = {"reason": "not started", "detail": "no time left in its stack level"}
    for name, f in failures.items():  # failures under names the expectation did not foresee
        if name not in out and name not in fitted:
            out[name] = {"reason": _FAILURE_KINDS.get(f["exc_type"], "error"),
                         "detail": f"{f['exc_type']}: {str(f['exc_str'])[:300]}"}
    return out


def one_fit(spec: dict) -> dict:
    import numpy as np

    import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
    from benchlib.ensemble import (NEURAL_FAMILIES, best_by_validation, error_of, family,
                                                      maya_stops, max_rows_for_train, over_time, prior_fallbacks,
                                                      stack_level, tree_wrong_neural_right)
    from benchlib.fit_clock import ModelWallClock
    from benchlib.p1 import p1_data, roc_auc
    from benchlib.protocol import p1_metric
    from stack_with_gbdts import fit_stack

    data = p1_data(Path(spec["data_dir"]) / spec["dataset"], seed=spec["seed"],
                   max_rows=max_rows_for_train(spec["max_train_rows"]))
    ds, train, val, test = data.dataset, data.train, data.val, data.test
    metric = p1_metric(ds.task)
    hp = config_hyperparameters(spec["config"], spec["preset"], spec["smoke"],
                                json.loads(spec["ours_add"]) if spec.get("ours_add") else None)
    path = tempfile.mkdtemp(prefix=f"ens_bench_{ds.name}_{spec['config']}_")
    try:
        clock = ModelWallClock()
        t0 = time.perf_counter()
        predictor = fit_stack(train, val, ds.target, ds.task, hp, spec["time_limit"], spec["num_bag_folds"],
                              spec["num_stack_levels"], spec["num_cpus"], spec["num_gpus"],
                              path=str(Path(path) / "ag"), verbosity=2, callbacks=[clock])
        fit_s = time.perf_counter() - t0
        x_test, y_test = test.drop(columns=[ds.target]), test[ds.target]
        trainer = predictor._trainer

        # every model's test predictions in one pass (stackers reuse their base models' predictions)
        names = predictor.model_names()
        if ds.is_classification:
            probas = predictor.predict_proba_multi(x_test, models=names)
            preds = {m: predictor.predict_from_proba(p) for m, p in probas.items()}
            test_score = {m: float(np.mean(np.asarray(p) == y_test.to_numpy())) for m, p in preds.items()}
        else:
            preds = predictor.predict_multi(x_test, models=names)
            test_score = {m: float(np.sqrt(np.mean((np.asarray(p, float) - y_test.to_numpy(float)) ** 2)))
                          for m, p in preds.items()}
        lb = predictor.leaderboard(silent=True).set_index("model")
        info = predictor.info()["model_info"]
        models = {}
        for m in names:
            bag = info.get(m, {}).get("bagged_info") or {}
            wall = clock.records.get(m, {}).get("wall_s")  # what the model cost the budget
            models[m] = {"family": family(m), "level": stack_level(m), "test": test_score[m],
                         "val": float(abs(lb.loc[m, "score_val"]) if metric != "accuracy" else lb.loc[m, "score_val"]),
                         "wall_s": None if wall is None else round(wall, 2),
                         "allotted_s": clock.records.get(m, {}).get("allotted_s"),
                         "ag_fit_s": round(float(lb.loc[m, "fit_time_marginal"] or 0.0), 2),
                         "fit_share": None if wall is None else round(wall / fit_s, 4),
                         "pred_val_s": round(float(lb.loc[m, "pred_time_val_marginal"] or 0.0), 3),
                         "n_folds": bag.get("num_child_models"),
                         # a bag's children that predict the prior instead (the two models that check)
                         "prior_fallbacks": prior_fallbacks(info.get(m, {})) if family(m) in ("MAYA", "TabSwift")
                         else None,
                         # why MAYA's networks stopped: rule counts over the folds, "early" before half their time
                         "stops": maya_stops(info.get(m, {})) if family(m) == "MAYA" else None}
        weights = {}
        for m in names:
            model = trainer.load_model(m)
            if hasattr(model, "_get_model_weights"):
                weights[m] = {k: round(float(w), 4) for k, w in model._get_model_weights().items()}

        failures = {k: dict(v) for k, v in getattr(trainer, "_models_failed_to_train_errors", {}).items()}
        constraint = dict(getattr(trainer, "_models_skipped_by_constraint", {}))
        skipped = skipped_models(expected_models(hp, spec["num_stack_levels"]), names, failures, constraint,
                                 clock.records)

        # inference time of what a user gets: the best model with its ancestors in memory, warmed up
        best = predictor.model_best
        predictor.persist(models=[best])
        predict = predictor.predict_proba if ds.is_classification else predictor.predict
        predict(x_test.head(10))
        t1 = time.perf_counter()
        out = predict(x_test)
        predict_s = time.perf_counter() - t1
        predictor.unpersist()
        auc = roc_auc(y_test, out, predictor.positive_class if ds.task == "binary" else None) \
            if ds.is_classification else None

        tree_vs_neural = None
        if ds.is_classification:
            val_scores = {m: float(lb.loc[m, "score_val"]) for m in names}
            l1 = [m for m in names if stack_level(m) == 1]
            tree = best_by_validation(val_scores, [m for m in l1 if family(m) == "GBDT"])
            neural = [m for m in l1 if family(m) in NEURAL_FAMILIES]
            if tree is not None:
                tree_vs_neural = {"tree_model": tree, **tree_wrong_neural_right(
                    y_test.to_numpy(), np.asarray(preds[tree]), {m: np.asarray(preds[m]) for m in neural})}

        best_weights = weights.get(best, {best: 1.0})
        return {"task": ds.task, "metric": "accuracy" if ds.is_classification else metric,
                "test_score": test_score[best], "test_error": error_of(test_score[best], "accuracy" if
                                                                        ds.is_classification else metric),
                "test_roc_auc": auc, "val_score": models[best]["val"], "best_model": best,
                "neural_weight": round(sum(w for m, w in best_weights.items() if family(m) in NEURAL_FAMILIES), 4),
                "neural_fitted_l1": [m for m in names if stack_level(m) == 1 and family(m) in NEURAL_FAMILIES],
                "models": models, "skipped": skipped, "weights": weights,
                "fit_s": round(fit_s, 1), "over_time": over_time(fit_s, spec["time_limit"]),
                "predict_s_per_1k": round(1000.0 * predict_s / max(len(test), 1), 4),
                "tree_vs_neural": tree_vs_neural, "hyperparameters": hp,
                "n_rows_used": len(ds.data), "n_train": len(train), "n_val": len(val), "n_test": len(test)}
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_child(spec: dict, log_path: Path) -> dict:
    """Run ``one_fit`` in a fresh Python process (its output goes to ``log_path``); a crash or timeout
    becomes an error row."""
    with tempfile.TemporaryDirectory(prefix="ens_bench_child_") as tmp:
        spec_path, result_path = Path(tmp, "spec.json"), Path(tmp, "result.json")
        spec_path.write_text(json.dumps(spec))
        timeout = 2 * spec["time_limit"] + CHILD_GRACE_S  # AutoGluon's time limit is soft
        with open(log_path, "w") as log:
            try:
                proc = subprocess.run([sys.executable, __file__, "--_child", str(spec_path), str(result_path)],
                                      timeout=timeout, stdout=log, stderr=subprocess.STDOUT)
            except subprocess.TimeoutExpired:
                return {"status": "error", "error": f"timeout after {timeout:.0f} s (log: {log_path})"}
        if result_path.exists():
            return json.loads(result_path.read_text())
        tail = log_path.read_text()[-1500:]
        return {"status": "error", "error": f"child exited with {proc.returncode}: {tail}"}


def _child_main(spec_path: str, result_path: str) -> None:
    import traceback

    spec = json.loads(Path(spec_path).read_text())
    try:
        row = {"status": "ok", **one_fit(spec)}
    except Exception as e:  # recorded, retried on the next run
        row = {"status": "error", "error": f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"}
    Path(result_path).write_text(json.dumps(row, default=str))


# ---- results file ----------------------------------------------------------------------------------------
def _old_csv_row(r: dict) -> dict:
    """A row of the earlier ``results.csv`` in today's form (``mixed`` -> ``ours``, numbers parsed)."""
    from benchlib.ensemble import NEURAL_FAMILIES, family, over_time, stack_level

    row = dict(r)
    row["config"] = OLD_CONFIG_NAMES.get(row["config"], row["config"])
    for k in ("test_score", "val_score", "fit_s", "time_limit", "nn_weight"):
        if row.get(k) not in (None, ""):
            row[k] = float(row[k])
    if "nn_weight" in row:
        row["neural_weight"] = row.pop("nn_weight")
    if row.get("metric") == "accuracy" and row.get("test_score") not in (None, ""):
        row["test_error"] = 1.0 - row["test_score"]
    elif row.get("test_score") not in (None, ""):
        row["test_error"] = row["test_score"]
    if row.get("max_rows") not in (None, ""):
        row["max_train_rows"] = f"total rows <= {row['max_rows']}"
    for k in ("num_bag_folds", "num_stack_levels", "seed"):
        if row.get(k) not in (None, ""):
            row[k] = int(row[k])
    row["weights"] = {row.get("best_model", ""): json.loads(row["weights"])} if row.get("weights") else {}
    row["model_names"] = (row.get("models") or "").split()  # names only: no per-model scores were recorded
    row["models"] = {}
    row["neural_fitted_l1"] = [m for m in row["model_names"] if stack_level(m) == 1 and family(m) in NEURAL_FAMILIES]
    if isinstance(row.get("fit_s"), float) and isinstance(row.get("time_limit"), float):
        row["over_time"] = over_time(row["fit_s"], row["time_limit"])
    row.setdefault("commit", "unrecorded")
    return row


def read_rows(out: Path) -> list[dict]:
    """Rows of ``results.jsonl`` (and of an earlier version's ``results.csv`` in the same folder)."""
    rows = []
    old = out / "results.csv"
    if old.exists():
        with open(old, newline="") as f:
            rows += [_old_csv_row(r) for r in csv.DictReader(f)]
    path = out / "results.jsonl"
    if path.exists():
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    r["config"] = OLD_CONFIG_NAMES.get(r["config"], r["config"])
                    rows.append(r)
    return rows


def _identifies(setting: str, config: str) -> bool:
    """Whether ``setting`` tells results of ``config`` apart: ``ours_add`` changes ``ours`` only, so a
    candidate run shares its ``gbdt`` and ``ag_dl`` fits with the run without one."""
    return setting != "ours_add" or config == "ours"


def _key(row: dict) -> tuple:
    return (row["dataset"], row["config"],
            *(str(row.get(s)) if _identifies(s, row["config"]) else "-" for s in SETTINGS))


def append_row(out: Path, row: dict) -> None:
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(row, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())


def settings_of(args) -> dict:
    return {"preset": args.preset, "time_limit": float(args.time_limit), "max_train_rows": args.max_train_rows,
            "seed": args.seed, "num_bag_folds": args.num_bag_folds, "num_stack_levels": args.num_stack_levels,
            "num_cpus": args.num_cpus, "num_gpus": args.num_gpus, "smoke": bool(args.smoke),
            "ours_add": json.dumps(args.ours_add, sort_keys=True) if args.ours_add else None}


def name_tag(seed, candidate) -> str:
    """What a log's or a report's file name adds for its rows: ``_seed<N>`` unless the split seed is 0 (or none
    recorded), then ``_candidate`` for a candidate preset (``--ours-add``), so that no file replaces another's."""
    seed = int(seed or 0)
    return f"{f'_seed{seed}' if seed else ''}{'_candidate' if candidate else ''}"


def log_name(row: dict) -> str:
    """A fit's log file in the folder's logs/: dataset and configuration, then :func:`name_tag`."""
    return f"{row['dataset']}_{row['config']}{name_tag(row.get('seed'), row.get('ours_add'))}.log"


def run(args, out: Path) -> None:
    settings = settings_of(args)
    ok = [r for r in read_rows(out) if r["status"] == "ok"]
    if args.refit_stale:  # done = run by the package version of this checkout
        current = code_version(out=out).get("package_commit")
        ok = [r for r in ok if version_of(r, package_repo()) == current]
    done = {_key(r) for r in ok}
    for dataset in args.datasets.split(","):
        if not (Path(args.data_dir) / dataset / "meta.json").exists():
            print(f"skip {dataset}: not found in {args.data_dir}", file=sys.stderr)
            continue
        for config in args.configs.split(","):
            row = {"dataset": dataset, "config": config, **settings}
            if _key(row) in done and not args.refit:
                print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: done, skipped", file=sys.stderr)
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: fitting ({args.time_limit:.0f} s budget)",
                  file=sys.stderr, flush=True)
            version = code_version(out=out)
            spec = {**row, "data_dir": str(args.data_dir)}
            (out / "logs").mkdir(exist_ok=True)
            result = run_child(spec, out / "logs" / log_name(row))
            row.update(version, ensembling=ensembling(settings), **result,
                       finished=time.strftime("%Y-%m-%d %H:%M:%S"))
            append_row(out, row)
            if row["status"] == "ok":
                skipped = ", ".join(f"{m} ({s['reason']})" for m, s in row["skipped"].items()) or "none"
                msg = (f"test {row['metric']} {row['test_score']:.4f} ({row['best_model']}, {row['fit_s']} s"
                       f"{', OVER TIME' if row['over_time'] else ''}); skipped: {skipped}")
            else:
                msg = f"FAILED: {str(row['error']).splitlines()[0][:200]}"
            print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: {msg}", file=sys.stderr, flush=True)


# ---- report ----------------------------------------------------------------------------------------------
def ok_rows(rows: list[dict], settings: dict | None) -> list[dict]:
    """The ``ok`` rows run with ``settings`` (all ``ok`` rows when None), in file order."""
    return [r for r in rows if r["status"] == "ok"
            and (settings is None or all(str(r.get(k)) == str(v) for k, v in settings.items()
                                         if _identifies(k, r["config"])))]


def latest_ok(rows: list[dict], settings: dict | None) -> dict:
    """The latest ``ok`` row per (dataset, config), among the rows run with ``settings`` (all when None)."""
    return {(r["dataset"], r["config"]): r for r in ok_rows(rows, settings)}


def compare(latest: dict) -> list[dict]:
    """One entry per dataset: the three errors, the relative error reductions of ours, the winner."""
    from benchlib.ensemble import outcome, relative_error_reduction

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


def version_of(row: dict, repo: Path | None = None) -> str:
    """The package version a row ran: its ``package_commit``, or for rows written before that field existed,
    the last package commit at or before its ``commit`` (looked up in ``repo``'s history)."""
    if row.get("package_commit"):
        return row["package_commit"]
    commit = str(row.get("commit") or "")
    head, dirty = commit.removesuffix("-dirty"), commit.endswith("-dirty")
    if repo is not None and head and " " not in head:
        try:
            return package_commit(repo, head) + ("-dirty" if dirty else "")
        except (OSError, subprocess.SubprocessError):
            pass
    return row.get("code_commit") or commit or "?"


def versions(rows: list[dict], settings: dict | None, repo: Path | None = None) -> tuple[list[str], dict]:
    """The package versions of the ``ok`` ``ours`` rows run with ``settings``, oldest first, and the latest
    such row per (dataset, version)."""
    order, latest = [], {}
    for r in ok_rows(rows, settings):
        if r["config"] != "ours":
            continue
        v = version_of(r, repo)
        if v not in order:
            order.append(v)
        latest[(r["dataset"], v)] = r
    return order, latest


def versions_section(rows: list[dict], settings: dict | None, repo: Path | None = None) -> list[str]:
    """``ours`` at every package version the results hold, and each version against the one before it on
    the validation rows (where a change is chosen) and on the test rows."""
    from benchlib.ensemble import error_of, mean_finite, relative_error_reduction, win_tie_loss

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
    from benchlib.ensemble import base_name, family, final_weights

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
    from benchlib.ensemble import base_name

    return ", ".join(base_name(m) for m in r.get("neural_fitted_l1", [])) or "none"


def write_report(out: Path, settings: dict | None = None, seed: int | None = None) -> str:
    """The report (:func:`report_paths`: ``results.md``, ``error_reduction.png`` and ``pama.png``, named by split
    seed and candidate) from the results file: the rows of ``settings``, or of the latest ok row's settings (of
    split seed ``seed``, if given; a seed without rows is a ValueError)."""
    from benchlib.ensemble import (base_name, family, final_weights, mean_finite, pama_of_models,
                                                      stack_level, win_tie_loss)

    rows = read_rows(out)
    pool = [r for r in rows if seed is None or int(r.get("seed") or 0) == seed]
    if rows and not pool:
        raise ValueError(f"no results of split seed {seed} in {out}")
    if settings is None and pool:  # the settings of the latest ok row
        last = next((r for r in reversed(pool) if r["status"] == "ok"), pool[-1])
        settings = {k: last.get(k) for k in SETTINGS if k in last}
    latest = latest_ok(rows, settings)
    comp = compare(latest)
    s = settings or {}
    smoke = str(s.get("smoke")) == "True"
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

    # ---- summary
    lines += ["## Summary", ""]
    titles, summary = [], {}
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

    # ---- per dataset
    extra = [(a, b) for a, b in COMPARISONS if a != "ours" and a in shown and b in shown]
    lines += ["## Per dataset", "",
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

    # ---- the fits
    lines += ["## The fits", "",
              "| dataset | config | wall s / limit | best model | its ensemble weights | neural L1 models fitted | "
              "not fitted (why) | largest fit-time shares | predict s / 1k rows | commit |",
              "|---|---|---:|---|---|---|---|---|---:|---|"]
    order = [c["dataset"] for c in comp]
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

    # ---- PAMA of the individual models
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
    lines += ["## PAMA of the individual models", "",
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

    # ---- where the trees are wrong and a neural model is right
    lines += ["## Where the best tree model is wrong and a neural model is right (classification test rows)", "",
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
    lines += neural_models_section(latest, order)
    lines += versions_section(rows, settings, package_repo())
    text = "\n".join(lines)
    paths = report_paths(out, s.get("seed"), bool(s.get("ours_add")))
    paths["results.md"].write_text(text)
    plot(comp, paths["error_reduction.png"], smoke, "; ".join(titles))
    from benchlib import plots

    plots.pama_bar(pama0, paths["pama.png"], 0.0, len(scores))
    return text


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


def parse_args(argv=None):
    from benchlib.protocol import default_datasets_dir
    from autogluon_maya.portfolio import PRESETS

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()),
                    help="folder of dataset folders (data.csv.gz + meta.json); default: %(default)s")
    ap.add_argument("--datasets", default=DATASETS, help="comma-separated folder names (default: %(default)s)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="subset of %(default)s")
    ap.add_argument("--preset", default="light", choices=sorted(PRESETS), help="portfolio of the ours config")
    ap.add_argument("--ours-add", type=json.loads, default=None, metavar="JSON",
                    help="a candidate preset for ours: model key -> config, merged into the preset's config of that "
                         "key (ag_args* one level deep), or -> list of configs, replacing it; e.g. "
                         "'{\"MAYA\": {\"ag_args_fit\": {\"max_time_limit_ratio\": 0.5}}}'. Recorded in every row; "
                         "ours rows of another candidate are other results, gbdt and ag_dl rows are shared")
    ap.add_argument("--time-limit", type=float, default=600, help="seconds per fit (whole AutoGluon fit)")
    ap.add_argument("--max-train-rows", type=int, default=10000, help="subsample larger tables (seeded)")
    ap.add_argument("--num-bag-folds", type=int, default=5)
    ap.add_argument("--num-stack-levels", type=int, default=1)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--num-gpus", type=float, default=0)
    ap.add_argument("--seed", type=int, default=None,
                    help="split seed (default 0); with --report-only: the report of that seed's latest settings")
    ap.add_argument("--smoke", action="store_true", help="tiny model sizes (checks the script, not the models)")
    ap.add_argument("--refit", action="store_true", help="fit pairs again that already have an ok row")
    ap.add_argument("--refit-stale", action="store_true",
                    help="fit pairs again whose ok rows all ran another package version than this checkout's "
                         "(with --configs ours: the rerun after a change to the package; resumable)")
    ap.add_argument("--out", default=f"{RESULTS_DIR}/ensemble_600s")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    args.report_seed, args.seed = args.seed, 0 if args.seed is None else args.seed
    for c in args.configs.split(","):
        if c not in CONFIGS:
            ap.error(f"unknown config {c!r}; choose from {', '.join(CONFIGS)}")
    if args.ours_add is not None and not (isinstance(args.ours_add, dict)
                                          and all(isinstance(v, (dict, list)) for v in args.ours_add.values())):
        ap.error("--ours-add must be a JSON object mapping model keys to a config or a list of configs")
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.report_only:
        try:
            text = write_report(out, seed=args.report_seed)
        except ValueError as e:
            raise SystemExit(f"error: {e}")
    else:
        run(args, out)
        text = write_report(out, settings_of(args))
    print(text)
    print(f"wrote the report in {out} (results.md and two PNGs, named by split seed and candidate)")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--_child":
        os.environ.setdefault("PYTHONUNBUFFERED", "1")
        _child_main(sys.argv[2], sys.argv[3])
    else:
        main()
