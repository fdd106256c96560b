"""How ``results.jsonl`` was assembled (session 5) from the ``runs/`` folders of the benchmark runs (not kept
between sessions): rows fitted while a variant was the package default are relabelled with what ran.

    python examples/results/maya_regression_defaults/assemble.py   # from the repo root, with those runs/ present
"""
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUT = ROOT / "examples/results/maya_regression_defaults/results.jsonl"
EAD5 = {"ema_epochs": 5, "add_act": True, "num_decoder_layers": 2}
rows = []
for f in ["ca_s5", "ca_s5_default", "quick_s5", "cpu_s5", "reg3_s5", "reg4_s5"]:
    if not os.path.exists(f"{ROOT}/runs/{f}/results.jsonl"): continue
    for l in open(f"{ROOT}/runs/{f}/results.jsonl"):
        r = json.loads(l)
        if r.get("status") != "ok":
            continue
        started = r["started"]
        if r["model"] == "MAYA":  # fitted while the package default was ead5 (commit 481dec5)
            r["relabelled_from"] = "MAYA (package default at commit 481dec5)"
            r["model"], r["hyperparameters"] = "MAYA@ead5", dict(EAD5)
        hp = r["hyperparameters"]
        if "2026-12-01T10:40" <= started < "2026-12-01T11:20" and not ("add_act" in hp and "num_decoder_layers" in hp):
            # the package default then was add_act=True, num_decoder_layers=2 (commit 481dec5)
            r["relabelled_from"] = f"{r['model']} {dict(hp)} under commit 481dec5's defaults"
            hp = r["hyperparameters"] = {"add_act": True, "num_decoder_layers": 2, **hp}
        if hp.get("ema_epochs"):
            r["average_kept"] = "if better than live" if started >= "2026-12-01T11:24" else "always"
        else:
            r["average_kept"] = "-"
        rows.append(r)
with open(OUT, "w") as f:
    for r in rows:
        f.write(json.dumps(r) + "\n")
print(len(rows))
