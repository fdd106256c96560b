"""MAYA training speed, this checkout against an earlier commit, side by side in one run.

    python examples/benchmarks/maya_speed_compare.py --baseline 172ea17 --data $AUTOGLUON_MAYA_DATASETS/california_housing

Each version trains in its own child process (the baseline's package is unpacked from git into a temp
folder and put first on ``PYTHONPATH``) with the same hyperparameters, the same rows and the same seed;
the versions alternate ``--repeats`` times so that load from other processes hits both alike.  Reported:
training rows per wall-clock second and per CPU second (CPU time is the fairer figure on a shared
machine), their ratios, and a torch profile of 10 training steps of each version.  Writes
``speed.json``, ``speed.md`` and ``profile_<version>.txt`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]

# runs inside the child, against whichever ``autogluon_maya`` is first on the path
# the child's set-up: the same rows, network and loss for every version (maya_under_load.py reuses it)
CHILD_SETUP = r"""
import json, sys, time, torch, numpy as np
from autogluon_maya.common.preprocessing import TabularEncoder, TargetScaler
from benchlib.protocol import load_dataset, p1_split
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import FittedMaya, make_loss, train_maya
import inspect
if "x_num" not in inspect.signature(train_maya).parameters:  # a version whose trainer takes TrainData / TrainConfig
    from autogluon_maya.maya.trainer import TrainConfig, TrainData
    _train_maya = train_maya
    def train_maya(fitted, *, x_num, x_cat, y_label, y_target, sample_weight, budget, val_score_fn=None, **cfg):
        return _train_maya(fitted, TrainData(x_num, x_cat, y_label, y_target, sample_weight), TrainConfig(**cfg),
                           budget, val_score_fn=val_score_fn)
args = json.loads(sys.argv[1])
torch.set_num_threads(args["threads"]); torch.manual_seed(0)
# a process's first optimizer imports torch._dynamo (~2-3 s here, once per process, for any version):
# done before the timed run so that short runs time training, not that import
torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))])
ds = load_dataset(args["data"]); train, _, _ = p1_split(ds, 0)
X, y = train.drop(columns=[ds.target]), train[ds.target]
enc = TabularEncoder().fit(X); t = enc.transform(X)
if ds.is_classification:
    yl = y.astype("category").cat.codes.to_numpy().astype(np.int64); kind, out = "class", int(yl.max()) + 1
else:
    yl = TargetScaler(y).transform(y).astype(np.float32); kind, out = "real", 1
# A version with one table of defaults (defaults.resolve_defaults) checks every setting and reads all of them:
# the table's for this problem type, then the shared settings, then the ones only such a version takes.  An older
# version reads the settings it is given, its own defaults for the rest, and takes the old-only ones.
try:
    from autogluon_maya.maya.defaults import check_params, resolve_defaults
except ImportError:
    p = {**args["params"], **args["old_params"]}
else:
    p = check_params({**resolve_defaults(ds.task), **args["params"], **args["table_params"]})
try:  # a version whose network takes every setting from its caller (no defaults of its own)
    from autogluon_maya.maya.network import NETWORK_KEYS, training_bins
except ImportError:
    net_kw = {k: p[k] for k in ("hidden_size", "num_heads", "num_branch", "num_layers", "intermediate_factor",
                                "dropout", "num_decoder_layers", "decoder_dropout")}
else:
    net_kw = {k: p[k] for k in NETWORK_KEYS}
    if p["num_embeddings"] == "piecewise" and t.x_num.shape[1]:
        net_kw["num_bins"] = training_bins(torch.from_numpy(t.x_num) * p["numeric_scale"])
net = MayaNetwork(t.x_num.shape[1], enc.cat_cardinalities, out, kind, out if kind == "class" else 0, **net_kw)
x_num, x_cat, y_t = torch.from_numpy(t.x_num), torch.from_numpy(t.x_cat), torch.from_numpy(yl)
loss_fn = make_loss(kind)
"""

# runs inside the child, after the set-up
CHILD = CHILD_SETUP + r"""
if args.get("profile"):
    from torch.profiler import profile, ProfilerActivity
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    b = p["batch_size"]
    def step(i):
        idx = torch.arange(i * b, (i + 1) * b)
        out, br = net.forward_train(x_num[idx], x_cat[idx], y_t[idx], return_branches=True)
        loss = loss_fn(out, y_t[idx]).mean(); opt.zero_grad(); loss.backward(); opt.step()
        net.update_branch_weights(br, lambda q: loss_fn(q, y_t[idx]).mean(), 0.9)
    for i in range(3): step(i)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i in range(10): step(i)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))
    sys.exit(0)
val_score_fn = None
if args.get("validation"):  # score P1's validation rows as a fit does, under each version's own policy
    _, val, _ = p1_split(ds, 0)
    tv = enc.transform(val.drop(columns=[ds.target]))
    vx_num, vx_cat = torch.from_numpy(tv.x_num), torch.from_numpy(tv.x_cat)
    vy = TargetScaler(y).transform(val[ds.target].to_numpy())  # once, outside the timed passes
    def val_score_fn(f):
        raw = f.predict_raw(vx_num, vx_cat, 1024)
        return -float(np.mean((raw.view(-1).numpy() - vy) ** 2))
w0, c0 = time.perf_counter(), time.process_time()
s = train_maya(FittedMaya(net), x_num=x_num, x_cat=x_cat, y_label=y_t, y_target=y_t, sample_weight=None,
               loss_fn=loss_fn, params=p, device=torch.device("cpu"), budget=TimeBudget(None), seed=0,
               val_score_fn=val_score_fn, max_epochs=args["epochs"])
wall, cpu = time.perf_counter() - w0, time.process_time() - c0
rows = s["epochs"] * len(x_num)
import autogluon_maya
print(json.dumps({"rows": rows, "wall_s": wall, "cpu_s": cpu, "module": autogluon_maya.__file__}))
"""

PARAMS = {  # 172ea17's default size (two MBA blocks; the default is one since fe3b6f5, ``--num-layers 1``),
    # with the batch size written out so that both versions use 256 rows
    "hidden_size": 64, "num_heads": 4, "num_branch": 2, "num_layers": 2, "intermediate_factor": 2.0,
    "dropout": 0.1, "num_decoder_layers": 1, "decoder_dropout": 0.1, "learning_rate": 1e-3,
    "weight_decay": 1e-5, "batch_size": 256, "patience": None,
    "use_branch_weights": True, "branch_momentum": 0.9,
}
# Both versions train at a constant learning rate with no weight average.  A version before the table of defaults
# (172ea17) takes lr_scheduler="none" for that (its default cut the rate on a validation plateau, or decayed it on
# a cosine without validation); its train_context_size is left at its default 0 (no extra training context), the
# one behaviour today's version has.  Today's version keeps the rate constant under recipe="paper" (which also
# decays only the weight matrices: the same AdamW work per step) and averages weights only with ema_epochs set
# (regression's default is 5).  Its other settings are its table's: validation every k epochs ("auto"), adaptive
# threads; its numeric token is the paper's linear one (``num_embeddings=None``, what recipe="paper" requires
# and the old version has).
OLD_PARAMS = {"lr_scheduler": "none"}
TABLE_PARAMS = {"recipe": "paper", "ema_epochs": None, "num_embeddings": None}


def child_args(params: dict, **args) -> dict:
    """The child's JSON arguments: the shared settings and each kind of version's own (see ``CHILD_SETUP``)."""
    return {**args, "params": params, "old_params": OLD_PARAMS, "table_params": TABLE_PARAMS}


NUM_LAYERS_HELP = "MBA blocks for both versions: 2 is 172ea17's default size, 1 today's default"


def layers_tag(num_layers: int) -> str:
    """File-name suffix: none at 172ea17's size (the files written before ``--num-layers`` existed), ``_L<n>`` otherwise."""
    return "" if num_layers == 2 else f"_L{num_layers}"


def unpack(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref, "autogluon_maya"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run_child(root: Path, args: dict, code: str = None, env: dict = None) -> str:
    """Run ``code`` (default ``CHILD``) with ``root``'s package and this checkout's benchmark helpers
    (``benchlib``: the same rows and split for every version); ``env``: the child's environment without
    ``PYTHONPATH`` (default: this process's)."""
    env = {**(os.environ if env is None else env),
           "PYTHONPATH": os.pathsep.join([str(root), str(Path(__file__).resolve().parent)])}
    # cwd: ``python -c`` puts the working directory first on sys.path, ahead of PYTHONPATH, so a child
    # started from the repository root would import this checkout whatever ``root`` says
    res = subprocess.run([sys.executable, "-c", code or CHILD, json.dumps(args)], env=env, capture_output=True,
                         text=True, check=True, cwd=str(root))
    return res.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="172ea17", help="git ref of the version to compare against")
    ap.add_argument("--data", default=None,
                    help="dataset folder (default: california_housing in $AUTOGLUON_MAYA_DATASETS)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--validation", action="store_true",
                    help="validate on P1's validation rows as a fit does (each version by its own policy: "
                         "172ea17 after every epoch, this checkout every k epochs); the rows/s then count "
                         "validation time too.  Regression datasets only.")
    ap.add_argument("--num-layers", type=int, default=2, help=NUM_LAYERS_HELP)
    ap.add_argument("--out", default=str(REPO / "examples" / "benchmarks" / "results" / "throughput"))
    args = ap.parse_args()
    if args.data is None:
        from benchlib.protocol import default_datasets_dir
        args.data = str(default_datasets_dir() / "california_housing")
    params = {**PARAMS, "num_layers": args.num_layers}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        versions = {f"baseline {args.baseline}": unpack(args.baseline, Path(tmp)), "this checkout": REPO}
        rows = []
        for threads in args.threads:
            for r in range(args.repeats):
                for name, root in versions.items():
                    child = child_args(params, data=args.data, threads=threads, epochs=args.epochs,
                                       validation=args.validation)
                    m = json.loads(run_child(root, child).strip().splitlines()[-1])
                    assert m["module"].startswith(str(root)), (name, m["module"])  # the version it claims
                    rows.append({"version": name, "threads": threads, "repeat": r,
                                 "rows_per_wall_s": m["rows"] / m["wall_s"], "rows_per_cpu_s": m["rows"] / m["cpu_s"]})
                    print(rows[-1], flush=True)
        for name, root in (versions.items() if not args.validation else ()):  # profiles: steps only
            prof = run_child(root, child_args(params, data=args.data, threads=1, epochs=1, profile=True))
            tag = ("baseline" if name.startswith("baseline") else "current") + layers_tag(args.num_layers)
            (out / f"profile_{tag}.txt").write_text(f"# {name}, 1 thread, 10 training steps at batch 256\n" + prof)
    summary = []
    base = f"baseline {args.baseline}"
    for threads in args.threads:
        med = {v: {k: float(np.median([r[k] for r in rows if r["version"] == v and r["threads"] == threads]))
                   for k in ("rows_per_wall_s", "rows_per_cpu_s")} for v in versions}
        summary.append({"threads": threads, **{f"{v} {k}": med[v][k] for v in versions for k in med[v]},
                        "ratio_wall": med["this checkout"]["rows_per_wall_s"] / med[base]["rows_per_wall_s"],
                        "ratio_cpu": med["this checkout"]["rows_per_cpu_s"] / med[base]["rows_per_cpu_s"]})
    tag = ("_with_validation" if args.validation else "") + layers_tag(args.num_layers)
    (out / f"speed{tag}.json").write_text(json.dumps({"params": params, "old_params": OLD_PARAMS,
                                                      "table_params": TABLE_PARAMS, "data": Path(args.data).name,
                                                     "validation": args.validation,
                                                "runs": rows, "summary": summary}, indent=2))
    what = ("validation on P1's validation rows included, each version by its own policy" if args.validation
            else "no validation")
    md = [f"MAYA training speed on {Path(args.data).name} ({args.epochs} epochs, batch 256, "
          f"{args.num_layers} MBA block(s), {what}; "
          f"median of {args.repeats} alternating runs). Rows per second of wall-clock and of CPU time.", "",
          "| threads | baseline rows/s (wall) | current rows/s (wall) | ratio (wall) | baseline rows/CPU-s | "
          "current rows/CPU-s | ratio (CPU) |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for s in summary:
        md.append(f"| {s['threads']} | {s[base + ' rows_per_wall_s']:.0f} | {s['this checkout rows_per_wall_s']:.0f} | "
                  f"{s['ratio_wall']:.2f} | {s[base + ' rows_per_cpu_s']:.0f} | {s['this checkout rows_per_cpu_s']:.0f} | "
                  f"{s['ratio_cpu']:.2f} |")
    (out / f"speed{tag}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
