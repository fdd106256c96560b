"""``examples/quickstart.py`` runs as the README says and prints the leaderboard it promises: MAYA and TabSwift
next to LightGBM and CatBoost, each scored on the test rows.

A tiny run: 240 rows of the breast cancer table (it ships with scikit-learn) and 8 s per model; about 45 s on 2
busy CPU cores.  TabSwift runs its default ``checkpoint_path="auto"`` as a user's fit does (the suite's choice of
the shipped checkpoint is taken out of the environment) with the hub switched off (``HF_HUB_OFFLINE=1``): it
never waits for the network and takes the released weights only where this machine has them.
"""

from __future__ import annotations

import os
import subprocess
import sys

from plugin_tests.resources import REPO

#: the leaderboard's names for the four models the quickstart fits (AutoGluon's ``ag_name`` of each key)
PROMISED = ("Maya", "TabSwift", "LightGBM", "CatBoost")
COLUMNS = ["model", "score_test", "score_val", "fit_time", "pred_time_test"]


def _leaderboard(stdout: str) -> dict:
    """``{model: score_test}`` from the table the script prints last."""
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split() == COLUMNS)
    rows = [line.split() for line in lines[header + 1:] if line.strip()]
    assert all(len(r) == len(COLUMNS) for r in rows), rows
    return {r[0]: float(r[1]) for r in rows}


def test_quickstart_prints_a_leaderboard_of_the_four_models(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT"}
    env.update(HF_HUB_OFFLINE="1", TMPDIR=str(tmp_path))  # the predictor lands in tmp_path
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), "--max-rows", "240",
                           "--time-limit", "8"], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "breast_cancer: train / validation / test = 153 / 39 / 48 rows" in proc.stdout, proc.stdout
    assert "problem type binary, metric accuracy" in proc.stdout, proc.stdout
    board = _leaderboard(proc.stdout)
    missing = [m for m in PROMISED if m not in board]
    assert not missing, f"the leaderboard lacks {missing}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    # an easy table (the majority class is 63 %): every score is an accuracy, the best model learnt it, and
    # neither MAYA nor TabSwift predicts the class frequencies (a fall-back to the prior scores 0.63 here)
    assert all(0.0 <= board[m] <= 1.0 for m in PROMISED) and max(board.values()) >= 0.9, board
    assert board["Maya"] >= 0.8 and board["TabSwift"] >= 0.8, board
    assert "predicts the prior instead" not in proc.stdout + proc.stderr
