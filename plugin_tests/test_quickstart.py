"""``examples/quickstart.py`` runs as the README says and prints the leaderboard it promises: MAYA and TabSwift
next to LightGBM and CatBoost, each scored on the test rows.

A tiny run: 240 rows of the breast cancer table (it ships with scikit-learn) and 8 s per model; about 45 s on 2
busy CPU cores.  The hub is switched off (``HF_HUB_OFFLINE=1``) so that TabSwift never waits for the network.
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
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp_path)}  # the predictor lands in tmp_path
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "quickstart.py"), "--max-rows", "240",
                           "--time-limit", "8"], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "breast_cancer: train / validation / test = 153 / 39 / 48 rows" in proc.stdout, proc.stdout
    assert "problem type binary, metric accuracy" in proc.stdout, proc.stdout
    board = _leaderboard(proc.stdout)
    missing = [m for m in PROMISED if m not in board]
    assert not missing, f"the leaderboard lacks {missing}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    # an easy table (the majority class is 63 %): every score is an accuracy, and the best model learnt it
    assert all(0.0 <= board[m] <= 1.0 for m in PROMISED) and max(board.values()) >= 0.9, board
