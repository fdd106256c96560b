"""Write scikit-learn's bundled real tables as dataset folders (``data.csv.gz`` + ``meta.json``) for the benchmark.

    python examples/benchmarks/sklearn_datasets.py --out /tmp/sk_datasets
    python examples/benchmarks/benchmark.py --data-dir /tmp/sk_datasets --datasets digits --models MAYA,NN_TORCH,KNN ...

Why: the shared datasets hold three multiclass tables (satimage, letter, otto), and MAYA's defaults were screened
on two of them.  A table none of the screens saw tells whether a change helps multiclass or only those two.
scikit-learn ships ``digits`` (UCI optical digits, 1,797 rows of 8x8 pixel counts, 10 classes) on disk, so it
needs no download; the folder is written outside the repository and never committed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sklearn import datasets

TABLES = {
    # name: (loader, task, source note)
    "digits": (datasets.load_digits, "multiclass", "sklearn.datasets.load_digits (UCI optdigits, test part)"),
    "wine": (datasets.load_wine, "multiclass", "sklearn.datasets.load_wine (UCI wine)"),
}


def write_table(name: str, out: Path) -> Path:
    loader, task, note = TABLES[name]
    frame = loader(as_frame=True).frame
    target = frame.columns[-1]
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    frame.to_csv(folder / "data.csv.gz", index=False)
    meta = {"name": name, "file": "data.csv.gz", "task": task, "target": target, "n_rows": len(frame),
            "n_features": frame.shape[1] - 1, "source_note": note}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2))
    return folder


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write the dataset folders into")
    ap.add_argument("--tables", default=",".join(TABLES), help=f"comma-separated, from {sorted(TABLES)}")
    args = ap.parse_args(argv)
    for name in args.tables.split(","):
        print(write_table(name, Path(args.out)))


if __name__ == "__main__":
    main()
