"""Benchmark AutoGluon models under protocol P1 and report ranks, PAMA and a critical-difference diagram.

    python examples/benchmarks/benchmark.py --data-dir $AUTOGLUON_MAYA_DATASETS --models MAYA,GBM,CAT,XGB,NN_TORCH,TABM,REALMLP \
        --seeds 0,1,2 --time-limit 300 --out results/
    python examples/benchmarks/benchmark.py --quick                    # 4 small datasets, 4 models, 60 s, about 15 min on 2 cores
    python examples/benchmarks/benchmark.py --out results/ --report-only

P1 (``benchlib.protocol``): 64/16/20 train/validation/test split, stratified for
classification; the validation part is ``tuning_data``; one fit per model with
``hyperparameters={MODEL: {}}`` and no weighted ensemble.  Each fit runs in its own child process and
records test accuracy + ROC-AUC (classification) or RMSE (regression), fit time, inference time per
1,000 rows, peak memory and the code version (``commit``, ``package_commit``:
``benchlib.provenance``); a failing model is recorded with its error, never fatal.

Results are appended to ``<out>/results.jsonl``, one line per fit, keyed by (dataset, model, seed,
config hash of time limit / row cap / hyperparameters): rerunning skips what is done, so an
interrupted run resumes and several runs add up to one table.  The report (``results.md``,
``pama.png``, ``cd_diagram.png``, ``fit_time_vs_score.png``) is rebuilt from the JSONL at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from benchlib import Task
from benchlib.protocol import default_datasets_dir

DEFAULT_MODELS = "MAYA,GBM,CAT,XGB,NN_TORCH,TABM,REALMLP"
# --quick: 2 binary (one with categoricals), 1 multiclass, 1 regression, 5-8k rows each.  Estimate for
# 16 fits at 60 s on 2 cores: GBM ~10 s, CAT ~40 s, NN_TORCH ~50 s, MAYA ~60 s, plus ~10 s of process
# start-up and prediction per fit: about 15 minutes.
QUICK = {"datasets": "telco_churn,phoneme,satimage,cpu_act", "models": "MAYA,GBM,CAT,NN_TORCH", "seeds": "0",
         "time_limit": 60.0, "out": "results/quick"}
DEFAULTS = {"models": DEFAULT_MODELS, "seeds": "0", "time_limit": 300.0, "out": "results"}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()), help="folder of dataset folders")
    ap.add_argument("--datasets", help="comma-separated dataset folders (default: all in --data-dir)")
    ap.add_argument("--models", help=f"comma-separated AutoGluon model keys (default {DEFAULT_MODELS})")
    ap.add_argument("--seeds", help="comma-separated seeds (default 0)")
    ap.add_argument("--time-limit", type=float, help="seconds per model fit (default 300)")
    ap.add_argument("--max-rows", type=int, help="subsample larger datasets to this many rows "
                                                 "(seeded, stratified for classification; recorded)")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--hyperparameters", default="{}",
                    help='JSON of per-model hyperparameters, e.g. \'{"MAYA": {"hidden_size": 128}}\' (default {}); '
                         'a model named KEY@variant runs AutoGluon key KEY with the variant\'s own entry')
    ap.add_argument("--out", help="output folder (default results/, results/quick with --quick)")
    ap.add_argument("--report-dir", help="where the report goes (default: --out)")
    ap.add_argument("--quick", action="store_true", help=f"preset: {QUICK}; explicit options still win")
    ap.add_argument("--report-only", action="store_true", help="no fitting: rebuild the report from results.jsonl")
    ap.add_argument("--retry-failed", action="store_true", help="run again the keys whose last result failed")
    ap.add_argument("--redo-before", help="also fit again every key whose latest row started before this ISO time "
                                          "(e.g. 2026-12-06T07:00): a resumable rerun after a code change")
    ap.add_argument("--hard-timeout", type=float, help="kill a fit after this many seconds (default 3 x limit + 600)")
    ap.add_argument("--pama-tolerance", type=float, default=0.0,
                    help="relative tolerance for PAMA (0 = strictly the best, ties included)")
    ap.add_argument("--alpha", type=float, default=0.05, help="significance level of the CD diagram")
    args = ap.parse_args(argv)
    for name, value in {**DEFAULTS, **(QUICK if args.quick else {})}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def all_datasets(data_dir: Path) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if (p / "meta.json").exists())


def make_tasks(args) -> list[Task]:
    data_dir = Path(args.data_dir)
    datasets = args.datasets.split(",") if args.datasets else all_datasets(data_dir)
    hps = json.loads(args.hyperparameters)
    return [Task(d, m, int(s), args.time_limit, args.max_rows, hps.get(m, {}))
            for d in datasets for s in args.seeds.split(",") for m in args.models.split(",")]


def main(argv=None) -> None:
    args = parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        from benchlib.runner import run_benchmark

        run_benchmark(make_tasks(args), args.data_dir, out / "results.jsonl", num_cpus=args.num_cpus,
                      retry_failed=args.retry_failed, hard_timeout=args.hard_timeout,
                      redo_before=args.redo_before)
    from benchlib.report import write_report

    paths = write_report(out, tolerance=args.pama_tolerance, alpha=args.alpha, report_dir=args.report_dir)
    print(paths["results.md"].read_text())
    print("report:", ", ".join(str(p) for p in paths.values()), file=sys.stderr)


if __name__ == "__main__":
    main()
