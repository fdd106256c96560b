"""``import autogluon_maya`` registers the models without importing torch (as AutoGluon's own torch models
do, torch is imported inside the methods that fit, predict or load); the first use of a torch part imports it.

Checked in a fresh interpreter: this one imported torch long ago."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, sys
import autogluon_maya
from autogluon.tabular.registry import ag_model_registry
import autogluon.tabular.predictor.predictor as ag_predictor

keys = ag_model_registry.key_to_cls_map()
out = {"torch_after_import": "torch" in sys.modules,
       "keys": {k: keys[k].__module__ + "." + keys[k].__qualname__ for k in ("MAYA", "TABSWIFT") if k in keys},
       "dystack_hook": getattr(ag_predictor._dystack, "__module__", None)}
from autogluon_maya.tabswift import TabSwiftEngine  # a torch part, loaded on first use
out["engine"] = TabSwiftEngine.__module__
out["torch_after_engine"] = "torch" in sys.modules
print(json.dumps(out))
"""


def test_import_registers_the_models_and_leaves_torch_unimported(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["keys"] == {"MAYA": "autogluon_maya.maya.model.MayaModel",
                           "TABSWIFT": "autogluon_maya.tabswift.model.TabSwiftModel"}
    assert out["dystack_hook"] == "autogluon_maya._registry"
    assert out["torch_after_import"] is False, "import autogluon_maya imported torch"
    assert out["engine"] == "autogluon_maya.tabswift.engine" and out["torch_after_engine"] is True
