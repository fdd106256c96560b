"""How fast does MAYA learn at each ``numeric_scale``?  Fixed-epoch fits, side by side (P1 split).

    python examples/benchmarks/maya_numeric_scale.py --datasets letter,satimage --scales 1,3,5,8,12 --epochs 20 \
        --out examples/benchmarks/results/numeric_inputs/scale/numeric_scale
    python examples/benchmarks/maya_numeric_scale.py --data-dir /tmp/sk_datasets --datasets digits --scales 1,5 --epochs 20 \
        --out examples/benchmarks/results/numeric_inputs/scale/numeric_scale      # after examples/benchmarks/sklearn_datasets.py

Each fit trains one network for exactly ``--epochs`` epochs (``patience=None``: no early stopping; no time limit)
with the given settings and ``numeric_scale`` as the only thing that changes, then scores it on the validation and
test parts.  The fit keeps the epoch that validated best (validation every few epochs, ``validation_every``) and
cuts the rate on validation plateaus.  Rows written before 0.2.0 came from ``early_stopping=False`` (removed in
0.2.0), which validated nothing while training: the last epoch, a cosine-decayed rate; the table's "epoch kept"
column tells them apart.  Why fixed epochs: at a time limit the figure mixes how fast an epoch runs (which
varies from run to run on a shared machine) with how much each epoch learns; this isolates the second.
Results: ``numeric_scale.jsonl`` (one line per fit; rerunning appends) and ``numeric_scale.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def fit_once(path: Path, scale: float, epochs: int, hyperparameters: dict, seed: int, num_cpus: int) -> dict:
    from benchlib.p1 import p1_fit

    hp = {"ensemble_members": 1, "parallel_members": 1, "max_epochs": epochs, "patience": None,
          **hyperparameters, "numeric_scale": scale}
    start = time.time()
    fit = p1_fit(path, {"MAYA": hp}, seed=seed, num_cpus=num_cpus, num_gpus=None, raise_on_model_failure=False)
    board = fit.predictor.leaderboard(fit.data.test, silent=True)
    fit.cleanup()
    return {"dataset": fit.data.name, "seed": seed, "metric": fit.data.metric, "epochs": epochs,
            "hyperparameters": hyperparameters, "numeric_scale": scale, "val": float(board.score_val.iloc[0]),
            "test": float(board.score_test.iloc[0]), "fit_s": round(time.time() - start, 1),
            "epoch_kept": "best validated"}


def write_markdown(rows: list[dict], path: Path) -> None:
    lines = ["| dataset | seed | epochs | hyperparameters | numeric_scale | val | test | fit s | epoch kept |",
             "|---|---:|---:|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['seed']} | {r['epochs']} | `{json.dumps(r['hyperparameters'])}` | "
                     f"{r['numeric_scale']:g} | {r['val']:.4f} | {r['test']:.4f} | {r['fit_s']} | "
                     f"{r.get('epoch_kept', 'last')} |")
    lines.append("\nScores are AutoGluon's (higher is better; RMSE is negated). One network; epoch kept: the last "
                 "(early_stopping=False, before 0.2.0) or the best validated (patience=None).")
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    from benchlib.protocol import default_datasets_dir

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=str(default_datasets_dir()), help="folder of dataset folders")
    ap.add_argument("--datasets", required=True, help="comma-separated dataset folders")
    ap.add_argument("--scales", default="1,5", help="comma-separated numeric_scale values")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0, help="split seed")
    ap.add_argument("--hyperparameters", default="{}", help="JSON of further MAYA settings, the same for every fit")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "numeric_scale.jsonl"
    for name in args.datasets.split(","):
        for scale in (float(s) for s in args.scales.split(",")):
            row = fit_once(Path(args.data_dir) / name, scale, args.epochs, json.loads(args.hyperparameters),
                           args.seed, args.num_cpus)
            print(json.dumps(row), flush=True)
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")
    rows = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    write_markdown(rows, out / "numeric_scale.md")
    print((out / "numeric_scale.md").read_text())


if __name__ == "__main__":
    main()
