"""Does MAYA's decoder retrieve neighbours?  A probe of one fitted network's spaces (P1 split).

    python examples/benchmarks/sklearn_datasets.py --out /tmp/sk_datasets
    python examples/benchmarks/maya_iail_probe.py --data /tmp/sk_datasets/digits --seeds 0,2 \
        --hyperparameters '{"qk_shared_weights": true}' --out examples/benchmarks/results/probes/iail_retrieval

Fits MAYA (one member, so the probe reads the network that predicts) and measures on the test rows:
- ``maya``: the model's accuracy;
- ``knn5_input`` / ``knn5_encoding``: 5-nearest-neighbour accuracy on the model's input numerics (after its
  numeric transform) and on the encoder's row encodings: how much neighbour structure each space holds;
- ``iail_1nn``: the class of the context row each query's IAIL attention weighs most (the first IAIL block,
  -||q W_q - k W_k||^2 over every training row); chance is about 1 / classes;
- ``iail_vote``: the class with the most attention mass;
- ``attention_neighbours``: the median effective number of context rows a query attends to (exp of the entropy).

Why: IAIL reads the labels of the context rows a query resembles.  If ``iail_1nn`` falls below chance the
decoder is not retrieving look-alike rows; the class is then read off the row's own encoding and the label
read-out works as an "everything but my class" signal.  Results: ``probe.jsonl`` and ``probe.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def probe(data: str, seed: int, hyperparameters: dict, time_limit: float, num_cpus: int) -> dict:
    import torch
    from sklearn.neighbors import KNeighborsClassifier

    from benchlib.p1 import p1_data, p1_fit

    p1 = p1_data(data, seed=seed)
    ds, train, test = p1.dataset, p1.train, p1.test
    if not ds.is_classification:
        raise SystemExit(f"{ds.name} is a {ds.task} table: the probe compares classes")
    fit = p1_fit(p1, {"MAYA": {"ensemble_members": 1, **hyperparameters}}, time_limit=time_limit,
                 num_cpus=num_cpus, num_gpus=None, raise_on_model_failure=False)
    predictor, model = fit.predictor, fit.model
    net = model.model.members[0].net.eval()

    def inputs(frame):
        enc = model.preprocess(predictor._learner.transform_features(frame.drop(columns=ds.target)))
        with torch.no_grad():
            return enc.x_num, net.encode(torch.as_tensor(enc.x_num), torch.as_tensor(enc.x_cat))

    labels = predictor._learner.label_cleaner
    y_train = labels.transform(train[ds.target]).to_numpy()
    y_test = labels.transform(test[ds.target]).to_numpy()
    x_train, e_train = inputs(train)
    x_test, e_test = inputs(test)
    row = {"dataset": ds.name, "seed": seed, "hyperparameters": hyperparameters, "classes": int(y_train.max() + 1),
           "maya": float((predictor.predict(test) == test[ds.target]).mean())}
    for name, a, b in (("knn5_input", x_train, x_test), ("knn5_encoding", e_train.numpy(), e_test.numpy())):
        row[name] = float((KNeighborsClassifier(5).fit(a, y_train).predict(b) == y_test).mean())
    block = net.decoder[0]
    with torch.no_grad():
        attention = torch.softmax(block.similarity(e_test, block.k_proj(e_train)), dim=1)
    one_hot = np.eye(row["classes"])[y_train]
    row["iail_1nn"] = float((y_train[attention.argmax(1).numpy()] == y_test).mean())
    row["iail_vote"] = float(((attention.numpy() @ one_hot).argmax(1) == y_test).mean())
    entropy = -(attention * attention.clamp_min(1e-12).log()).sum(1)
    row["attention_neighbours"] = float(np.median(entropy.exp().numpy()))
    fit.cleanup()
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="a dataset folder (data.csv.gz + meta.json)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--hyperparameters", default="{}", help="MAYA hyperparameters as JSON")
    ap.add_argument("--time-limit", type=float, default=300.0)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "probe.jsonl", "a") as f:
        for seed in args.seeds.split(","):
            row = probe(args.data, int(seed), json.loads(args.hyperparameters), args.time_limit, args.num_cpus)
            print(json.dumps(row))
            f.write(json.dumps(row) + "\n")
    rows = [json.loads(line) for line in open(out / "probe.jsonl")]
    cols = ["maya", "knn5_input", "knn5_encoding", "iail_1nn", "iail_vote", "attention_neighbours"]
    lines = ["| dataset | seed | hyperparameters | " + " | ".join(cols) + " |", "|---|---:|---|" + "---:|" * len(cols)]
    lines += [f"| {r['dataset']} | {r['seed']} | `{json.dumps(r['hyperparameters'])}` | "
              + " | ".join(f"{r[c]:.4f}" if c != "attention_neighbours" else f"{r[c]:.1f}" for c in cols) + " |"
              for r in rows]
    (out / "probe.md").write_text("\n".join(lines) + "\n")
    print((out / "probe.md").read_text())


if __name__ == "__main__":
    main()
