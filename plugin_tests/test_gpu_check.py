"""``examples/benchmarks/gpu_check.sh --cpu`` runs every GPU check end to end on the CPU, so the script a GPU machine
will run cannot rot unnoticed (~1.5 min on 2 shared cores, most of it two Ray start-ups)."""

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_gpu_check_script_runs_end_to_end_on_cpu(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path / "out")}
    proc = subprocess.run(["bash", str(REPO / "examples" / "benchmarks" / "gpu_check.sh"), "--cpu"], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=600)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    checks = results["checks"]
    errors = {k: v["error"][-1500:] for k, v in checks.items() if v["status"] != "ok"}
    assert proc.returncode == 0 and not errors, (errors, proc.stderr[-2000:])
    assert set(checks) == {"maya_bf16", "tabswift_bf16", "hpo", "ray_train_ddp", "reload_without_cuda"}
    r = {k: v["result"] for k, v in checks.items()}
    # the "GPU" sides ran under CPU bf16 autocast: MAYA trained in bf16 (its training-mode linear layers gave
    # bfloat16 outputs, the fp32 side's none; the fp32 outputs beside them on the bf16 side come from the
    # branch-weight update, which runs in fp32 outside autocast) and still scores near the fp32 fit (0.0 on this
    # data); TabSwift's bf16 probabilities differ from fp32 (so bf16 really ran) but only by rounding (8e-4
    # measured; with tau=0.5 the exit heads decide, 7e-4 measured)
    maya_bf16, maya_fp32 = (r["maya_bf16"][side]["training_linear_outputs"] for side in ("gpu_bf16", "cpu_fp32"))
    assert maya_bf16.get("bfloat16", 0) > 0, maya_bf16
    assert maya_fp32.get("float32", 0) > 0 and "bfloat16" not in maya_fp32, maya_fp32
    assert abs(r["maya_bf16"]["score_delta_gpu_minus_cpu"]) <= 0.05
    assert 0.0 < r["tabswift_bf16"]["max_abs_delta"] <= 0.01
    assert r["tabswift_bf16"]["max_abs_delta_tau_0.5"] <= 0.05
    # the pickle, rewritten as a GPU fit writes it, holds no torch storage (the weights are saved apart, read through
    # safetensors) and the reloaded model predicts exactly the same on the CPU
    reload = r["reload_without_cuda"]
    assert reload["storages_in_pickle"] == 0 and reload["weights_saved_apart"]
    assert reload["max_abs_delta"] == 0.0 and reload["device_after_load"] == "cpu"
    assert r["hpo"]["trials_finished"] >= 1
    assert r["ray_train_ddp"]["steps_done"] == r["ray_train_ddp"]["steps_asked"]
    assert "| maya_bf16 | ok |" in (tmp_path / "out" / "results.md").read_text()
