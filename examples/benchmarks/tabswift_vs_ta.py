"""TABSWIFT (ours) beside TabArena's TA-TABSWIFT on the same pretrained weights, in one TabularPredictor, on CPU.

    python examples/benchmarks/tabswift_vs_ta.py [DATASETS_DIR]     # default: $AUTOGLUON_MAYA_DATASETS
    python examples/benchmarks/tabswift_vs_ta.py --size released --tables phoneme cpu_act   # 24 x 192, random weights
    python examples/benchmarks/tabswift_vs_ta.py --report-only      # rebuild the table and the plot from results.json

``--size released`` runs random weights of the released shape (24 blocks, d=192) exported the same way: time,
memory and disk only (scores mean nothing), without the early-exit variant (its heads need the shipped
checkpoint), and with our check against the prior switched off (random weights lose to it), into
``released_24x192/``.

TA-TABSWIFT is TabArena's AutoGluon wrapper (``tabarena.models.tabswift.model.TabSwiftModel``) around the
authors' inference code; it loads the authors' ``swift.ckpt`` layout from ``model_path``.  The released
``swift.ckpt`` can not be downloaded here, so the shipped checkpoint is exported once into that layout
(``autogluon_maya.tabswift.checkpoints_io.export``) and both wrappers load that one file: TA-TABSWIFT through
``model_path=``, ours through ``checkpoint_path=`` (which converts it back with ``released.py``).  Its class
table is exact in the authors' ``Linear(1, d)`` for two classes only (``binary_only``), so:
- binary and regression tables: both sides run the exported file;
- the multiclass table: ours runs the shipped checkpoint, and TA-TABSWIFT's module, after its fit, gets a
  lookup of the same class table in place of its ``y_encoder`` (the one change made to it), so both
  compute the shipped network; its validation score during fit is the unpatched module's and is not
  reported.
The shipped checkpoint's early-exit heads have no place in the authors' format, so the early-exit variants
(``tau="auto"``) load the shipped checkpoint itself: the same backbone, which on binary and regression
tables computes what the exported file computes (``plugin_tests/tabswift/test_export.py``), plus its
exit heads.

AutoGluon 1.6 applies ``minimum_num_gpus`` only when a GPU is present, so TabArena's class is fitted
unchanged on this CPU-only machine (no subclass).

Per table (protocol P1, seed 0; training rows capped at ``--train-rows`` = 2,048, which is also our default
``max_context_rows``, so both sides use the same context; validation and test rows capped too), fitted in one
``TabularPredictor`` (``num_cpus=--threads``):
- ``TA``: TA-TABSWIFT defaults (16 members, ``random_state=0``); ``TA seed 1``: the same with
  ``random_state=1`` -- how far two draws of its own ensemble lie apart, the yardstick for agreement;
- ours, zero-shot (``fine_tune=False``: the same weights as TA-TABSWIFT) in each variant: ``authors16``
  (``pipeline="authors"``, 16 members: TA's preprocessing and ensemble size), the same
  with ``tau="auto"`` (early exit, the threshold chosen on the validation rows), and ``defaults`` (our
  pipeline, 8 members).
Recorded: agreement with ``TA`` (class agreement and largest |probability difference|, or largest
|regression difference| / std of the training target), test scores, fit seconds, predict seconds per
1,000 test rows and peak memory.

- Predict calls run ``--rounds`` times, interleaved; the fastest call is kept (other jobs share the cores: noise
  only adds); the median ratio and the process CPU seconds are recorded beside it.
- ``loaded``: a ``TabularPredictor.load`` of the fitted predictor (not persisted) predicts once; AutoGluon loads
  the model from disk inside that call, as it does for every call of a predictor that is not persisted.  Ours
  reads its saved context caches with it (``disk_cache_mb``), TA-TABSWIFT encodes the context with the queries.
  ``warm``: the persisted predictor, whose model has predicted before.  ``disk MB``: the model's folder.
  ``saved caches vs fresh``: ours predicting from its saved caches (float16 block inputs) against the same model
  with its contexts encoded afresh (largest |probability difference|, or |difference| / std of the target).
- Threads: both sides run with ``--threads`` torch threads, 1 by default.  With other jobs on both cores,
  two torch threads spin-wait for each other at every parallel region (a context encoding measured here
  took 0.40-0.47 s with 2 threads and 0.22-0.26 s with 1), which would turn the comparison into one of
  scheduling luck.  Ours runs with ``adaptive_threads=False`` so that it does not pick a thread count
  of its own.
- Peak memory: the process's resident set, sampled every 5 ms during the call, minus its value when the
  call started.  Memory freed by earlier calls is returned to the system before each call
  (``malloc_trim``), so one model's leftover heap does not hide the next one's peak.  Forcing every large
  buffer through mmap instead (``mallopt``) was tried and dropped: in a quick check its page faults made
  TA-TABSWIFT's predict calls (many large temporaries) 1.6-5x slower, which would have flattered us.

Writes ``results.csv``, ``results.json``, ``results.md`` and ``speed_ratio.png`` to
``examples/benchmarks/results/tabswift_vs_ta/``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from autogluon.core.callbacks import AbstractCallback

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib.cpu_timing import PeakRSS, wall_and_cpu  # noqa: E402
from benchlib.p1 import prediction_scores  # noqa: E402
from benchlib.provenance import code_version  # noqa: E402
from benchlib.tabswift_vs_ta_report import TA, markdown, plot  # noqa: E402
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT  # noqa: E402
from autogluon_maya.tabswift.checkpoints_io.export import export_to_authors  # noqa: E402
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint  # noqa: E402

TABLES = {"phoneme": "binary", "bank_churn": "binary", "satimage": "multiclass", "cpu_act": "regression"}
OUT = REPO / "examples" / "benchmarks" / "results" / "tabswift_vs_ta"
#: our variants: (name suffix, label, hyperparameters); "file" = the exported file, "shipped" = our checkpoint
OURS = [("_authors16", "ours, pipeline='authors', 16 members", "file", {"pipeline": "authors", "n_estimators": 16}),
        ("_defaults", "ours, defaults (8 members)", "file", {}),
        ("_authors16_tau", "ours, pipeline='authors', 16 members, tau='auto'", "shipped",
         {"pipeline": "authors", "n_estimators": 16, "tau": "auto"})]


#: every variant of ours: zero-shot, so it runs the weights TA-TABSWIFT runs (the default ``fine_tune="auto"``
#: may fine-tune them on the table), and with the threads TA-TABSWIFT gets (``--threads``): by default ours
#: times 1 against all threads at fit and keeps the faster (``adaptive_threads``), which on a loaded machine
#: often means 1; turning that off keeps the comparison to the software, not to the thread count
COMMON = {"fine_tune": False, "adaptive_threads": False}


SIZES = {"shipped": "shipped checkpoint, 6 x 128", "released": "random weights, released 24 x 192"}


def random_released(path: Path) -> Path:
    """A checkpoint of the released shape (24 blocks, d=192) with seeded random weights: time and memory do not
    depend on the values."""
    from autogluon_maya.tabswift.config import RELEASED
    from autogluon_maya.tabswift.network import TabSwiftNetwork
    from autogluon_maya.tabswift.checkpoints_io.format import save_checkpoint

    torch.manual_seed(0)
    save_checkpoint(TabSwiftNetwork(RELEASED), path, metadata={"source": "tabswift_vs_ta.py --size released"})
    return path


@contextmanager
def never_the_prior(active: bool):
    """Random weights validate below the class frequencies on most tables, and a fit of ours would then predict
    the prior (``TabSwiftModel._check_against_prior``) and time nothing: with ``active`` the check never falls
    back.  Only for ``--size released``."""
    from autogluon_maya.tabswift.model import TabSwiftModel as OurModel

    if not active:
        yield
        return
    original = OurModel._prior_verdict
    OurModel._prior_verdict = lambda self, score, y_val, prior: (float("nan"), "")
    try:
        yield
    finally:
        OurModel._prior_verdict = original


class FitWindows(AbstractCallback):
    """Wall seconds and peak memory of each model's fit, its validation pass included (an AutoGluon
    callback).  The trainer pickles its callbacks with itself: the sampler and the record stay out."""

    def __init__(self, sampler: PeakRSS, record: dict):
        super().__init__()
        self.sampler, self.record = sampler, record

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("sampler", "record")}

    def _before_model_fit(self, trainer, model, time_limit=None, stack_name="core", level=1):
        self._t0 = time.perf_counter()
        self.sampler.start()
        return False, False

    def _after_model_fit(self, trainer, model_names, stack_name="core", level=1):
        mb, seconds = self.sampler.stop(), time.perf_counter() - self._t0
        for name in model_names:
            self.record[name] = {"fit_window_s": round(seconds, 2), "fit_peak_mb": round(mb, 1)}
        return False


# ---- data and scores ---------------------------------------------------------------------------------------
def cap(df: pd.DataFrame, n: int, target: str, classification: bool, seed: int) -> pd.DataFrame:
    """At most ``n`` rows, stratified by class for classification, seeded."""
    if len(df) <= n:
        return df
    from sklearn.model_selection import train_test_split

    kept, _ = train_test_split(df, train_size=n, random_state=seed, stratify=df[target] if classification else None)
    return kept


def agreement(task: str, ours, theirs, y_std: float) -> dict:
    if task == "regression":
        d = np.abs(np.asarray(ours, float) - np.asarray(theirs, float))
        return {"max_abs_diff": float(d.max()), "max_diff_over_y_std": float(d.max() / y_std),
                "mean_diff_over_y_std": float(d.mean() / y_std)}
    a, b = ours.to_numpy(float), theirs.to_numpy(float)
    d = np.abs(a - b)
    return {"class_agreement": float(np.mean(a.argmax(1) == b.argmax(1))), "max_abs_diff": float(d.max()),
            "mean_abs_diff": float(d.mean())}


# ---- one table ---------------------------------------------------------------------------------------------
def model_dir_mb(predictor, model: str) -> float:
    folder = Path(predictor.path) / "models" / model
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2 ** 20, 2)


@contextmanager
def patched_ta_load(table: torch.Tensor, multiclass: bool):
    """TA-TABSWIFT models loaded from disk get the class-table lookup their in-memory copies got (module docstring)."""
    from tabarena.models.tabswift.model import TabSwiftModel as TAModel

    if not multiclass:
        yield
        return
    from tabswift_vs_authors import ClassTable

    own = TAModel.__dict__.get("load")  # None: inherited
    original = TAModel.load  # bound to TAModel: AutoGluon loads by the class it pickled

    def load(cls, *a, **kw):
        obj = original(*a, **kw)
        obj.model.model_.icl_predictor.y_encoder = ClassTable(table)
        return obj

    TAModel.load = classmethod(load)
    try:
        yield
    finally:
        if own is None:
            del TAModel.load
        else:
            TAModel.load = own


def run_table(name: str, args, exported: Path, base: Path, table: torch.Tensor, sampler: PeakRSS, workdir: Path,
              log) -> list:
    from autogluon.tabular import TabularPredictor
    from tabarena.models.tabswift.model import TabSwiftModel as TAModel

    from benchlib.p1 import p1_data
    from autogluon_maya.tabswift.model import TabSwiftModel as OurModel

    data = p1_data(args.data / name, seed=args.seed)
    task, target = data.task, data.target
    classification = task != "regression"
    train = cap(data.train, args.train_rows, target, classification, args.seed)
    val = cap(data.val, args.val_rows, target, classification, args.seed)
    test = cap(data.test, args.test_rows, target, classification, args.seed)
    sizes = {"p1_train": len(data.train), "p1_val": len(data.val), "p1_test": len(data.test),
             "train_rows": len(train), "val_rows": len(val), "test_rows": len(test),
             "features": data.train.shape[1] - 1}
    multiclass = task == "multiclass"
    # one file for both sides on binary / regression; the multiclass table runs the shipped network (docstring)
    ours_file = base if multiclass else exported
    variants = [v for v in OURS if v[2] == "file" or base == SHIPPED_CHECKPOINT]  # exit heads: shipped only
    hp = {TAModel: [{"model_path": str(exported)},
                    {"model_path": str(exported), "random_state": 1, "ag_args": {"name_suffix": "_seed1"}}],
          "TABSWIFT": [{"checkpoint_path": str(ours_file if src == "file" else SHIPPED_CHECKPOINT), **COMMON,
                        **h, "ag_args": {"name_suffix": suffix}} for suffix, _, src, h in variants]}
    fit_record: dict = {}
    predictor = TabularPredictor(label=target, problem_type=task, eval_metric=data.metric, path=str(workdir / name),
                                 verbosity=args.verbosity)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the authors' autocast(device_type="cuda") warns on every CPU forward
        predictor.fit(train, tuning_data=val, hyperparameters=hp, fit_weighted_ensemble=False,
                      raise_on_model_failure=True, num_cpus=args.threads, num_gpus=0,
                      callbacks=[FitWindows(sampler, fit_record)])
    log(f"  fitted {len(predictor.model_names())} models in {time.perf_counter() - t0:.0f} s")
    board = predictor.leaderboard(silent=True).set_index("model")
    predictor.persist(models="all")
    models = {m: predictor._trainer.load_model(m) for m in predictor.model_names()}
    if multiclass:
        from tabswift_vs_authors import ClassTable

        for m, obj in models.items():
            if m.startswith(TA):
                obj.model.model_.icl_predictor.y_encoder = ClassTable(table)

    x_test, y_test = test.drop(columns=[target]), test[target]
    y_std = float(train[target].std(ddof=0)) if not classification else 1.0
    outputs, loaded_outputs = {}, {}
    timing = {m: {k: [] for k in ("loaded", "warm", "loaded_cpu", "warm_cpu", "loaded_peak_mb", "warm_peak_mb")}
              for m in models}

    def call(p, m):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if classification:
                return p.predict_proba(x_test, model=m)
            return p.predict(x_test, model=m)

    order = [m for m in models if not m.endswith("_seed1")]
    for r in range(args.rounds):
        for m in (order if r % 2 == 0 else order[::-1]):  # alternate the order: load drifts on a shared machine
            for kind in ("loaded", "warm"):
                # loaded: a predictor read from disk, not persisted, predicting once (AutoGluon loads the model
                # inside the call); warm: the persisted predictor, whose model has predicted before
                p = TabularPredictor.load(predictor.path, verbosity=0) if kind == "loaded" else predictor
                rec: dict = {}
                with patched_ta_load(table, multiclass), sampler.window(rec, "mb"):
                    out, seconds, cpu = wall_and_cpu(partial(call, p, m))
                timing[m][kind].append(seconds)
                timing[m][f"{kind}_cpu"].append(cpu)
                timing[m][f"{kind}_peak_mb"].append(rec["mb"])
                (loaded_outputs if kind == "loaded" else outputs).setdefault(m, out)
                del p
        log(f"  predict round {r + 1}/{args.rounds}: " + ", ".join(
            f"{m} {timing[m]['loaded'][-1]:.1f}/{timing[m]['warm'][-1]:.1f} s" for m in order))
    for m in models:
        if m not in outputs:  # the yardstick: predictions only
            outputs[m] = call(predictor, m)
    fresh = {}  # ours with its contexts encoded afresh in float32, beside the caches it saved (float16 inputs)
    for m in order:
        if isinstance(models[m], OurModel):
            models[m].model.clear_cache()
            fresh[m] = call(predictor, m)

    rows = []
    labels = {TA: "TA-TABSWIFT defaults (16 members, random_state=0)",
              f"{TA}_seed1": "TA-TABSWIFT defaults, random_state=1"}
    labels.update({f"TabSwift{s}": label for s, label, _, _ in variants})
    weights = {f"TabSwift{s}": ("our checkpoint" if src == "shipped" or multiclass else "exported file")
               for s, _, src, _ in variants}
    weights.update({TA: "exported file" + (" + class table" if multiclass else ""),
                    f"{TA}_seed1": "exported file" + (" + class table" if multiclass else "")})
    ta_t = timing[TA]
    positive = predictor.positive_class if task == "binary" else None
    for m in models:
        out = outputs[m]
        pred = predictor.predict_from_proba(out) if classification else out
        row = {"table": name, "task": task, **sizes, "model": m, "variant": labels.get(m, m), "weights": weights[m],
               **{f"score_{k}": v for k, v in prediction_scores(task, y_test, pred, out if classification else None,
                                                          positive).items()},
               **({} if m == TA else {f"vs_ta_{k}": v for k, v in agreement(task, out, outputs[TA], y_std).items()}),
               "fit_s": round(float(board.loc[m, "fit_time"]), 2),
               "val_predict_s": round(float(board.loc[m, "pred_time_val"]), 2),
               "disk_mb": model_dir_mb(predictor, m),
               **fit_record.get(m, {})}
        t = timing[m]
        if t["loaded"]:
            ours, reg = isinstance(models[m], OurModel), task == "regression"
            row.update({f"predict_{k}_s_per_1k": round(1000 * min(t[k]) / len(test), 3)
                        for k in ("loaded", "warm", "loaded_cpu", "warm_cpu")})
            row.update({"predict_calls_s": {k: [round(x, 2) for x in t[k]]
                                            for k in ("loaded", "warm", "loaded_cpu", "warm_cpu")},
                        "predict_loaded_peak_mb": max(t["loaded_peak_mb"]),
                        "predict_warm_peak_mb": max(t["warm_peak_mb"]),
                        "threads": args.threads})
            if ours:
                diff = agreement(task, loaded_outputs[m], fresh[m], y_std)
                row["saved_vs_fresh_max_diff"] = diff["max_diff_over_y_std" if reg else "max_abs_diff"]
            if m != TA:
                for k in ("loaded", "warm"):
                    row[f"speed_ratio_{k}"] = round(min(ta_t[k]) / min(t[k]), 3)
                    row[f"speed_ratio_{k}_median"] = round(float(np.median(ta_t[k]) / np.median(t[k])), 3)
                    row[f"cpu_ratio_{k}"] = round(min(ta_t[f"{k}_cpu"]) / min(t[f"{k}_cpu"]), 3)
                    peak, ta_peak = max(t[f"{k}_peak_mb"]), max(ta_t[f"{k}_peak_mb"])
                    row[f"memory_ratio_{k}"] = round(ta_peak / peak, 3) if peak > 0 else None
        if isinstance(models[m], OurModel):
            ens = models[m].model
            info = models[m]._fit_summary or {}
            row.update({"tau": ens.tau, "members": len(ens.members_), "context_rows": len(ens.y_context_),
                        "fine_tuned": bool(info.get("best_step", 0)),
                        "mean_exit_layer_test": round(ens.last_mean_exit_layer, 3) if ens.tau is not None else None,
                        "layers": ens.network.config.n_layers, "tau_table": info.get("tau_table")})
        rows.append(row)
    return rows



def main(argv=None) -> int:
    from benchlib.protocol import default_datasets_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, nargs="?", default=default_datasets_dir(),
                        help="datasets folder (<name>/data.csv.gz + meta.json; default: %(default)s)")
    parser.add_argument("--tables", nargs="*", default=list(TABLES))
    parser.add_argument("--train-rows", type=int, default=2048)
    parser.add_argument("--val-rows", type=int, default=512)
    parser.add_argument("--test-rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2, help="predict calls per model and kind (minimum kept)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch threads, both sides")
    parser.add_argument("--verbosity", type=int, default=0)
    parser.add_argument("--size", choices=SIZES, default="shipped",
                        help="shipped: the shipped checkpoint; released: random weights of the released 24 x 192 shape "
                             "(speed and memory only; written to --out/released_24x192)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--report-only", action="store_true",
                        help="rebuild results.md and speed_ratio.png from --out/results.json, fit nothing")
    args = parser.parse_args(argv)
    if args.size == "released":
        args.out = args.out / "released_24x192"
    if args.report_only:
        rows = json.loads((args.out / "results.json").read_text())["rows"]
        (args.out / "results.md").write_text(markdown(rows) + "\n")
        plot(rows, args.out / "speed_ratio.png", SIZES[args.size])
        return 0
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    sampler = PeakRSS()
    t_start = time.time()

    def log(msg):
        print(f"[{time.time() - t_start:6.0f} s] {msg}", flush=True)

    rows = []
    cache_before = os.environ.get("AUTOGLUON_MAYA_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # our converted copy of the exported file goes to this run's folder, not the user's cache
        os.environ["AUTOGLUON_MAYA_CACHE"] = str(tmp / "cache")
        try:
            base = SHIPPED_CHECKPOINT if args.size == "shipped" else random_released(tmp / "random_released")
            report = export_to_authors(base, tmp / "swift.ckpt", binary_only=True)
            table = load_checkpoint(base).state_dict()["label_encoders.classes.weight"]
            log(f"exported {base.name} to {report.path.name} (class encoder: {report.class_encoding})")
            with never_the_prior(args.size == "released"):
                for name in args.tables:
                    log(f"{name}")
                    rows += run_table(name, args, report.path, base, table, sampler, tmp / "ag", log)
                pd.DataFrame(rows).to_csv(args.out / "results.csv", index=False)  # partial results survive a crash
        finally:  # the caller's cache setting back: a cache inside a deleted folder would outlive the run
            if cache_before is None:
                os.environ.pop("AUTOGLUON_MAYA_CACHE", None)
            else:
                os.environ["AUTOGLUON_MAYA_CACHE"] = cache_before
    info = {"command": "python examples/benchmarks/tabswift_vs_ta.py " + " ".join(sys.argv[1:]),
            **code_version(),
            "weights": (f"shipped {SHIPPED_CHECKPOINT.name}" if args.size == "shipped" else
                        "random weights of the released shape (torch.manual_seed(0))")
                       + ", exported with binary_only=True",
            "export": {"config": report.config, "class_encoding": report.class_encoding,
                       "class_line_max_error": report.class_line_max_error,
                       "class_line_unexplained": report.class_line_unexplained,
                       "dropped_exit_tensors": len(report.dropped)},
            "caps": {"train_rows": args.train_rows, "val_rows": args.val_rows, "test_rows": args.test_rows},
            "seed": args.seed, "threads": args.threads, "rounds": args.rounds, "cpu_count": os.cpu_count(),
            "load_average_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "torch": torch.__version__, "python": platform.python_version(),
            "wall_seconds": round(time.time() - t_start, 1), "rows": rows}
    try:
        import autogluon.tabular
        import tabarena

        info.update(autogluon=autogluon.tabular.__version__, tabarena=getattr(tabarena, "__version__", None))
    except ImportError:
        pass
    (args.out / "results.json").write_text(json.dumps(info, indent=1, default=str))
    pd.DataFrame(rows).drop(columns=["tau_table", "predict_calls_s"], errors="ignore").to_csv(
        args.out / "results.csv", index=False)
    (args.out / "results.md").write_text(markdown(rows) + "\n")
    plot(rows, args.out / "speed_ratio.png", SIZES[args.size])
    print(markdown(rows))
    log("done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
