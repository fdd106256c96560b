"""Benchmark: AutoGluon's ensemble of GBDTs alone, with MAYA + TabSwift, and with TabM + RealMLP, at one budget.

    python examples/benchmarks/mixed_ensemble_benchmark.py                # 12 tables x 3 configs, 600 s, 2 cores
    python examples/benchmarks/mixed_ensemble_benchmark.py --report-only  # rebuild the latest seed's report
    python examples/benchmarks/mixed_ensemble_benchmark.py --data-dir /data/tables --datasets a,b,c --out /tmp/b
    python examples/benchmarks/mixed_ensemble_benchmark.py --smoke --time-limit 120 \
        --datasets qsar_biodeg,cpu_act --out /tmp/ens_smoke                # tiny models: checks the plumbing
    python examples/benchmarks/mixed_ensemble_benchmark.py --configs ours --out /tmp/candidate \
        --ours-add '{"MAYA": {"ag_args": {"priority": 80}}}'                # a candidate preset, package unchanged

Three (or four) configurations per table, each one whole AutoGluon fit at the same budget: ``gbdt`` (LightGBM +
CatBoost + XGBoost), ``ours`` (the same + MAYA + TabSwift), ``ag_dl`` (the same + TabM + RealMLP) and ``all``
(every family).  The protocol, what each result row records, the outputs and the resume rules:
``docs/benchmarks.md``, "The ensemble benchmark".  Storage: ``benchlib/ensemble_store.py``; the report:
``benchlib/ensemble_report.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # examples/stack_with_gbdts.py (portfolio helper)

from benchlib.ensemble_report import COMPARISONS, write_report  # noqa: E402,F401  (importable from here too)
from benchlib.ensemble_store import (CONFIGS, OLD_CONFIG_NAMES, SETTINGS, append_row, log_name,  # noqa: E402,F401
                                     read_rows, result_key, settings_of, version_of)
from benchlib.provenance import RESULTS_DIR, code_version, package_repo  # noqa: E402

#: 6 binary, 3 multiclass, 3 regression tables (letter, otto and house_16H are subsampled)
DATASETS = ("qsar_biodeg,seismic_bumps,phoneme,spambase,telco_churn,bank_churn,"
            "satimage,letter,otto,ames_housing,cpu_act,house_16H")
GBDT_KEYS = ("GBM", "CAT", "XGB")
AG_DL_SMOKE = {"TABM": {"n_epochs": 2}, "REALMLP": {"n_epochs": 2}}
#: ``all``: (model key, priority, the most of the level's time left it may take); LightGBM (90) goes first
ALL_SCHEDULE = (("TABM", 85, 1 / 5), ("MAYA", 80, 1 / 4), ("REALMLP", 75, 1 / 3))
CHILD_GRACE_S = 600


def config_hyperparameters(config: str, preset: str, smoke: bool, ours_add: dict | None = None) -> dict:
    """The ``hyperparameters`` of one configuration; the trees are the same dict entries in all three.
    ``ours_add`` (``--ours-add``): a candidate preset measured without changing the package, ``ours`` only
    (:func:`_candidate_entry` says how each entry meets the preset's)."""
    from stack_with_gbdts import portfolio

    hp = portfolio(preset, smoke=smoke, tabswift=True)  # the preset + XGB (+ tiny sizes with smoke)
    if isinstance(hp.get("TABSWIFT"), dict):  # the TabSwift the committed runs measured: the shipped checkpoint
        hp["TABSWIFT"]["checkpoint_path"] = "shipped"
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
    """One configuration on one table: the fit, every model's scores and timings, what was not fitted and why, the
    final model's predict time, and on classification tables where the best tree is wrong and a neural model right."""
    import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
    from benchlib.ensemble import NEURAL_FAMILIES, error_of, family, max_rows_for_train, over_time, stack_level
    from benchlib.fit_clock import ModelWallClock
    from benchlib.p1 import p1_data
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
        names = predictor.model_names()
        preds, test_score = _test_predictions(predictor, ds, x_test, y_test, names)
        lb = predictor.leaderboard(silent=True).set_index("model")
        models = _model_records(predictor, names, lb, test_score, clock.records, fit_s, metric)
        weights = _ensemble_weights(predictor._trainer, names)
        skipped = _not_fitted(predictor._trainer, expected_models(hp, spec["num_stack_levels"]), names, clock.records)
        best = predictor.model_best
        predict_s, auc = _predict_time(predictor, ds, x_test, y_test, best)
        tree_vs_neural = _tree_vs_neural(ds, lb, names, preds, y_test)
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


def _test_predictions(predictor, ds, x_test, y_test, names: list[str]) -> tuple[dict, dict]:
    """Every model's test predictions in one pass (stackers reuse their base models' predictions) and its test
    accuracy or RMSE."""
    import numpy as np

    if ds.is_classification:
        probas = predictor.predict_proba_multi(x_test, models=names)
        preds = {m: predictor.predict_from_proba(p) for m, p in probas.items()}
        test_score = {m: float(np.mean(np.asarray(p) == y_test.to_numpy())) for m, p in preds.items()}
    else:
        preds = predictor.predict_multi(x_test, models=names)
        test_score = {m: float(np.sqrt(np.mean((np.asarray(p, float) - y_test.to_numpy(float)) ** 2)))
                      for m, p in preds.items()}
    return preds, test_score


def _model_records(predictor, names: list[str], lb, test_score: dict, clock: dict, fit_s: float,
                   metric: str) -> dict:
    """Per fitted model: family, stack level, validation and test score, the wall time of its whole fit and its
    share of the fit's, AutoGluon's own timings, bag folds, and for MAYA / TabSwift what their folds did."""
    from benchlib.ensemble import family, maya_stops, prior_fallbacks, stack_level

    info = predictor.info()["model_info"]
    models = {}
    for m in names:
        bag = info.get(m, {}).get("bagged_info") or {}
        wall = clock.get(m, {}).get("wall_s")  # what the model cost the budget
        models[m] = {"family": family(m), "level": stack_level(m), "test": test_score[m],
                     "val": float(abs(lb.loc[m, "score_val"]) if metric != "accuracy" else lb.loc[m, "score_val"]),
                     "wall_s": None if wall is None else round(wall, 2),
                     "allotted_s": clock.get(m, {}).get("allotted_s"),
                     "ag_fit_s": round(float(lb.loc[m, "fit_time_marginal"] or 0.0), 2),
                     "fit_share": None if wall is None else round(wall / fit_s, 4),
                     "pred_val_s": round(float(lb.loc[m, "pred_time_val_marginal"] or 0.0), 3),
                     "n_folds": bag.get("num_child_models"),
                     # a bag's children that predict the prior instead (the two models that check)
                     "prior_fallbacks": prior_fallbacks(info.get(m, {})) if family(m) in ("MAYA", "TabSwift")
                     else None,
                     # why MAYA's networks stopped: rule counts over the folds, "early" before half their time
                     "stops": maya_stops(info.get(m, {})) if family(m) == "MAYA" else None}
    return models


def _ensemble_weights(trainer, names: list[str]) -> dict:
    """The member weights of every weighted ensemble among ``names``."""
    weights = {}
    for m in names:
        model = trainer.load_model(m)
        if hasattr(model, "_get_model_weights"):
            weights[m] = {k: round(float(w), 4) for k, w in model._get_model_weights().items()}
    return weights


def _not_fitted(trainer, expected: list[str], names: list[str], clock: dict) -> dict:
    """:func:`skipped_models` from what the trainer recorded."""
    failures = {k: dict(v) for k, v in getattr(trainer, "_models_failed_to_train_errors", {}).items()}
    constraint = dict(getattr(trainer, "_models_skipped_by_constraint", {}))
    return skipped_models(expected, names, failures, constraint, clock)


def _predict_time(predictor, ds, x_test, y_test, best: str) -> tuple[float, float | None]:
    """Inference time of what a user gets: the best model with its ancestors in memory, warmed up; and its test
    ROC AUC on classification tables."""
    from benchlib.p1 import roc_auc

    predictor.persist(models=[best])
    predict = predictor.predict_proba if ds.is_classification else predictor.predict
    predict(x_test.head(10))
    t1 = time.perf_counter()
    out = predict(x_test)
    predict_s = time.perf_counter() - t1
    predictor.unpersist()
    auc = roc_auc(y_test, out, predictor.positive_class if ds.task == "binary" else None) \
        if ds.is_classification else None
    return predict_s, auc


def _tree_vs_neural(ds, lb, names: list[str], preds: dict, y_test) -> dict | None:
    """Classification: the test rows where the best L1 tree (by validation) is wrong and a neural model right."""
    import numpy as np

    from benchlib.ensemble import NEURAL_FAMILIES, best_by_validation, family, stack_level, tree_wrong_neural_right

    if not ds.is_classification:
        return None
    val_scores = {m: float(lb.loc[m, "score_val"]) for m in names}
    l1 = [m for m in names if stack_level(m) == 1]
    tree = best_by_validation(val_scores, [m for m in l1 if family(m) == "GBDT"])
    neural = [m for m in l1 if family(m) in NEURAL_FAMILIES]
    if tree is None:
        return None
    return {"tree_model": tree, **tree_wrong_neural_right(
        y_test.to_numpy(), np.asarray(preds[tree]), {m: np.asarray(preds[m]) for m in neural})}


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


# ---- the run ----------------------------------------------------------------------------------------------
def run(args, out: Path) -> None:
    """Every (dataset, config) pair of ``args`` that has no ok row with these settings yet (all with ``--refit``),
    one child process each, a row appended after each."""
    settings = settings_of(args)
    ok = [r for r in read_rows(out) if r["status"] == "ok"]
    if args.refit_stale:  # done = run by the package version of this checkout
        current = code_version(out=out).get("package_commit")
        ok = [r for r in ok if version_of(r, package_repo()) == current]
    done = {result_key(r) for r in ok}
    for dataset in args.datasets.split(","):
        if not (Path(args.data_dir) / dataset / "meta.json").exists():
            print(f"skip {dataset}: not found in {args.data_dir}", file=sys.stderr)
            continue
        for config in args.configs.split(","):
            row = {"dataset": dataset, "config": config, **settings}
            if result_key(row) in done and not args.refit:
                _say(dataset, config, "done, skipped")
                continue
            _say(dataset, config, f"fitting ({args.time_limit:.0f} s budget)")
            _fit_pair(args, out, row, settings)
            _say(dataset, config, _outcome(row))


def _fit_pair(args, out: Path, row: dict, settings: dict) -> None:
    """Fit one pair in a child process and append its row (``row`` is completed in place)."""
    version = code_version(out=out)
    spec = {**row, "data_dir": str(args.data_dir)}
    (out / "logs").mkdir(exist_ok=True)
    result = run_child(spec, out / "logs" / log_name(row))
    row.update(version, ensembling=ensembling(settings), **result, finished=time.strftime("%Y-%m-%d %H:%M:%S"))
    append_row(out, row)


def _outcome(row: dict) -> str:
    if row["status"] == "ok":
        skipped = ", ".join(f"{m} ({s['reason']})" for m, s in row["skipped"].items()) or "none"
        return (f"test {row['metric']} {row['test_score']:.4f} ({row['best_model']}, {row['fit_s']} s"
                f"{', OVER TIME' if row['over_time'] else ''}); skipped: {skipped}")
    return f"FAILED: {str(row['error']).splitlines()[0][:200]}"


def _say(dataset: str, config: str, msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {dataset} / {config}: {msg}", file=sys.stderr, flush=True)


# ---- command line -----------------------------------------------------------------------------------------
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
        import autogluon_maya

        # the fits (child processes, which inherit it) start their Ray fold workers at normal priority
        autogluon_maya.ray_workers_at_normal_priority()
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
