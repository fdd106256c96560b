"""MAYA training throughput on this machine: rows/s, peak memory, achieved GFLOP/s of an epoch
against the fp32 matmul rate measured in the same run (same thread count).

    python examples/benchmarks/maya_throughput.py --data $AUTOGLUON_MAYA_DATASETS/california_housing --threads 2

FLOPs are counted by ``torch.utils.flop_counter.FlopCounterMode`` on one real training step
(forward + backward; matmuls and attention, elementwise ops not counted), then multiplied by the
steps of a timed epoch run by the package's own ``train_maya``.  Writes JSON + Markdown.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from autogluon_maya.common.preprocessing import TabularEncoder, TargetScaler
from benchlib.protocol import default_datasets_dir, load_dataset, p1_split
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import AUTO_BATCH_ROWS, check_params, resolve_defaults
from autogluon_maya.maya.network import NETWORK_KEYS, MayaNetwork, training_bins
from autogluon_maya.maya.trainer import FittedMaya, TrainConfig, TrainData, effective_batch_size, make_loss, train_maya


def matmul_gflops(n: int, repeats: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * n**3 * repeats / (time.perf_counter() - t) / 1e9


def shaped_matmul_gflops(m: int, k: int, n: int, repeats: int = 50) -> float:
    a, b = torch.randn(m, k), torch.randn(k, n)
    a @ b
    t = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * m * k * n * repeats / (time.perf_counter() - t) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(default_datasets_dir() / "california_housing"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--out", default="examples/benchmarks/results/throughput")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    ds = load_dataset(args.data)
    train, _, _ = p1_split(ds, 0)
    X, y = train.drop(columns=[ds.target]), train[ds.target]
    p = check_params(resolve_defaults(ds.task))  # the table's defaults for this problem type
    enc = TabularEncoder(numeric_transform=p["numeric_transform"]).fit(X)
    t = enc.transform(X)
    # the batch a fit would use on these rows ("auto": the problem type's rows, fewer on small tables)
    p["batch_size"] = effective_batch_size(p["batch_size"], len(X), AUTO_BATCH_ROWS[ds.task])
    if ds.is_classification:
        codes = y.astype("category").cat.codes.to_numpy().astype(np.int64)
        kind, out_dim, n_cls, yl = "class", int(codes.max()) + 1, int(codes.max()) + 1, codes
    else:
        kind, out_dim, n_cls, yl = "real", 1, 0, TargetScaler(y).transform(y)
    bins = training_bins(torch.from_numpy(t.x_num) * p["numeric_scale"]) \
        if p["num_embeddings"] == "piecewise" and t.x_num.shape[1] else None
    net = MayaNetwork(t.x_num.shape[1], enc.cat_cardinalities, out_dim, kind, n_cls, num_bins=bins,
                      **{k: p[k] for k in NETWORK_KEYS})
    fitted = FittedMaya(net)
    x_num, x_cat, y_t = torch.from_numpy(t.x_num), torch.from_numpy(t.x_cat), torch.from_numpy(yl)
    loss_fn = make_loss(kind)

    # FLOPs of one training step at the default batch size
    b = p["batch_size"]
    with FlopCounterMode(display=False) as fc:
        out = net.forward_train(x_num[:b], x_cat[:b], y_t[:b])
        loss_fn(out, y_t[:b]).mean().backward()
    flops_per_row = fc.get_total_flops() / b
    net.zero_grad()

    t0 = time.perf_counter()
    summary = train_maya(fitted, TrainData(x_num, x_cat, y_t, y_t, None),
                         TrainConfig(params={**p, "patience": None}, loss_fn=loss_fn,
                                     device=torch.device("cpu"), seed=0, max_epochs=args.epochs),
                         TimeBudget(None), val_score_fn=None)
    train_s = time.perf_counter() - t0
    rows = summary["epochs"] * len(x_num)
    t0 = time.perf_counter()
    fitted.set_context(x_num, x_cat, y_t)
    preds = fitted.predict_raw(x_num[:2000], x_cat[:2000])
    infer_s = time.perf_counter() - t0
    assert torch.isfinite(preds).all()

    with torch.no_grad():  # tokens per row: [CLS] + one per feature, as the tokenizer emits them
        T = net.tokenizer(x_num[:1], x_cat[:1]).shape[1]
    d = p["hidden_size"]
    res = {
        "dataset": ds.name, "threads": args.threads, "train_rows": len(x_num), "epochs": summary["epochs"],
        "train_rows_per_s": rows / train_s,
        "model_gflop_per_row_train_step": flops_per_row / 1e9,
        "achieved_gflops": flops_per_row * rows / train_s / 1e9,
        "matmul_fp32_gflops_2048": matmul_gflops(2048),
        # the encoder's largest matmul at the default batch: (batch*tokens, d) x (d, 3*d*branches)
        "matmul_fp32_gflops_model_shape": shaped_matmul_gflops(b * T, d, 3 * d * p["num_branch"]),
        "context_encode_plus_2000_queries_s": infer_s,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    res["achieved_fraction_of_matmul"] = res["achieved_gflops"] / res["matmul_fp32_gflops_2048"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "throughput.json").write_text(json.dumps(res, indent=2))
    md = ["| quantity | value |", "|---|---:|"] + [f"| {k} | {v:.4g} |" if isinstance(v, float) else f"| {k} | {v} |"
                                                   for k, v in res.items()]
    (out / "throughput.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
