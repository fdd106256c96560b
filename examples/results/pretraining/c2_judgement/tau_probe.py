"""Rule 4 probe (session 5): the test that failed for c2, test_fine_tuned_model_with_tau_stays_within_tau_max_loss_of_no_exit,
re-run on three data seeds for a checkpoint (relative RMSE loss of tau=0.5 early exit vs no exit after fine-tuning).

    python examples/results/pretraining/c2_judgement/tau_probe.py            # the shipped checkpoint
    AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT=$PWD/runs/campaign/candidates/c2/tabswift_small python .../tau_probe.py
"""
import sys, os
sys.path.insert(0, "plugin_tests/tabswift")
import pathlib, tempfile
from test_finetune_exit import _fit
for seed in (1, 2, 3):
    for tau in (0.5,):
        d = pathlib.Path(tempfile.mkdtemp())
        model, Xv, yv = _fit(d, {"fine_tune_steps": 6, "fine_tune_exit_steps": 15, "tau": tau, "tau_max_loss": 0.01}, seed=seed)
        ens = model.model
        w = model.score(Xv, yv); depth = ens.last_mean_exit_layer; ens.tau = None; n = model.score(Xv, yv)
        print(os.environ.get("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT","shipped")[-30:], seed, tau, round(w,3), round(n,3), "rel loss", round((n-w)/abs(n),4), "depth", round(depth,2), "best_step", model._fit_summary["best_step"])
