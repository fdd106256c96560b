"""The GPU paths, checked in one run (``examples/benchmarks/gpu_check.sh``; ~8 min on one GPU, ~1 min with ``--cpu``).

Each check records its numbers in ``<out>/results.json`` (and a table in ``results.md``):

1. ``maya_bf16``: MAYA fitted on the GPU (bf16 autocast) and on the CPU (fp32), same split and
   settings: test scores and fit times side by side, and for each side the dtypes of the outputs of the
   linear layers run in training mode (``training_linear_outputs``, counts by dtype): the evidence that
   the GPU side trained in bf16 and the CPU side in fp32.
2. ``tabswift_bf16``: TabSwift in the RELEASED size (24 x 192, random weights: the comparison is of
   arithmetic, not of accuracy) predicting the same rows on the GPU (bf16) and the CPU (fp32):
   max |delta| of the probabilities.
3. ``hpo``: a 4-trial (``--cpu``: 2) Ray Tune search of MAYA with ``num_gpus=0.25`` per trial (4 trials share one GPU).
4. ``ray_train_ddp``: 50 steps of TabSwift pretraining through Ray Train's DDP on one GPU worker.
5. ``reload_without_cuda``: the predictor fitted on the GPU in check 1, loaded in a fresh process with
   ``CUDA_VISIBLE_DEVICES=""``: its predictions against the fitting process's (max |delta|).

``--cpu`` runs every check end to end on the CPU with tiny sizes, so the script is exercised by the
default test suite and cannot rot unnoticed, and gives each check something that can fail: the "GPU"
side of checks 1 and 2 runs with the package's bf16 autocast turned on for the CPU (the regions it runs
in bf16 on CUDA, ``common.training.BF16_AUTOCAST``), so a dtype mismatch on the bf16 path fails here
too and the two sides really differ; check 5 first rewrites the predictor's pickle as a GPU process
writes it -- every tensor recorded on ``cuda:0``, ``cuda`` as the training device -- so the CPU-only
child has to map them to the CPU.  A check that raises is recorded with its error and the script exits
with status 1 after running the others.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import pandas as pd

import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
from benchlib.protocol import Dataset, default_datasets_dir, load_dataset, p1_metric, p1_split

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: plugin_tests
from plugin_tests.resources import pickle_as_if_on_cuda  # noqa: E402

SIZES = {  # (gpu run, --cpu run)
    "rows": (6000, 300),
    "maya_time_limit": (75, None),  # --cpu: max_epochs bounds the tiny fit
    # --cpu compares two CPU fits bit for bit: a fixed thread count (adaptive threads may differ between them)
    "maya_hp": ({}, {"max_epochs": 2, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "adaptive_threads": False}),
    "tabswift_context": (2048, 64),
    "tabswift_queries": (1000, 32),
    "hpo_trials": (4, 2),
    "hpo_time_limit": (120, None),  # --cpu: 2 tiny trials
    "ddp_steps": (50, 3),
}


def size(name, cpu):
    return SIZES[name][1 if cpu else 0]


def load_table(data: str | None, rows: int) -> Dataset:
    if data is None:
        candidate = default_datasets_dir() / "phoneme"
        data = str(candidate) if candidate.is_dir() else None
    if data is None:  # scikit-learn's breast cancer table ships with scikit-learn
        from sklearn.datasets import load_breast_cancer

        frame = load_breast_cancer(as_frame=True).frame
        return Dataset("breast_cancer", frame.sample(n=min(rows, len(frame)), random_state=0), "target", "binary")
    return load_dataset(data, max_rows=rows, seed=0)


@contextlib.contextmanager
def gpu_side(cpu: bool):
    """The context of a check's "GPU" side: nothing extra on a GPU; with ``--cpu``, the package's bf16
    autocast turned on for the CPU, so the regions it runs in bf16 on CUDA run in bf16 here too."""
    from autogluon_maya.common import training

    before = training.BF16_AUTOCAST["cpu"]
    training.BF16_AUTOCAST["cpu"] = before or cpu
    try:
        yield
    finally:
        training.BF16_AUTOCAST["cpu"] = before


@contextlib.contextmanager
def training_linear_dtypes():
    """Counts, by dtype, the outputs of every ``nn.Linear`` called in training mode while the block runs (a
    global forward hook, so it sees the model's own layers without reaching into it).  A fit in this process
    trains in bf16 exactly when its training forward passes give ``bfloat16`` here."""
    import collections

    import torch

    counts = collections.Counter()

    def hook(module, args, output):
        if module.training and isinstance(module, torch.nn.Linear) and isinstance(output, torch.Tensor):
            counts[str(output.dtype).removeprefix("torch.")] += 1

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    try:
        yield counts
    finally:
        handle.remove()


def _fit(train, val, ds, path, hp, time_limit, num_gpus):
    from autogluon.tabular import TabularPredictor

    t0 = time.time()
    pred = TabularPredictor(label=ds.target, problem_type=ds.task, eval_metric=p1_metric(ds.task), path=path,
                            verbosity=1).fit(train, tuning_data=val, hyperparameters={"MAYA": hp},
                                             time_limit=time_limit, num_gpus=num_gpus, fit_weighted_ensemble=False,
                                             raise_on_model_failure=True)
    return pred, time.time() - t0


def check_maya_bf16(ctx):
    """MAYA on the GPU (bf16 autocast) vs on the CPU (fp32)."""
    ds, cpu = ctx["ds"], ctx["cpu"]
    train, val, test = p1_split(ds, seed=0)
    out = {"dataset": ds.name, "train_rows": len(train)}
    for side, gpus in (("gpu_bf16", 0 if cpu else 1), ("cpu_fp32", 0)):
        path = str(ctx["work"] / f"maya_{side}")
        bf16 = gpu_side(cpu) if side == "gpu_bf16" else contextlib.nullcontext()
        with bf16, training_linear_dtypes() as dtypes:
            pred, seconds = _fit(train, val, ds, path, size("maya_hp", cpu), size("maya_time_limit", cpu), gpus)
        model = pred._trainer.load_model("Maya")
        out[side] = {"test_score": float(pred.evaluate(test, silent=True)[p1_metric(ds.task)]),
                     "fit_s": round(seconds, 1), "device": model.device_train, "epochs": model._fit_summary["epochs"],
                     "training_linear_outputs": dict(dtypes)}
        if side == "gpu_bf16":
            ctx["gpu_predictor"], ctx["test"] = path, test.drop(columns=ds.target)
            ctx["gpu_proba"] = pred.predict_proba(ctx["test"], as_multiclass=False).to_numpy()
    out["score_delta_gpu_minus_cpu"] = out["gpu_bf16"]["test_score"] - out["cpu_fp32"]["test_score"]
    return out


def check_tabswift_bf16(ctx):
    """RELEASED-size TabSwift, same rows predicted on the GPU (bf16) and the CPU (fp32)."""
    import torch

    from autogluon_maya import TabSwiftModel
    from autogluon_maya.tabswift.config import RELEASED, TINY
    from autogluon_maya.tabswift.network import TabSwiftNetwork
    from autogluon_maya.tabswift.checkpoints_io.format import save_checkpoint

    cpu, ds = ctx["cpu"], ctx["ds"]
    config = TINY if cpu else RELEASED
    torch.manual_seed(0)
    ckpt = ctx["work"] / "released_random"
    save_checkpoint(TabSwiftNetwork(config), ckpt, metadata={"note": "gpu_check: random weights"})
    rows = ds.data.sample(n=min(len(ds.data), size("tabswift_context", cpu) + size("tabswift_queries", cpu)),
                          random_state=1)
    X, y = rows.drop(columns=ds.target), rows[ds.target]
    n_ctx = len(rows) - size("tabswift_queries", cpu)
    problem = ds.task
    probas = {}
    for side, gpus in (("gpu_bf16", 0 if cpu else 1), ("cpu_fp32", 0)):
        model = TabSwiftModel(path=str(ctx["work"] / f"ts_{side}"), name="ts", problem_type=problem,
                              eval_metric=p1_metric(ds.task),
                              hyperparameters={"checkpoint_path": str(ckpt), "n_estimators": 2,
                                               "max_context_rows": n_ctx})
        y_fit = y.iloc[:n_ctx]
        if problem != "regression":
            y_fit = pd.Series(pd.Categorical(y_fit).codes, index=y_fit.index)
        model.fit(X=X.iloc[:n_ctx], y=y_fit, num_gpus=gpus, num_cpus=os.cpu_count())
        with gpu_side(cpu) if side == "gpu_bf16" else contextlib.nullcontext():
            t0 = time.time()
            probas[side] = np.asarray(model.predict_proba(X.iloc[n_ctx:]), dtype=np.float64)
            probas[side + "_predict_s"] = time.time() - t0
            model.model.clear_cache()
            model.model.tau = 0.5  # early exit: the per-layer heads' outputs take the same path
            probas[side + "_exit"] = np.asarray(model.predict_proba(X.iloc[n_ctx:]), dtype=np.float64)
    delta = np.abs(probas["gpu_bf16"] - probas["cpu_fp32"])
    delta_exit = np.abs(probas["gpu_bf16_exit"] - probas["cpu_fp32_exit"])
    return {"config": f"{config.n_layers}x{config.d_model}", "context_rows": n_ctx,
            "queries": size("tabswift_queries", cpu), "max_abs_delta": float(delta.max()),
            "mean_abs_delta": float(delta.mean()), "max_abs_delta_tau_0.5": float(delta_exit.max()),
            "predict_s_gpu": round(probas["gpu_bf16_predict_s"], 2),
            "predict_s_cpu": round(probas["cpu_fp32_predict_s"], 2)}


def check_hpo(ctx):
    """A 4-trial Ray Tune search of MAYA, 0.25 GPU per trial."""
    from autogluon.common import space
    from autogluon.tabular import TabularPredictor

    cpu, ds = ctx["cpu"], ctx["ds"]
    train, val, _ = p1_split(ds, seed=0)
    hp = {**size("maya_hp", cpu), "learning_rate": space.Real(3e-4, 3e-3, log=True),
          "dropout": space.Categorical(0.0, 0.1)}
    if not cpu:  # AutoGluon 1.6.3 divides by num_gpus with HPO: pass it only when it is not 0
        hp["ag_args_fit"] = {"num_gpus": 0.25}
    t0 = time.time()
    pred = TabularPredictor(label=ds.target, problem_type=ds.task, path=str(ctx["work"] / "hpo"), verbosity=1).fit(
        train, tuning_data=val, hyperparameters={"MAYA": hp}, time_limit=size("hpo_time_limit", cpu),
        hyperparameter_tune_kwargs={"num_trials": size("hpo_trials", cpu), "scheduler": "local",
                                    "searcher": "random"},
        num_gpus=0 if cpu else 1, fit_weighted_ensemble=False)
    trials = [m for m in pred.model_names() if m.startswith("Maya")]
    info = pred.info()["model_info"]
    return {"trials_finished": len(trials), "seconds": round(time.time() - t0, 1),
            "num_gpus_per_trial": None if cpu else 0.25,
            "val_scores": {m: info[m]["val_score"] for m in trials},
            "devices": sorted({str(pred._trainer.load_model(m).device_train) for m in trials})}


def check_ray_train_ddp(ctx):
    """Pretraining steps through Ray Train's TorchTrainer (DDP) with one GPU worker."""
    import torch

    from autogluon_maya.pretraining.config import PretrainConfig
    from autogluon_maya.pretraining.distributed import train_with_ray
    from autogluon_maya.pretraining.trainer import STATE_FILE

    cpu = ctx["cpu"]
    steps = size("ddp_steps", cpu)
    cfg = PretrainConfig(out_dir=str(ctx["work"] / "ddp"), model="tiny" if cpu else "small", prior="random_mlp",
                         steps=steps, batch_size=4 if cpu else 16, rows=48 if cpu else 256, num_workers=0,
                         threads=1, log_every=max(1, steps // 5), checkpoint_every=10_000)
    t0 = time.time()
    result = train_with_ray(cfg, num_workers=1, use_gpu=not cpu)
    if result.error is not None:
        raise RuntimeError(f"Ray Train run failed: {result.error}")
    state = torch.load(Path(cfg.out_dir) / STATE_FILE, weights_only=True)
    return {"steps_done": int(state["counters"]["step"]), "steps_asked": steps, "seconds": round(time.time() - t0, 1),
            "gpu": not cpu}


RELOAD_CHILD = """
import pickle, sys
import numpy as np
from autogluon.tabular import TabularPredictor
pred = TabularPredictor.load(sys.argv[1], verbosity=0, require_py_version_match=False)
X = pickle.load(open(sys.argv[2], "rb"))
np.save(sys.argv[3], pred.predict_proba(X, as_multiclass=False).to_numpy())
print(pred._trainer.load_model("Maya").get_device())
"""


def check_reload_without_cuda(ctx):
    """The GPU-fitted predictor of check 1, loaded in a fresh process that sees no GPU."""
    import pickle

    if "gpu_predictor" not in ctx:
        raise RuntimeError("needs the predictor fitted by maya_bf16, which did not finish")
    work = ctx["work"]
    storages = None  # torch storages in the pickle: none, MAYA's weights are saved apart (module.safetensors)
    if ctx["cpu"]:  # make the CPU-fitted pickles what a GPU fit writes
        pkl = Path(ctx["gpu_predictor"]) / "models" / "Maya" / "model.pkl"
        model = pickle.loads(pkl.read_bytes())
        model.device_train = model.device = "cuda"
        data, storages = pickle_as_if_on_cuda(model)
        pkl.write_bytes(data)
    (work / "reload_X.pkl").write_bytes(pickle.dumps(ctx["test"]))
    (work / "reload_child.py").write_text(RELOAD_CHILD)
    proc = subprocess.run([sys.executable, str(work / "reload_child.py"), ctx["gpu_predictor"],
                           str(work / "reload_X.pkl"), str(work / "reload_proba.npy")],
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    delta = np.abs(np.load(work / "reload_proba.npy") - ctx["gpu_proba"])
    weights = Path(ctx["gpu_predictor"]) / "models" / "Maya" / "module.safetensors"
    return {"device_after_load": proc.stdout.strip().splitlines()[-1], "max_abs_delta": float(delta.max()),
            "rows": len(ctx["test"]), "storages_in_pickle": storages, "weights_saved_apart": weights.is_file()}


CHECKS = [check_maya_bf16, check_tabswift_bf16, check_hpo, check_ray_train_ddp, check_reload_without_cuda]


def write_report(out: Path, results: dict):
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=2, default=str))
    lines = [f"# GPU check ({results['mode']})", "", f"- {results['environment']}", "",
             "| check | status | seconds | result |", "|---|---|---:|---|"]
    for name, r in results["checks"].items():
        body = r.get("error", "").splitlines()[-1] if r["status"] == "error" else json.dumps(r.get("result"), default=str)
        lines.append(f"| {name} | {r['status']} | {r['seconds']} | {body} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="examples/benchmarks/results/gpu_check", help="results folder")
    ap.add_argument("--cpu", action="store_true", help="run every check on the CPU with tiny sizes")
    ap.add_argument("--data", help="dataset folder or CSV (default: phoneme from the shared datasets, else "
                                   "scikit-learn's breast cancer)")
    ap.add_argument("--only", help="comma-separated check names (default: all)")
    args = ap.parse_args(argv)

    import torch

    if not args.cpu and not torch.cuda.is_available():
        print("no CUDA device: run with --cpu for the CPU smoke run", file=sys.stderr)
        return 2
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    ctx = {"cpu": args.cpu, "work": Path(tempfile.mkdtemp(prefix="gpu_check_")),
           "ds": load_table(args.data, size("rows", args.cpu))}
    env = (f"torch {torch.__version__}, device "
           f"{'cpu' if args.cpu else torch.cuda.get_device_name(0)}, {os.cpu_count()} CPUs, dataset {ctx['ds'].name}")
    results = {"mode": "cpu smoke run (--cpu)" if args.cpu else "gpu", "environment": env, "checks": {}}
    only = set(args.only.split(",")) if args.only else None
    failed = False
    for check in CHECKS:
        name = check.__name__.removeprefix("check_")
        if only and name not in only:
            continue
        t0 = time.time()
        try:
            results["checks"][name] = {"status": "ok", "result": check(ctx)}
        except Exception:  # record and go on: one broken path must not hide the others
            failed = True
            results["checks"][name] = {"status": "error", "error": traceback.format_exc()}
        results["checks"][name]["seconds"] = round(time.time() - t0, 1)
        print(f"{name}: {results['checks'][name]['status']} ({results['checks'][name]['seconds']} s)", flush=True)
        write_report(Path(args.out), results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
