"""``import autogluon_maya`` registers the two keys and changes nothing else in the process: no environment
variable, no logging configuration, no torch thread setting.  Checked in a fresh interpreter that has already
imported torch and AutoGluon (what a user's script has done before it imports the plugin), so that only the
package's own import is compared."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = r"""
import json, logging, os, sys
import torch
import autogluon.tabular

def snapshot():
    root = logging.getLogger()
    ag = logging.getLogger("autogluon")
    return {"environ": dict(os.environ),
            "torch_threads": [torch.get_num_threads(), torch.get_num_interop_threads()],
            "root_logger": [root.level, [repr(h) for h in root.handlers], root.disabled],
            "autogluon_logger": [ag.level, [repr(h) for h in ag.handlers], ag.propagate],
            "logger_names": sorted(logging.root.manager.loggerDict)}

before = snapshot()
import autogluon_maya
from autogluon.tabular.registry import ag_model_registry
after = snapshot()
keys = sorted(k for k in ("MAYA", "TABSWIFT") if k in ag_model_registry.key_to_cls_map())
new_loggers = {}
for name in sorted(set(after.pop("logger_names")) - set(before.pop("logger_names"))):
    lg = logging.root.manager.loggerDict[name]  # a Logger, or a PlaceHolder for a parent name
    new_loggers[name] = [getattr(lg, "level", 0), len(getattr(lg, "handlers", []))]
print(json.dumps({"before": before, "after": after, "keys": keys, "new_loggers": new_loggers}))
"""


#: the child's whole environment: what it needs to run, nothing the parent (which imported the package, and
#: whose conftest sets variables) may have added, so that a variable set with ``setdefault`` at import shows
KEPT_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def test_import_registers_the_keys_and_changes_nothing_else():
    env = {k: os.environ[k] for k in KEPT_ENV if k in os.environ}
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["keys"] == ["MAYA", "TABSWIFT"]
    before, after = got["before"], got["after"]
    changed_env = {k: (before["environ"].get(k), after["environ"].get(k))
                   for k in set(before["environ"]) | set(after["environ"])
                   if before["environ"].get(k) != after["environ"].get(k)}
    assert changed_env == {}, f"import autogluon_maya changed the environment: {changed_env}"
    assert after["torch_threads"] == before["torch_threads"]
    assert after["root_logger"] == before["root_logger"]
    assert after["autogluon_logger"] == before["autogluon_logger"]
    # the package's own loggers (autogluon.ext.autogluon_maya.*, children of AutoGluon's "autogluon" logger, so
    # that a predictor's verbosity applies to them) are only named: no level, no handler
    assert got["new_loggers"], "the package names its loggers at import"
    for name, (level, handlers) in got["new_loggers"].items():
        assert name.startswith("autogluon.ext"), name
        assert (level, handlers) == (0, 0), (name, level, handlers)
