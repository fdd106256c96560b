"""MAYA's default hyperparameters, sized for a 2-core CPU (see README "Choosing the defaults").

The paper's large configurations (hidden_size up to 512, up to 8 branches) are for GPUs; the
``gpu`` preset in ``autogluon_maya.presets`` is a starting point for them.
"""

import math
import numbers

DEFAULT_PARAMS = {
    # encoder
    "hidden_size": 64,
    "num_heads": 4,
    "num_branch": "auto",  # 4 for classification, 2 for regression (TASK_DEFAULTS)
    # one MBA block: on 2 cores a two-block encoder is cut by the time limit or early-stops late; one block
    # trains ~2x the epochs and leaves room for a second ensemble member (session 8, side by side: better on
    # 6 of 7 runs, california_housing 0.4753 -> 0.4456; worse on satimage at 300 s, 0.9013 -> 0.8811)
    "num_layers": 1,
    "intermediate_factor": 2.0,
    "dropout": 0.1,
    "add_act": False,
    "act_type": "relu",
    "if_bias": True,
    "use_branch_weights": True,
    "branch_momentum": 0.9,
    # decoder
    "num_decoder_layers": 1,
    "decoder_intermediate_factor": 2.0,
    "decoder_act_type": "relu",
    "decoder_dropout": 0.1,
    "decoder_if_bias": True,
    "qk_shared_weights": False,
    # optimisation
    "learning_rate": 1e-3,
    "weight_decay": 1e-5,
    "label_smoothing": "auto",  # classification: cross-entropy against (1 - s) * one-hot + s / classes; not in the
    # paper.  "auto": 0.1 for multiclass judged on its predicted classes (accuracy and the like), else 0
    "batch_size": "auto",  # 128 (classification) / 256 (regression), fewer on small tables (>= 8 steps per
    # epoch); an int is used as given
    "recipe": "default",  # "paper": constant rate, weight decay on weight matrices only
    "max_epochs": 200,
    "lr_scheduler": "plateau",  # or "none" (constant rate)
    "lr_plateau_patience": 5,
    "lr_plateau_factor": 0.3,
    "budget_anneal": 0.3,  # share of a time-limited run over which the rate falls towards 1 % (see BudgetAnneal);
    # None: off
    "early_stopping": True,
    "adaptive_threads": True,  # CPU: time 1 vs num_cpus threads and keep the faster (see README)
    "train_context_size": 0,
    "patience": 16,  # epochs without a better validation score
    "ema_epochs": "auto",  # horizon (epochs) of a moving average of the weights, scored beside the live
    # weights at each validation pass, the better kept; None: off; auto: 5 for regression, off for classification
    "ensemble_members": "auto",  # networks from different seeds, predictions averaged; "auto": up to 3 while
    # the time limit holds another member (1 without a limit); each further member is kept only if the average
    # validates better
    "parallel_members": "auto",  # "auto": on a CPU with >= 2 cores, the first two members train at once, in two
    # threads with half the cores each (~1.8x the work per second at the default size, see MayaModel._fit); an
    # int: that many at once (at most the cores); 1: one at a time
    "member_time": 1.1,  # a further member starts only while the time left holds this share of the first
    # member's time to its best epoch; the time left is split evenly among as many members as it holds
    "deeper_member": "auto",  # regression 2.0, classification None (TASK_DEFAULTS).  With
    # ensemble_members="auto": when the time left after the first member (after the first pair, when two train at
    # once) holds this many times its training time, the next member gets one more MBA block and all of that time (a
    # one-block member early-stops on satimage in 53-90 s of 300, a two-block epoch with its validation costs
    # ~3.5-4.4x; satimage 0.8811 -> 0.8959 / 0.8912, sessions 8-9); None: off
    "member_layers": None,  # per-member MBA blocks, set by a fit for refit_full to replay; None: num_layers
    "validation_every": "auto",  # epochs between validation passes; auto keeps them under ~15 % of the time
    # preprocessing / inference
    "numeric_transform": "auto",  # multiclass "minmax_or_quantile", else "quantile" (PROBLEM_TYPE_DEFAULTS); also
    # "minmax", "standard", "none" (common.preprocessing.NUMERIC_TRANSFORMS says when each fits)
    "numeric_scale": "auto",  # multiclass 5, else 1 (the paper): a fixed multiplier of the numeric inputs in the
    # tokenizer, which sets how fast the numeric embeddings learn (see FeatureTokenizer)
    "quantile_transform": None,  # the older setting: True/False, where set, still wins ("quantile" / "none")
    "predict_chunk_size": 1024,
    "context_topk": None,
}


# What "auto" means per task.  The moving average of the weights, kept when it validates better than the
# live weights, against none (P1 seed 0, 2 cores, test RMSE; ``examples/results/maya_regression_defaults/``):
# california_housing 0.4869 -> 0.4775 (600 s), cpu_act 2.505 -> 2.411 (300 s), ames_housing 25,748 ->
# 22,680 (120 s), pol 4.623 -> 4.882 (120 s; worse).  Always keeping the average lost badly on pol (5.69).
# The tokenizer's ReLU plus a second IAIL block reached 0.4563 on california_housing but lost on cpu_act
# (3.128) and ames_housing (31,088), so they stay off.
# Classification keeps no average: at 300 s on 2 cores, side by side, satimage 0.8772 with it vs 0.8912
# without, letter 0.9610 vs 0.9550 (``examples/results/maya_multiclass_average/``): one up, one down.
# ``auto_batch_rows`` is what ``batch_size="auto"`` takes before the small-table rule lowers it.  On letter
# 128 rows beat 256 in every pair measured (P1 seed 0, 300 s; 2 cores: 0.9660 / 0.96625 vs 0.96175, and
# 0.9660 vs 0.9610 without the anneal; 1 core: 0.96425 vs 0.9615).  On satimage two 2-core runs whose first
# networks had the same settings (the anneal never reached them) scored 0.8648 and 0.8912, more than 128 vs
# 256 moved it, so it decides nothing
# (``examples/results/maya_anneal/``).  Regression keeps 256, where california_housing's defaults were chosen.
# Classification takes 4 branches and no deeper member (session 11, P1 seed 0, 300 s, 2 cores, with two members
# trained at once; ``examples/results/maya_session11/``): letter 0.97425 -> 0.97725 with 4 branches (the deeper
# member is never planned there: the first pair takes most of the limit); satimage 0.8889 (2 branches, deeper
# member) -> 0.8982 (4 branches, deeper member, which was dropped from the average) -> 0.9005 (4 branches, three
# one-block members, fit 125 s); the default itself, run twice: letter 0.9780 / 0.9770, satimage 0.8974 / 0.8998.
# NN_TORCH: 0.9755 / 0.8998.  Regression keeps 2 branches and the deeper member:
# 4 branches cost california_housing its second member at 600 s (0.4610 vs 0.4456, session 9).
TASK_DEFAULTS = {
    "regression": {"ema_epochs": 5, "auto_batch_rows": 256, "num_branch": 2, "deeper_member": 2.0},
    "classification": {"ema_epochs": None, "auto_batch_rows": 128, "num_branch": 4, "deeper_member": None},
}
# What "auto" becomes by problem type, for the settings binary and multiclass need apart.
# numeric_transform (others: "quantile", the paper's FT-Transformer recipe).  Multiclass takes min-max for the
# numerics whose range is not set by outliers (session 13, P1, 2 cores, ``examples/results/maya_session13/``; test
# accuracy, quantile -> minmax_or_quantile, split seeds 0-2 at 300 s): digits 0.9444 -> 0.9546 (mean; NN_TORCH
# 0.9537), satimage 0.9029 -> 0.9091 (all 36 columns take min-max, so the minmax runs: better on every seed; NN_TORCH
# 0.9065); letter at seed 0 0.9750 -> 0.9722 / 0.9732 (two runs; minmax 0.9720): worse (quantile runs of sessions
# 11-13: 0.9780 / 0.9770 / 0.9750; NN_TORCH 0.9755).  Binary stays on the quantile transform: at 60 s on telco_churn,
# phoneme, qsar_biodeg and bank_churn accuracy went up on two tables and down on two, ROC-AUC down on all four (by
# 0.001-0.009).  Regression was not measured.
# numeric_scale (others: 1, the paper).  Min-max inputs in [-1, 1] made letter's numeric embeddings learn slowly;
# 5 makes them learn far faster per epoch (session 14, ``examples/results/maya_session14/``;
# 20 fixed epochs, one network, seed 0, test accuracy 1 -> 5: letter 0.834 -> 0.931, satimage 0.826 -> 0.848, digits
# 0.722 -> 0.925).  At 300 s, P1: letter 0.9722 / 0.9732 -> 0.9770 (one run; fit ends by early stopping at 165 s, no
# longer at the limit; NN_TORCH 0.9755, 6 test rows below, within run-to-run noise), digits 0.9546 -> 0.9676 (mean
# of seeds 0-2; NN_TORCH 0.9537, KNN 0.9787), satimage 0.9091 -> 0.9049 (mean; seed 0 0.9044 -> 0.8974 / 0.8951 / 0.8951 in three runs; NN_TORCH 0.9065 / 0.8998; s = 3
# and add_act were level there and lower on letter).  The s = 1 figures are session 13's, not side by side.  Binary
# and regression keep 1 (side by side, seed 0): at 60 s accuracy up on phoneme (+1.1 points), down on bank_churn
# (-0.6) and telco_churn (-0.2), level on qsar_biodeg (ROC-AUC up on three); cpu_act (60 s) RMSE 2.462 -> 2.285 but
# california_housing (600 s) 0.4438 -> 0.4597.
# label_smoothing (others: 0).  Multiclass takes 0.1 where the metric judges the predicted classes (session 15, P1,
# 300 s, 2 cores, ``examples/results/maya_session15/``; test accuracy, 0 -> 0.1, side by side except satimage's 0
# runs, session 14's): letter 0.9770 -> 0.9785, otto (10,000 rows) 0.7570 -> 0.7585, satimage at seed 0 0.8974 /
# 0.8951 / 0.8951 -> 0.8990 / 0.8990 / 0.9052 (three runs each; NN_TORCH 0.8998), over seeds 0-2 0.9049 -> 0.9060 /
# 0.9073 (two runs; NN_TORCH 0.9065); digits 0.9676 -> 0.9639 / 0.9602 (two runs of seeds 0-2; 1-5 test rows of
# 360 per seed): worse there, a few test rows better on the other three.  In session 12 it cost letter (then with
# unscaled inputs) and two of three binary tables at 60 s, so binary keeps 0.
PROBLEM_TYPE_DEFAULTS = {
    "multiclass": {"numeric_transform": "minmax_or_quantile", "numeric_scale": 5.0, "label_smoothing": 0.1},
}
OTHER_PROBLEM_TYPES = {"numeric_transform": "quantile", "numeric_scale": 1.0, "label_smoothing": 0.0}


def problem_type_default(key: str, problem_type: str):
    """What ``"auto"`` means for a setting that depends on the problem type itself (binary and multiclass
    differ, which ``TASK_DEFAULTS`` cannot say)."""
    return PROBLEM_TYPE_DEFAULTS.get(problem_type, OTHER_PROBLEM_TYPES)[key]


def resolve_task_defaults(params: dict, regression: bool) -> dict:
    """``params`` with every ``"auto"`` of ``TASK_DEFAULTS`` replaced by the task's value (a copy);
    ``auto_batch_rows`` is not a user setting and is always the task's."""
    values = TASK_DEFAULTS["regression" if regression else "classification"]
    resolved = {k: v for k, v in values.items() if params.get(k) == "auto"}
    return {**params, **resolved, "auto_batch_rows": values["auto_batch_rows"]}


def numeric_transform(params: dict, problem_type: str) -> str:
    """The numeric transform a fit uses: ``quantile_transform`` (the setting before ``numeric_transform``
    existed) wins where a user set it, so that an old configuration keeps meaning what it meant; ``"auto"``
    is the problem type's (``PROBLEM_TYPE_DEFAULTS``)."""
    legacy = params.get("quantile_transform")
    if legacy is not None:
        if not isinstance(legacy, (bool, int)) or legacy not in (0, 1):
            raise ValueError(f"quantile_transform takes True or False (or None: numeric_transform decides), got "
                             f"{legacy!r}; for other transforms set numeric_transform")
        return "quantile" if legacy else "none"
    if params["numeric_transform"] == "auto":
        return problem_type_default("numeric_transform", problem_type)
    return params["numeric_transform"]


def checked_numeric_scale(value) -> float:
    """``value`` as a float if it is a usable ``numeric_scale``; the one check, shared by the setting and by
    ``FeatureTokenizer``.  numbers.Real: a search space may hand over a numpy number; bool is an int in Python
    but no scale."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"numeric_scale must be a positive number (the MAYA setting also takes 'auto'), "
                         f"got {value!r}")
    return float(value)


def numeric_scale(params: dict, problem_type: str) -> float:
    """The tokenizer's numeric input multiplier (``FeatureTokenizer``): ``"auto"`` is the problem type's."""
    value = params.get("numeric_scale", "auto")
    if value == "auto":
        return problem_type_default("numeric_scale", problem_type)
    return checked_numeric_scale(value)


def checked_label_smoothing(value) -> float:
    """``value`` as a float if it is a usable smoothing, a number in [0, 1); None is the old "off".  The one check,
    shared by the setting and by ``make_loss``: text and bool fail here, naming the setting, rather than inside
    ``float()`` or as a silent 1.0."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0.0 <= value < 1.0:
        raise ValueError(f"label_smoothing must be a number in [0, 1) (the MAYA setting also takes 'auto'), "
                         f"got {value!r}")
    return float(value)


def label_smoothing(params: dict, problem_type: str, eval_metric) -> float:
    """The smoothing of the classification targets.  ``"auto"`` is the problem type's, but 0 wherever the metric
    scores or ranks probabilities (``needs_proba``: log loss, multiclass ROC-AUC; ``needs_threshold``: binary
    ROC-AUC): smoothing pulls every predicted probability towards uniform, which a proper score such as log loss
    charges for, while accuracy only sees the argmax."""
    value = params.get("label_smoothing", "auto")
    if isinstance(value, str) and value == "auto":
        if getattr(eval_metric, "needs_proba", False) or getattr(eval_metric, "needs_threshold", False):
            return 0.0
        return problem_type_default("label_smoothing", problem_type)
    return checked_label_smoothing(value)
