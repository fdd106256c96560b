"""TabSwift inference speed on CPU: KV cache, early exit, and TabICL's architecture at the same size.

Why this exists
---------------
TabSwift's claim is speed: the context (registers + support rows) never reads a query, so its
per-layer keys/values are computed once (``TabSwiftEngine.encode_context``) and every later query
batch only pays for its own rows (``TabSwiftEngine.predict``); with early exit, queries that are
confident leave the stack and later blocks run on fewer rows.  The stated goal is that cached
TabSwift inference is >= 3x faster per query than TabICL's architecture at 1,000-10,000 context
rows.  This script measures, in ONE process (so every ratio compares runs on the same machine
state), per context size n_ctx:

1. ``tabswift_uncached``  -- ``network.forward(masked=False)`` on [support; query batch]: the context
   is re-run for every query batch (what a model without a cache pays);
2. ``tabswift_cached``    -- ``encode_context`` once (reported separately, and amortised over the
   query set in the "incl. encode" column) + ``engine.predict`` per batch, no early exit;
3. ``tabswift_early_exit`` -- ``engine.predict(tau=...)`` for several thresholds: mean exit depth,
   share of block-rows computed, wall-clock per query and speedup vs tau=None;
4. ``tabicl_uncached`` / ``tabicl_kv_cache`` / ``tabicl_repr_cache`` -- TabICL's torch module
   (``tabicl._model.tabicl.TabICL``, default architecture arguments, random weights) on the same
   tables: its plain forward on [support; query batch], and its own caches (``forward_with_cache``
   with ``cache_mode="kv"`` and ``"repr"``), configured as ``TabICLClassifier`` does on CPU (fp32, no
   AMP).  Speed does not depend on the weights.  One table = one ensemble member for both models.

Data: random N(0, 1) features (F=20 by default) and 3 classes; features need no preprocessing for a
speed test.  Without ``--checkpoint`` TabSwift has random weights, so its exit heads are meaningless:
the thresholds tau are then calibrated as quantiles of the exit probabilities of the first query
batch so that the observed mean exit depths span the stack (tau=0 exits everything at layer 1,
tau=1.01 never exits and shows the cost of evaluating the exit heads).  With ``--checkpoint`` the
taus are a fixed sweep (or ``--taus``).  Early-exit rows with random weights measure the *mechanism*
(wall-clock vs depth), not the depth a trained model would choose.

Timing: everything runs under ``torch.no_grad()`` with ``--threads`` torch threads (use 1 on a shared
machine).  Each call records wall-clock AND process CPU time; with one thread CPU time is the time on
an uncontended core, while on a shared machine the wall clock also counts waiting for a core (it
varied 1.0-1.6x between calls here when other jobs ran), so ratios use CPU time by default
(``--basis``); both are in the outputs.  Each method is warmed up once on a small table at start-up,
and again at each context size unless n_ctx >= ``--big`` (there the uncached forwards, the cache
builds and the repr-cache predict take tens of seconds each and are timed once, unwarmed; the other
cached paths are still warmed up).  Reported times are medians over ``--repeats``.  Uncached paths and
``tabicl_repr_cache`` time one query batch (every batch has the same shape, so the same cost); the
other cached paths time the whole query set, batch by batch.  GFLOP/query is counted with
``torch.utils.flop_counter`` (attention forced to the math kernel so that it is counted) on one batch
-- a machine-independent cross-check of the timed ratios; for the uncached paths only below ``--big``.
The first batch's cached predictions are compared with the uncached forward's (sanity check).

Run (from the repository root; the full run took 7 minutes on one core):

    python examples/benchmarks/tabswift_speed.py --threads 1                     # 1,000 / 3,000 / 10,000 rows
    python examples/benchmarks/tabswift_speed.py --quick                         # smoke run, < 1 minute
    python examples/benchmarks/tabswift_speed.py --n-ctx 1000,3000 --config small
    python examples/benchmarks/tabswift_speed.py --checkpoint path/to/swift      # trained exit heads
    python examples/benchmarks/tabswift_speed.py --report-only                   # redo results.md / latency.png

Writes ``results.csv`` (one row per (n_ctx, method, tau)), ``results.json``, ``results.md`` and
``latency.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import gc
import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from benchlib.cpu_timing import Timing, cpu_name, n_params, timed
from benchlib.provenance import code_version
from benchlib.tabswift_speed_report import plot, verdict, write_markdown
from autogluon_maya.tabswift.config import RELEASED, SMALL
from autogluon_maya.tabswift.engine import TabSwiftEngine
from autogluon_maya.tabswift.network import CLASSIFICATION, TabSwiftNetwork
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint

CONFIGS = {"released": RELEASED, "small": SMALL}
CHECKPOINT_TAUS = (0.5, 0.7, 0.9, 0.95, 0.99)
CSV_FIELDS = ["n_ctx", "method", "tau", "n_queries", "batch_size", "batches_timed", "repeats", "warmed_up",
              "cpu_ms_per_query", "wall_ms_per_query", "wall_over_cpu", "encode_cpu_s", "encode_wall_s",
              "cpu_ms_per_query_incl_encode", "wall_ms_per_query_incl_encode", "mean_exit_depth",
              "block_rows_frac", "speedup_vs_tabicl", "speedup_vs_tabicl_kv", "speedup_vs_uncached",
              "speedup_vs_no_exit", "gflop_per_query", "cache_mb", "note"]


# ---------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------
def gflops(fn: Callable[[], Any]) -> float:
    """Model GFLOP of one call, attention included (math SDPA kernel, so its matmuls are counted)."""
    with sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops() / 1e9


def tabicl_cache_bytes(cache) -> int:
    total = 0
    for kv in (cache.col_cache, cache.icl_cache):
        for entry in (kv.kv.values() if kv is not None else ()):
            for t in (entry.key, entry.value):
                if t is not None:
                    total += t.numel() * t.element_size()
    if cache.row_repr is not None:
        total += cache.row_repr.numel() * cache.row_repr.element_size()
    return total


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------------
# TabICL (optional)
# ---------------------------------------------------------------------------------------------------
class TabICLRunner:
    """TabICL's torch module with random weights, run the way ``TabICLClassifier`` runs it on CPU."""

    def __init__(self):
        from tabicl import InferenceConfig
        from tabicl._model.tabicl import TabICL

        # Default architecture; zero_init=False only so that random outputs are not all identical
        # (it changes initial values, not shapes or FLOPs) and the cached-vs-uncached check means something.
        self.model = TabICL(zero_init=False).eval().requires_grad_(False)
        mgr = dict(device="cpu", use_amp=False, use_fa3=False, verbose=False)  # TabICLClassifier's CPU "auto"
        self.config = InferenceConfig()
        self.config.update_from_dict({"COL_CONFIG": dict(mgr, offload="auto"), "ROW_CONFIG": mgr,
                                      "ICL_CONFIG": mgr})
        self.arch = {k: getattr(self.model, k) for k in (
            "max_classes", "embed_dim", "col_num_blocks", "col_nhead", "col_num_inds", "row_num_blocks",
            "row_nhead", "row_num_cls", "icl_num_blocks", "icl_nhead", "ff_factor")}
        self.arch["icl_d_model"] = self.model.embed_dim * self.model.row_num_cls

    def forward(self, xs, ys, xq):
        return self.model(torch.cat([xs, xq])[None], ys.float()[None], inference_config=self.config)[0]

    def build_cache(self, xs, ys, mode: str):
        self.model.forward_with_cache(X_train=xs[None], y_train=ys.float()[None], use_cache=False,
                                      store_cache=True, cache_mode=mode, inference_config=self.config)
        cache = self.model._cache
        self.model.clear_cache()
        return cache

    def predict(self, xq, cache):
        return self.model.forward_with_cache(X_test=xq[None], cache=cache, inference_config=self.config)[0]


# ---------------------------------------------------------------------------------------------------
# TabSwift helpers
# ---------------------------------------------------------------------------------------------------
def predict_all(engine: TabSwiftEngine, batches: Sequence[torch.Tensor], cache, tau):
    preds = [engine.predict(b, cache, tau=tau) for b in batches]
    exit_layer = torch.cat([p.exit_layer for p in preds])
    rows = np.sum([p.rows_per_layer for p in preds], axis=0)
    return preds, exit_layer, rows


@torch.no_grad()
def exit_probabilities(net: TabSwiftNetwork, cache, xq: torch.Tensor) -> torch.Tensor:
    """sigmoid(exit logit) of every query at every exit layer, without exiting: (L-1, Q)."""
    h = net.embed_rows(xq.unsqueeze(0))
    probs = []
    for e in range(net.n_exit_layers):
        h = net.blocks[e].mix(h, cache.keys[e], cache.values[e])
        probs.append(torch.sigmoid(net.exit_heads[e](h, cache.register_means[e], CLASSIFICATION))[0])
    return torch.stack(probs)


def calibrated_taus(probs: torch.Tensor, n_layers: int) -> List[float]:
    """Quantiles of the pooled exit probabilities aimed at mean exit depths from ~1.5 to ~0.7 L.

    If a query passed tau at each layer independently with probability p, its mean depth would be ~1/p,
    so tau = quantile(probs, 1 - 1/depth).  The observed depths are reported, not these targets.
    """
    pooled = probs.flatten().double()
    targets = np.geomspace(1.5, max(2.0, 0.7 * n_layers), 4)
    taus = [float(torch.quantile(pooled, 1.0 - 1.0 / d)) for d in targets]
    return [0.0] + sorted(set(round(t, 6) for t in taus)) + [1.01]


# ---------------------------------------------------------------------------------------------------
# one context size
# ---------------------------------------------------------------------------------------------------
def run_size(n_ctx: int, args, net: TabSwiftNetwork, engine: TabSwiftEngine, icl: Optional[TabICLRunner],
             taus_fixed: Optional[List[float]]) -> Dict[str, Any]:
    g = torch.Generator().manual_seed(args.seed + n_ctx)
    xs = torch.randn(n_ctx, args.features, generator=g)
    ys = torch.randint(0, args.classes, (n_ctx,), generator=g)
    xq = torch.randn(args.queries, args.features, generator=g)
    batches = list(torch.split(xq, args.batch))
    b0 = batches[0]
    big = n_ctx >= args.big
    r_heavy = 1 if big else args.repeats  # uncached forwards, cache builds
    warm_heavy = not big
    Q, B, L = args.queries, b0.shape[0], len(net.blocks)
    rows: List[Dict[str, Any]] = []
    checks: Dict[str, float] = {}
    count_flops = not args.no_flops

    def row(method, tm: Timing, rows_timed: int, n_batches: int, warmed: bool, enc: Optional[Timing] = None,
            tau=None, **kw):
        r = {"n_ctx": n_ctx, "method": method, "tau": tau, "n_queries": Q, "batch_size": B,
             "batches_timed": n_batches, "repeats": len(tm.wall), "warmed_up": warmed,
             "wall_times": tm.wall, "cpu_times": tm.cpu}
        for kind in ("wall", "cpu"):
            per_q = 1e3 * tm.median(kind) / rows_timed
            enc_s = enc.median(kind) if enc else 0.0
            r[f"{kind}_ms_per_query"] = per_q
            r[f"{kind}_ms_per_query_incl_encode"] = per_q + 1e3 * enc_s / Q
            if enc:
                r[f"encode_{kind}_s"] = enc_s
                r[f"encode_{kind}_times"] = getattr(enc, kind)
        r["wall_over_cpu"] = r["wall_ms_per_query"] / r["cpu_ms_per_query"]
        r.update(kw)
        rows.append(r)
        log(f"n_ctx={n_ctx} {method} tau={tau}: {r['cpu_ms_per_query']:.4f} CPU-ms/query, "
            f"{r['wall_ms_per_query']:.4f} wall-ms/query (CPU s {['%.3f' % t for t in tm.cpu]})")
        return r

    # ---- TabSwift uncached -----------------------------------------------------------------------
    f_unc = lambda: net(xs, ys, b0, CLASSIFICATION, masked=False).prediction  # noqa: E731
    tm, out_unc = timed(f_unc, r_heavy, warm_heavy)
    row("tabswift_uncached", tm, B, 1, warm_heavy, mean_exit_depth=float(L), block_rows_frac=1.0,
        gflop_per_query=gflops(f_unc) / B if count_flops and not big else None,
        note="network.forward(masked=False) on [support; batch]: context re-run per batch")

    # ---- TabSwift cached ------------------------------------------------------------------------
    enc, cache = timed(lambda: engine.encode_context(xs, ys, CLASSIFICATION), r_heavy, warm_heavy)
    cache_mb = cache.nbytes / 2**20
    tm, (preds, _, _) = timed(lambda: predict_all(engine, batches, cache, None), args.repeats, True)
    checks["tabswift_cached_vs_uncached"] = float((preds[0].predictions - out_unc[:, :args.classes]).abs().max())
    base = row("tabswift_cached", tm, Q, len(batches), True, enc, mean_exit_depth=float(L), block_rows_frac=1.0,
               gflop_per_query=gflops(lambda: engine.predict(b0, cache)) / B if count_flops else None,
               cache_mb=cache_mb, note="encode_context once + engine.predict per batch, tau=None")

    # ---- TabSwift early exit ----------------------------------------------------------------------
    if net.n_exit_layers:
        if taus_fixed is not None:
            taus, how = taus_fixed, "fixed"
        else:
            taus, how = calibrated_taus(exit_probabilities(net, cache, b0), L), "calibrated on batch 0"
        for tau in taus:
            tm, (_, exit_layer, rpl) = timed(lambda: predict_all(engine, batches, cache, tau), args.repeats, True)
            row("tabswift_early_exit", tm, Q, len(batches), True, enc, tau=tau,
                mean_exit_depth=float(exit_layer.double().mean()), block_rows_frac=float(rpl.sum()) / (L * Q),
                cache_mb=cache_mb, note=f"engine.predict(tau), tau {how}")
    del cache
    gc.collect()

    # ---- TabICL -----------------------------------------------------------------------------------
    if icl is not None:
        f_icl = lambda: icl.forward(xs, ys, b0)  # noqa: E731
        tm, out_icl = timed(f_icl, r_heavy, warm_heavy)
        row("tabicl_uncached", tm, B, 1, warm_heavy,
            gflop_per_query=gflops(f_icl) / B if count_flops and not big else None,
            note="TabICL.forward on [support; batch]")
        for mode in ("kv", "repr"):
            if mode == "repr" and args.no_repr:
                continue
            enc, icache = timed(lambda: icl.build_cache(xs, ys, mode), r_heavy, warm_heavy)
            mb = tabicl_cache_bytes(icache) / 2**20
            if mode == "kv":  # cheap per query: time the whole query set
                tm, outs = timed(lambda: [icl.predict(b, icache) for b in batches], args.repeats, True)
                out, n_rows, n_b = outs[0], Q, len(batches)
                gf = gflops(lambda: icl.predict(b0, icache)) / B if count_flops else None
            else:  # re-runs the ICL transformer over the whole context: time one batch like the uncached paths
                tm, out = timed(lambda: icl.predict(b0, icache), r_heavy, True)
                n_rows, n_b, gf = B, 1, None
            checks[f"tabicl_{mode}_vs_uncached"] = float((out - out_icl).abs().max())
            row(f"tabicl_{mode}_cache", tm, n_rows, n_b, True, enc, gflop_per_query=gf, cache_mb=mb,
                note=f"TabICL.forward_with_cache(cache_mode='{mode}')")
            del icache
            gc.collect()

    # ---- ratios (on the chosen time basis) ----------------------------------------------------------
    k = f"{args.basis}_ms_per_query"
    by = {r["method"]: r for r in rows if r["method"] != "tabswift_early_exit"}
    for r in rows:
        if not r["method"].startswith("tabswift"):
            continue
        for key, ref in (("speedup_vs_tabicl", "tabicl_uncached"), ("speedup_vs_tabicl_kv", "tabicl_kv_cache"),
                         ("speedup_vs_uncached", "tabswift_uncached")):
            if ref in by:
                r[key] = by[ref][k] / r[k]
        if r["method"] == "tabswift_early_exit":
            r["speedup_vs_no_exit"] = base[k] / r[k]
    return {"n_ctx": n_ctx, "rows": rows, "checks": checks,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# ---------------------------------------------------------------------------------------------------
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-ctx", default="1000,3000,10000", help="comma-separated context sizes")
    ap.add_argument("--queries", type=int, default=1000, help="query rows per context size")
    ap.add_argument("--batch", type=int, default=250, help="query rows per batch")
    ap.add_argument("--features", type=int, default=20)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--big", type=int, default=10000,
                    help="from this n_ctx on, heavy calls (uncached forwards, cache builds) are timed once, cold")
    ap.add_argument("--config", choices=sorted(CONFIGS), default="released")
    ap.add_argument("--checkpoint", default=None, help="TabSwift checkpoint (its config overrides --config)")
    ap.add_argument("--taus", default=None, help="comma-separated exit thresholds (default: see docstring)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--basis", choices=("auto", "cpu", "wall"), default="auto",
                    help="time used for the ratios; auto = process CPU time with 1 thread, else wall clock")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-tabicl", action="store_true")
    ap.add_argument("--no-repr", action="store_true", help="skip TabICL's repr cache")
    ap.add_argument("--no-flops", action="store_true", help="skip the FLOP counts")
    ap.add_argument("--quick", action="store_true", help="smoke run: n_ctx 200,500, 64 queries, 1 repeat")
    ap.add_argument("--out", default="examples/benchmarks/results/tabswift_speed")
    ap.add_argument("--report-only", action="store_true",
                    help="rebuild results.md and latency.png from <out>/results.json without measuring")
    args = ap.parse_args(argv)
    if args.quick:
        args.n_ctx, args.queries, args.batch, args.repeats = "200,500", 64, 32, 1
    args.n_ctx_list = [int(n) for n in args.n_ctx.split(",") if n.strip()]
    if args.basis == "auto":
        args.basis = "cpu" if args.threads == 1 else "wall"
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.report_only:
        saved = json.loads((Path(args.out) / "results.json").read_text())
        print(write_markdown(Path(args.out) / "results.md", saved["meta"], saved["results"]))
        plot(Path(args.out) / "latency.png", saved["results"], saved["meta"])
        return 0
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    load_start = ", ".join(f"{x:.2f}" for x in os.getloadavg())

    if args.checkpoint:
        net = load_checkpoint(args.checkpoint)
        config_name = f"from checkpoint {Path(args.checkpoint).name}"
        weights = f"checkpoint {args.checkpoint}"
        weights_short = "checkpoint"
    else:
        net = TabSwiftNetwork(CONFIGS[args.config])
        config_name = args.config.upper()
        weights = ("RANDOM (no --checkpoint): speed is weight-independent, but early-exit depths are set by "
                   "calibrated tau, not by trained exit heads")
        weights_short = "random weights"
    net.eval().requires_grad_(False)  # inference only (and FlopCounterMode's module hooks need it)
    engine = TabSwiftEngine(net)
    if args.taus:
        taus_fixed = [float(t) for t in args.taus.split(",")]
    else:
        taus_fixed = list(CHECKPOINT_TAUS) if args.checkpoint else None

    icl, icl_version, icl_error = None, None, None
    if not args.no_tabicl:
        try:
            import importlib.metadata

            icl = TabICLRunner()
            icl_version = importlib.metadata.version("tabicl")
        except Exception as err:  # report, don't fail: TabICL is an optional comparison
            icl_error = f"{type(err).__name__}: {err}"
            log(f"TabICL skipped: {icl_error}")
    else:
        icl_error = "--no-tabicl"

    log(f"TabSwift {config_name} ({n_params(net):,} params, {weights_short}); TabICL "
        f"{'%s params' % format(n_params(icl.model), ',') if icl else 'skipped'}; threads {torch.get_num_threads()}")

    results = []
    with torch.no_grad():
        # one global warm-up of every path on a small table
        wa = argparse.Namespace(**{**vars(args), "queries": 2 * min(args.batch, 32), "batch": min(args.batch, 32),
                                   "repeats": 1, "big": 10**9, "no_flops": True})
        run_size(256, wa, net, engine, icl, taus_fixed)
        log("warm-up done")
        for n in args.n_ctx_list:
            results.append(run_size(n, args, net, engine, icl, taus_fixed))

    verdict_rows, verdict_text = verdict(results, args.basis)
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "git_commit": code_version()["commit"],
        "torch": torch.__version__, "tabicl": icl_version, "tabicl_error": icl_error, "python": sys.version.split()[0],
        "cpu": cpu_name(), "cpu_count": os.cpu_count(), "threads": torch.get_num_threads(), "basis": args.basis,
        "loadavg_start": load_start, "loadavg_end": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "tabswift": {"config_name": config_name, "config": net.config.to_dict(), "params": n_params(net),
                     "weights": weights, "weights_short": weights_short},
        "tabicl_arch": icl.arch if icl else None, "tabicl_params": n_params(icl.model) if icl else None,
        "features": args.features, "classes": args.classes, "queries": args.queries, "batch": args.batch,
        "repeats": args.repeats, "big": args.big, "n_ctx": args.n_ctx_list, "argv": sys.argv[1:],
        "runtime_s": time.perf_counter() - t_start,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "verdict": verdict_rows, "verdict_text": verdict_text,
    }

    with open(out / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS, extrasaction="ignore")
        w.writeheader()
        for res in results:
            for r in res["rows"]:
                w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_FIELDS})
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=2, default=float))
    text = write_markdown(out / "results.md", meta, results)
    plot(out / "latency.png", results, meta)
    print(text)
    log(f"wrote {out}/results.csv, results.json, results.md, latency.png in {meta['runtime_s'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
