"""Our TABSWIFT pipeline against the authors' TabSwiftClassifier / TabSwiftRegressor, same weights.

    python examples/benchmarks/tabswift_vs_authors.py [DATASETS_DIR]      # default: $AUTOGLUON_MAYA_DATASETS

The authors' inference code (MIT) is imported from the ``tabarena`` package, which vendors it
(``tabarena.models.tabswift._vendor``; ``pip install -e ".[bench]"``), as an oracle; nothing of it is part
of autogluon_maya.  Weights: the released ``swift.ckpt`` is not reachable
offline and random weights make test scores meaningless, so our shipped pretrained checkpoint
(``checkpoints/tabswift_small``: 6 blocks, d = 128, 16 registers) is written into the authors'
``TabSwift`` module with that smaller config and saved in the released format.  Every tensor has a
place there except our class *embedding table*: the authors feed the class id as a float through
Linear(1, d).  For two classes that is exact (bias = E[0], weight = E[1] - E[0]), so the binary and
regression tables run our converter on that file (the whole released-weights path).  For more classes
no Linear(1, d) equals a table, so on the multiclass table our side loads the shipped checkpoint and
the authors' module gets a lookup of the same table in place of its ``y_encoder`` (the only change
made to their module; everything else -- preprocessing, ensemble, softmax -- is theirs).

Comparisons per table (each: agreement of predicted classes, largest |probability| or regression
difference, test scores side by side):
- ``network``: the authors' preprocessed member inputs pushed through our cached engine: isolates the
  network (must agree to float precision);
- ``one view, none`` / ``one view, power``: one member each, the same feature order, no class shift:
  isolates the preprocessing (ours, and ours with ``pipeline="authors"``);
- ``authors' seed``: the authors' defaults against themselves with another ``random_state`` (other
  feature permutations and class shifts): the yardstick for the ensemble-level rows below;
- ``defaults``: the authors' defaults (32 members) against our TABSWIFT defaults (8 members), both
  through their public fit/predict (ours through AutoGluon's TabularPredictor);
- ``32 members``: our TABSWIFT with the authors' ensemble size;
- ``authors' pipeline``: ours with ``pipeline="authors"`` (their preprocessing and member plan), 32 members;
- regression only, ``target scaling``: the authors' wrapper on raw y (what it does alone) against the
  same wrapper on y standardized outside and mapped back (what our engine does inside, and what their
  benchmark adapter did); every other regression row gives their side standardized y.
Writes CSV, JSON and a Markdown table to ``examples/benchmarks/results/tabswift_vs_authors/``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT  # noqa: E402
from autogluon_maya.tabswift.engine import TabSwiftEngine  # noqa: E402
from autogluon_maya.tabswift.ensemble import Member, TabSwiftEnsemble  # noqa: E402
from autogluon_maya.tabswift.checkpoints_io.export import export_to_authors  # noqa: E402
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint  # noqa: E402

TABLES = {"phoneme": "binary", "spambase": "binary", "satimage": "multiclass", "california_housing": "regression"}
OUT = REPO / "examples" / "benchmarks" / "results" / "tabswift_vs_authors"


AUTHORS = "tabarena.models.tabswift._vendor"


def import_authors():
    try:
        return (importlib.import_module(f"{AUTHORS}.model.tabswift").TabSwift,
                importlib.import_module(f"{AUTHORS}.classifier").TabSwiftClassifier,
                importlib.import_module(f"{AUTHORS}.regressor").TabSwiftRegressor)
    except ImportError as err:
        raise SystemExit(f"the authors' TabSwift code could not be imported from {AUTHORS} ({err}); "
                         f"pip install -e '.[bench]' installs tabarena")


# ---- our shipped weights in the authors' module -----------------------------------------------------------------
def shipped_in_authors_format(path: Path) -> dict:
    """Write the shipped checkpoint as an authors'-format ``{"config", "state_dict"}`` file
    (``autogluon_maya.tabswift.checkpoints_io.export``; its class table is exact there for two classes only, hence
    ``binary_only``); returns the class-embedding table (for the multiclass adapter) and the config."""
    report = export_to_authors(SHIPPED_CHECKPOINT, path, binary_only=True)
    table = load_checkpoint(SHIPPED_CHECKPOINT).state_dict()["label_encoders.classes.weight"]  # (C_max, d)
    return {"table": table, "config": report.config}


class ClassTable(torch.nn.Module):
    """Stands in for the authors' ``y_encoder`` on the multiclass table: the class id (a float, shape (..., 1))
    looks up our shipped embedding table, so their module computes what our shipped network computes."""

    def __init__(self, table: torch.Tensor):
        super().__init__()
        self.register_buffer("table", table.clone())

    def forward(self, y):
        return self.table[y.squeeze(-1).long()]


# ---- data ------------------------------------------------------------------------------------------------------
def load_table(data: Path, name: str, n_train: int, n_test: int, seed: int):
    meta = json.loads((data / name / "meta.json").read_text())
    df = pd.read_csv(data / name / "data.csv.gz")
    df = df.sample(n=min(len(df), n_train + n_test), random_state=seed).reset_index(drop=True)
    y = df.pop(meta["target"]).to_numpy()
    X = df.to_numpy(dtype=np.float64)  # the four tables are numeric with no missing values
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:], list(df.columns), meta


def scores(task: str, y_true, pred) -> dict:
    from sklearn.metrics import accuracy_score, log_loss, roc_auc_score

    if task == "regression":
        return {"rmse": float(np.sqrt(np.mean((pred - y_true) ** 2)))}
    labels = np.arange(pred.shape[1])
    out = {"accuracy": float(accuracy_score(y_true, pred.argmax(1))),
           "log_loss": float(log_loss(y_true, np.clip(pred, 1e-15, 1), labels=labels))}
    if task == "binary":
        out["roc_auc"] = float(roc_auc_score(y_true, pred[:, 1]))
    return out


def compare(task: str, y_true, ours, theirs, y_scale: float = 1.0) -> dict:
    if task == "regression":
        d = np.abs(ours - theirs)
        return {"max_abs_diff": float(d.max()), "max_diff_over_y_std": float(d.max() / y_scale),
                "mean_abs_diff": float(d.mean())}
    d = np.abs(ours - theirs)
    return {"class_agreement": float(np.mean(ours.argmax(1) == theirs.argmax(1))), "max_abs_diff": float(d.max()),
            "mean_abs_diff": float(d.mean())}


# ---- the two pipelines ---------------------------------------------------------------------------------------------
def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def authors_fit_predict(Cls, task, ckpt, Xtr, ytr, Xte, table=None, raw_target=False, **kw):
    """Their estimator's fit / predict.  Regression: on y standardized outside and mapped back (the
    workflow of their benchmark adapter), unless ``raw_target`` (what their wrapper alone does)."""
    kw.setdefault("random_state", 0)
    est = Cls(model_path=str(ckpt), device="cpu", allow_auto_download=False, **kw)
    mean, std = (0.0, 1.0) if task != "regression" or raw_target else (float(np.mean(ytr)), float(np.std(ytr)))
    quiet(est.fit, Xtr, (ytr - mean) / std if task == "regression" else ytr)
    if table is not None:
        est.model_.icl_predictor.y_encoder = ClassTable(table)
    if task == "regression":
        return np.asarray(quiet(est.predict, Xte)).reshape(-1) * std + mean, est
    return quiet(est.predict_proba, Xte), est


def ours_autogluon(task, ckpt, Xtr, ytr, Xte, columns, workdir, **hp):
    from autogluon.tabular import TabularPredictor

    train = pd.DataFrame(Xtr, columns=columns).assign(label=ytr)
    ptype = {"binary": "binary", "multiclass": "multiclass", "regression": "regression"}[task]
    # validation rows only feed AutoGluon's own bookkeeping: a zero-shot TabSwift ignores them, so they
    # are a copy of a few training rows and the context is exactly the authors' training set
    predictor = TabularPredictor(label="label", problem_type=ptype, path=str(workdir), verbosity=0).fit(
        train, tuning_data=train.iloc[:64], hyperparameters={"TABSWIFT": {"checkpoint_path": str(ckpt), "fine_tune": False, **hp}},
        fit_weighted_ensemble=False, raise_on_model_failure=True, num_cpus=2)
    test = pd.DataFrame(Xte, columns=columns)
    if task == "regression":
        return predictor.predict(test).to_numpy(dtype=np.float64)
    return predictor.predict_proba(test).to_numpy(dtype=np.float64)


def ours_one_view(task, net, Xtr, ytr_ids, Xte, norm, n_classes, permutation, pipeline="ours"):
    """One member of ours seeing the view the authors' single member saw: their feature order, no class
    shift.  (Their ``feat_shuffle_method="none"`` raises, so their one member has a random order.)"""
    ens = TabSwiftEnsemble(net, "regression" if task == "regression" else "classification", n_estimators=1,
                           norm_methods=(norm,), class_shift=False, feature_shuffle=False,
                           max_context_rows=10 ** 9, pipeline=pipeline)
    ens.fit(pd.DataFrame(Xtr), ytr_ids, n_classes=n_classes)
    if len(permutation) != ens.x_context_[norm].shape[1]:
        raise RuntimeError(f"the two pipelines kept different columns ({len(permutation)} vs "
                           f"{ens.x_context_[norm].shape[1]})")
    ens.members_ = [Member(norm, tuple(int(j) for j in permutation), 0)]
    Xte = pd.DataFrame(Xte)
    return ens.predict(Xte) if task == "regression" else ens.predict_proba(Xte)


def network_only(task, net, est, Xte, n_classes):
    """The authors' preprocessed members (their ensemble generator's output) through our engine."""
    engine = TabSwiftEngine(net, chunk_size=1024)
    X = est.X_encoder_.transform(est._apply_dimensionality_transform(Xte, is_fitting=False))
    data = est.ensemble_generator_.transform(X)
    ours, theirs = [], []
    for norm, (Xs, ys) in data.items():
        n_tr = ys.shape[1]
        for m in range(Xs.shape[0]):
            regression = task == "regression"
            cache = engine.encode_context(Xs[m, :n_tr], ys[m], "regression" if regression else "classification",
                                          n_classes=None if regression else n_classes)
            ours.append(engine.predict(Xs[m, n_tr:], cache).predictions.double().numpy())
        patterns = est.ensemble_generator_.feature_shuffle_patterns_[norm]
        if task == "regression":  # our engine standardizes y inside: give their forward standardized y too
            mean, std = ys.mean(1, keepdims=True), ys.std(1, keepdims=True)
            out = quiet(est._batch_forward, Xs, (ys - mean) / std, patterns)
            theirs.append(out.reshape(len(ys), -1) * std + mean)
        else:
            theirs.append(quiet(est._batch_forward, Xs, ys, patterns))
    return np.stack(ours), np.concatenate(theirs)


#: (comparison, our side, TABSWIFT hyperparameters), each against the authors' defaults
OURS_VARIANTS = [("defaults", "TABSWIFT defaults (8 members)", {}),
                 ("32 members", "TABSWIFT n_estimators=32", {"n_estimators": 32}),
                 ("authors' pipeline", "TABSWIFT pipeline='authors', 32 members",
                  {"n_estimators": 32, "pipeline": "authors"})]


def run_table(name, task, args, authors, weights, workdir, log):
    TabSwift, Classifier, Regressor = authors
    Xtr, ytr, Xte, yte, columns, meta = load_table(args.data, name, args.train_rows, args.test_rows, args.seed)
    rows = []
    classes = np.unique(ytr)
    n_classes = None if task == "regression" else len(classes)
    ytr_ids = ytr.astype(np.float64) if task == "regression" else np.searchsorted(classes, ytr)
    yte_ids = yte.astype(np.float64) if task == "regression" else np.searchsorted(classes, yte)
    multiclass = task == "multiclass"
    ckpt = SHIPPED_CHECKPOINT if multiclass else weights["ckpt"]
    table = weights["table"] if multiclass else None
    net = load_checkpoint(SHIPPED_CHECKPOINT) if multiclass else load_checkpoint(weights["converted"])
    Cls = Regressor if task == "regression" else Classifier
    y_std = float(np.std(ytr)) if task == "regression" else 1.0

    def record(comparison, ours, theirs, ours_label, theirs_label, seconds, note=""):
        row = {"table": name, "task": task, "train_rows": len(ytr), "test_rows": len(yte), "features": Xtr.shape[1],
               "comparison": comparison, "ours": ours_label, "authors": theirs_label,
               **compare(task, yte_ids, ours, theirs, y_std),
               **{f"ours_{k}": v for k, v in scores(task, yte_ids, ours).items()},
               **{f"authors_{k}": v for k, v in scores(task, yte_ids, theirs).items()},
               "seconds": round(seconds, 1), "note": note}
        rows.append(row)
        log(f"  {comparison}: " + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, float)))

    # 1. one view, no shuffles: isolates preprocessing (and, with the members' inputs, the network)
    for norm in ("none", "power"):
        t0 = time.time()
        theirs, est = authors_fit_predict(Cls, task, weights["ckpt"], Xtr, ytr, Xte, table,
                                          n_estimators=1, norm_methods=[norm], class_shift=False)
        if norm == "none":
            o, t = network_only(task, net, est, Xte, n_classes)
            if task == "regression":  # their estimator was given standardized y: back to target units
                o, t = o * y_std + float(np.mean(ytr)), t * y_std + float(np.mean(ytr))
            record("network", o.mean(0) if task == "regression" else _softmax(o.mean(0)),
                   t.mean(0) if task == "regression" else _softmax(t.mean(0)),
                   "our engine on their member inputs", "their forward", time.time() - t0)
        for pipeline in ("ours", "authors"):
            t1 = time.time()
            ours = ours_one_view(task, net, Xtr, ytr_ids, Xte, norm, n_classes,
                                 est.ensemble_generator_.feature_shuffle_patterns_[norm][0], pipeline)
            record(f"one view, {norm}", ours, theirs, f"1 member, their feature order, pipeline='{pipeline}'",
                   "1 member, no class shift", time.time() - t1 + (t1 - t0 if pipeline == "ours" else 0.0))
    # 2. the defaults of each side
    t0 = time.time()
    theirs32, _ = authors_fit_predict(Cls, task, weights["ckpt"], Xtr, ytr, Xte, table)
    t_authors = time.time() - t0
    # the yardstick: the authors' pipeline against itself with another seed (other permutations and shifts)
    t0 = time.time()
    seed1, _ = authors_fit_predict(Cls, task, weights["ckpt"], Xtr, ytr, Xte, table, random_state=1)
    record("authors' seed", seed1, theirs32, "authors' defaults, random_state=1", "defaults (32 members)",
           time.time() - t0 + t_authors)
    for comparison, label, hp in [v for v in OURS_VARIANTS if v[0] not in args.skip_variants]:
        t0 = time.time()
        ours = ours_autogluon(task, ckpt, Xtr, ytr, Xte, columns, workdir / f"{name}-{len(rows)}", **hp)
        record(comparison, ours, theirs32, label, "defaults (32 members)", time.time() - t0 + t_authors)
    if task == "regression":  # their wrapper feeds raw y; standardizing outside is what our engine does inside
        t0 = time.time()
        raw_pred, _ = authors_fit_predict(Cls, task, weights["ckpt"], Xtr, ytr, Xte, raw_target=True)
        record("target scaling", theirs32, raw_pred, "authors' wrapper on standardized y, mapped back",
               "authors' wrapper on raw y", time.time() - t0)
    return rows


def _softmax(z, temperature=0.9):
    z = z / temperature
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def markdown(rows) -> str:
    lines = ["| table | comparison | ours | authors | class agreement | max abs diff | ours score | authors score |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        key = "rmse" if r["task"] == "regression" else ("roc_auc" if r["task"] == "binary" else "accuracy")
        agree = "" if r["task"] == "regression" else f"{r['class_agreement']:.4f}"
        diff = f"{r['max_abs_diff']:.3g}" + (f" ({r['max_diff_over_y_std']:.3g} y-std)" if r["task"] == "regression"
                                              else "")
        score = lambda side: (f"{key} {r[f'{side}_{key}']:.4f}" + (f", acc {r[f'{side}_accuracy']:.4f}"  # noqa: E731
                                                                     if key == "roc_auc" else ""))
        lines.append(f"| {r['table']} | {r['comparison']} | {r['ours']} | {r['authors']} | {agree} | {diff} | "
                     f"{score('ours')} | {score('authors')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    from benchlib.protocol import default_datasets_dir

    parser.add_argument("data", type=Path, nargs="?", default=default_datasets_dir(),
                        help="datasets folder (<name>/data.csv.gz + meta.json; default: %(default)s)")
    parser.add_argument("--train-rows", type=int, default=1024)
    parser.add_argument("--test-rows", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tables", nargs="*", default=list(TABLES))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-variants", nargs="*", default=[], help="comparisons of OURS_VARIANTS to leave out")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    authors = import_authors()
    args.out.mkdir(parents=True, exist_ok=True)

    def log(msg):
        print(msg, flush=True)

    rows, t_start = [], time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        from autogluon_maya.tabswift.checkpoints_io.released import convert

        ckpt = tmp / "swift.ckpt"
        weights = shipped_in_authors_format(ckpt)
        weights.update(ckpt=ckpt, converted=convert(ckpt, f"{tmp}/converted/"))
        for name in args.tables:
            log(f"{name} ({TABLES[name]})")
            rows += run_table(name, TABLES[name], args, authors, weights, tmp, log)
    pd.DataFrame(rows).to_csv(args.out / "results.csv", index=False)
    info = {"command": "python examples/benchmarks/tabswift_vs_authors.py " + " ".join(sys.argv[1:]),
            "weights": f"shipped {SHIPPED_CHECKPOINT.name} ({weights['config']}) in the authors' format",
            "train_rows": args.train_rows, "test_rows": args.test_rows, "seed": args.seed, "threads": args.threads,
            "torch": torch.__version__, "python": platform.python_version(),
            "wall_seconds": round(time.time() - t_start, 1), "rows": rows}
    (args.out / "results.json").write_text(json.dumps(info, indent=1, default=str))
    (args.out / "results.md").write_text(markdown(rows) + "\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
