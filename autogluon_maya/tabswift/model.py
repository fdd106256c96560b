"""TabSwift as an AutoGluon-Tabular model (``hyperparameters={"TABSWIFT": {...}}``).

In-context learning: ``fit`` loads the pretrained network, fits the per-variant preprocessing on the
training rows and stores them as the context (optionally fine-tunes, optionally picks the early-exit
threshold τ on the validation rows); ``predict_proba`` runs the cached engine.  Choices that follow
from that:
- folds are fitted one after another in this process (``sequential_local``; each fold would otherwise
  load the weights in its own worker for a fit that takes seconds), then one model on all rows is refit
  (``refit_folds``), since more context rows help an ICL model and cost no training;
- the weights are saved beside the pickle as safetensors (config + checksum), never pickled: a
  fine-tuned network is preserved exactly, and loading never runs pickled torch code;
- the members' context caches are saved too (``disk_cache_mb``; float16 block inputs beside the weights): AutoGluon
  loads a model from disk for every predict call unless the predictor is persisted, and without them each such
  call would encode every member's context again;
- a model fitted on a GPU loads on a CPU-only machine (the network is rebuilt on the device chosen at
  load time, and so are the saved caches' keys and values).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np
import pandas as pd
from autogluon.common.features.types import R_BOOL, R_CATEGORY, R_FLOAT, R_INT, S_TEXT_AS_CATEGORY, S_TEXT_NGRAM
from autogluon.core.constants import BINARY, MULTICLASS, REGRESSION
from autogluon.core.hpo.constants import RAY_BACKEND
from autogluon.tabular.models.abstract.abstract_torch_model import AbstractTorchModel

from ..common.ag_model import TORCH_IMPORT_BYTES, TorchPluginMixin, param_value

from .defaults import DEFAULT_PARAMS

logger = logging.getLogger(f"autogluon.ext.{__name__}")
WEIGHTS_NAME = "tabswift_weights"
CACHES_NAME = "tabswift_context_caches.safetensors"
TAU_CANDIDATES = (0.99, 0.95, 0.9, 0.8, 0.7, 0.6, 0.5)
#: set in params_trained when "auto" (or the environment variable) chose the weights: why, for the refit
#: that loads the same weights by their explicit name (``sources.WeightsChoice.replay``)
CHOICE_KEY = "checkpoint_chosen"
#: set in params_trained by a fine_tune="auto" fit, beside fine_tune (True/False) and fine_tune_steps, so a refit
#: without validation rows (refit_full, a bag's all-rows model) repeats the decision and says so.  The text
#: depends on the outcome only: a bag compresses its folds' params_trained by majority vote, and equal texts
#: for equal outcomes make the vote on the text agree with the vote on fine_tune (ties: the first fold's)
FINE_TUNE_CHOICE_KEY = "fine_tune_chosen"
AUTO_CHOICES = {True: "fine_tune='auto' kept the fine-tuned weights on validation",
                False: "fine_tune='auto' kept the zero-shot weights"}
FINE_TUNE_MODES = (True, False, "auto")


class FitPlan(NamedTuple):
    """What one TabSwift fit does (``TabSwiftModel._plan``)."""
    task: str  # network.CLASSIFICATION or network.REGRESSION
    has_val: bool  # validation rows given: decisions are made on them
    mode: object  # fine-tuning: True, False or "auto"
    tau: object  # the early exit asked for: None, "auto" or a threshold
    wants_exit: bool  # exit heads are worth training (an explicit τ, or "auto" with validation rows)
    headless: bool  # the checkpoint has no exit heads
    prior_share: Optional[float]  # a refit: the share of the fits it replaces that fell back to the prior
    prior_basis: str  # what that share was taken over
    prior_refit: bool  # a refit repeating a fall-back to the prior


def replay_steps(p: dict) -> int:
    """The fine-tuning steps a refit without validation rows runs: the best step count of the fit it replaces.
    A bag hands its refit the mean of its folds' records (AutoGluon's compressed params: ints as a rounded mean,
    floats as a mean), where a fold that kept zero-shot weights counts 0 steps; ``fine_tune_share`` (1.0 for a
    fold that kept fine-tuned weights, 0.0 otherwise) is averaged over the same folds, so the ratio of the two is
    the mean over the folds that fine-tuned."""
    steps = float(p["fine_tune_steps"])
    share = p.get("fine_tune_share")
    return int(round(steps / float(share))) if share else int(round(steps))


#: a refit's replayed fine-tuning may take this many times what the fit it replaces spent fine-tuning: its
#: episodes can be larger (a fold's context has fewer rows than all of them) and the machine busier
REPLAY_TIME_FACTOR = 2.0


def replay_seconds(p: dict) -> Optional[float]:
    """The seconds a refit's replayed fine-tuning may run: ``REPLAY_TIME_FACTOR`` x what the fit it replaces spent
    fine-tuning (the mean over a bag's folds that fine-tuned, as ``replay_steps``).  AutoGluon gives a refit no time
    limit; the replay runs at most the steps the folds kept, without their validation passes, so the folds' own
    time bounds it.  None where nothing was recorded (a user's explicit setting): no bound."""
    seconds = p.get("fine_tune_seconds")
    if seconds is None:
        return None
    share = p.get("fine_tune_share")
    return REPLAY_TIME_FACTOR * (float(seconds) / float(share) if share else float(seconds))


def describe_checkpoint(path) -> str:
    from .weights import read_checkpoint_info

    info = read_checkpoint_info(path)
    c, t = info["config"], info.get("metadata", {}).get("training", {})
    lineage = info.get("metadata", {}).get("lineage")
    text = f"{Path(path).name}: {c['n_layers']} layers, d={c['d_model']}, {c['n_registers']} registers"
    if lineage:  # every stage it went through, not only the last one
        tasks, hours = sum(s["tasks"] for s in lineage), sum(s["train_hours"] for s in lineage)
        text += (f"; pretrained by autogluon_maya.pretraining on {tasks:,} synthetic tasks in {hours:.2f} h "
                 f"on {t.get('hardware', 'CPU')}: " + "; ".join(
                     f"{s['step']}: {s['tasks']:,} tasks, {s['train_hours']:.2f} h ({s['rows']})" for s in lineage))
    elif t:
        text += (f"; pretrained by autogluon_maya.pretraining, stage {t.get('stage')}, {t.get('steps_done')} steps, "
                 f"{t.get('tasks_seen')} synthetic tasks, {t.get('train_hours')} h on {t.get('hardware')}")
    source = info.get("metadata", {}).get("source", {})
    if source.get("format"):
        digest = str(source.get("sha256"))[:12]
        text += f"; converted from {source['format']} ({source.get('file')}, sha256 {digest}...)"
    return text


#: measured in a fresh process: what a zero-shot fit of the shipped checkpoint adds beyond its context
#: caches and attention blocks (the network, the preprocessing, torch's allocator pools)
FIT_OVERHEAD_BYTES = 50 * 2 ** 20
#: the authors' released network (24 blocks, d = 192, 4 heads, 64 registers)
RELEASED_DIMS = (24, 192, 4, 64)


def _network_dims(checkpoint_path) -> tuple:
    """(layers, d_model, heads, registers) of the checkpoint a fit would load, read from its JSON config
    without loading weights or touching the network: the shipped one for None/"shipped", the file named by a
    path, the converted released copy for "hub"/"auto" when it is in the cache; "hub" otherwise means the
    released size, and so does "auto" when the released file waits in the local Hugging Face hub cache (the fit
    converts it); otherwise "auto" means the shipped one (what it falls back to without the network)."""
    import json
    import os

    from .defaults import SHIPPED_CHECKPOINT
    from .weights import checkpoint_paths

    requested = checkpoint_path
    if requested in (None, "", "auto"):
        requested = os.environ.get("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT") or requested
    candidates = []
    if requested in (None, "", "shipped"):
        candidates = [SHIPPED_CHECKPOINT]
    elif requested in ("auto", "hub"):
        from .hub import cached_released, converted_path
        from .sources import auto_choice_made

        chosen = auto_choice_made() if requested == "auto" else None
        candidates = [chosen] if chosen is not None else [converted_path()]
        if requested == "auto" and chosen is None and cached_released() is None:
            candidates.append(SHIPPED_CHECKPOINT)
    else:
        candidates = [Path(str(requested))]
    for path in candidates:
        try:
            config = json.loads(checkpoint_paths(path)[1].read_text())["config"]
            return (int(config["n_layers"]), int(config["d_model"]), int(config["n_heads"]),
                    int(config["n_registers"]))
        except (OSError, KeyError, ValueError, TypeError):
            continue
    return RELEASED_DIMS  # a released swift.ckpt not converted yet, or a file this reading cannot parse


class TabSwiftModel(TorchPluginMixin, AbstractTorchModel):
    """TabSwift: pretrained in-context-learning transformer with registers, gated attention and early exit.

    Paper: TabSwift: An Efficient Tabular Foundation Model with Row-Wise Attention (ICML 2026)
    Authors: Si-Yang Liu, Han-Jia Ye
    Codebase: https://github.com/LAMDA-Tabular/TabSwift (the network is re-implemented here, not copied)
    License: MIT (the authors' code); Apache-2.0 (this implementation)

    Hyperparameters: ``autogluon_maya.tabswift.defaults.DEFAULT_PARAMS`` and the README.
    """

    ag_key = "TABSWIFT"
    ag_name = "TabSwift"
    ag_priority = 65
    seed_name = "random_seed"
    _supported_problem_types = [BINARY, MULTICLASS, REGRESSION]
    # more classes than C_max go through the class hierarchy, so there is no class cap
    # AutoGluon's text n-gram and text-as-category features are left out, as its own NN_TORCH does:
    # dozens of sparse count columns drowned a bool-XOR-date signal (accuracy 0.95 -> 0.49-0.55)
    _default_auxiliary_params_extra = {"valid_raw_types": [R_BOOL, R_INT, R_FLOAT, R_CATEGORY],
                                       "ignored_type_group_special": [S_TEXT_NGRAM, S_TEXT_AS_CATEGORY],
                                       "max_rows": 100_000, "max_features": 2_000}
    _default_ag_args_ensemble_extra = {"fold_fitting_strategy": "sequential_local", "refit_folds": True}
    default_num_gpus = 1
    default_resources_physical_cores_only = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._fit_summary: Dict = {}
        self._fit_threads: Optional[int] = None

    # ---- hyperparameters ----------------------------------------------------------------
    def _set_default_params(self):
        for k, v in DEFAULT_PARAMS.items():
            self._set_default_param_value(k, v)

    def _get_default_searchspace(self) -> dict:
        from .search_space import tabswift_search_space

        return tabswift_search_space()

    def _get_hpo_backend(self):
        return RAY_BACKEND

    def _get_default_stopping_metric(self):
        return self.eval_metric

    def weights_choice(self):
        """The weights to load and why (``sources.choose_weights``): ``"auto"`` (default) = the authors'
        released weights when they are on this machine (``autogluon_maya.prefetch_weights()`` puts them there),
        else the shipped checkpoint; ``"shipped"``/None, ``"hub"``, a path; ``$AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT``
        replaces ``"auto"`` and None."""
        from .sources import choose_weights

        return choose_weights(self._get_model_params().get("checkpoint_path"))

    def checkpoint_path(self) -> Path:
        """Our checkpoint to load (see ``weights_choice``)."""
        return self.weights_choice().path

    # ---- fit ----------------------------------------------------------------------------
    def _fit(self, X: pd.DataFrame, y: pd.Series, X_val: Optional[pd.DataFrame] = None,
             y_val: Optional[pd.Series] = None, time_limit: Optional[float] = None, num_cpus: int = 1,
             num_gpus: float = 0, verbosity: int = 2, **kwargs):
        """The fit's steps: the weights (``_load_weights``), the plan (``_plan``: fine-tuning mode, τ, whether a
        refit repeats a fall-back to the prior), the preprocessing and the context (``_build_context``), the
        thread count, fine-tuning (``_fine_tune``), the exit heads and τ (``_early_exit``), the check against the
        prior (``_prior_step``), and the record a refit repeats (``_record_for_refits``)."""
        budget = self._fit_budget(time_limit)
        p = self._get_model_params()
        seed, device = self._start_torch_fit(p, num_cpus, num_gpus)
        if kwargs.get("sample_weight") is not None:  # in-context learning has no loss to weight
            logger.log(30, "\tWarning: TabSwift ignores sample_weight: every context row counts the same")
        network, choice, weights = self._load_weights(p, device)
        plan = self._plan(p, X_val, y_val, network)
        self.model = ens = self._build_context(network, self.preprocess(X, is_train=True), np.asarray(y), p, plan,
                                               seed)
        summary: Dict = {"context_rows": len(ens.y_context_), "members": len(ens.members_),
                         "checkpoint": str(choice.path), "weights": weights}
        trains = (plan.mode is True) or (plan.mode == "auto" and plan.has_val) or (plan.wants_exit and plan.headless)
        threads, probe_seconds = self._choose_threads(ens, p, seed, num_cpus, device, summary, trains=trains)
        score_fn, y_val_np = self._validation_score(X_val, y_val, threads) if plan.has_val else (None, None)
        # a step is episodes_per_step episodes, forward + backward (~3 forwards each); without this the
        # first step, whose duration is not known yet, could start just before the deadline
        first_step = 3.0 * int(p["fine_tune_episodes_per_step"]) * probe_seconds
        summary["fine_tune_decision"] = self._fine_tune(ens, p, plan, score_fn, budget, time_limit, first_step, seed,
                                                        summary)
        self._early_exit(ens, p, plan, score_fn, budget, time_limit, first_step, seed, summary)
        summary["prior_check"] = self._prior_step(np.asarray(y), y_val_np, plan, summary, score_fn, budget)
        summary["members_encoded_at_fit"] = self._warm_caches(ens, p, plan, budget, threads)
        self._record_for_refits(p, choice, plan, summary)
        self._fit_summary = summary

    def _load_weights(self, p: Dict, device) -> tuple:
        """Step 1: (the network on ``device``, the ``WeightsChoice``, its record for the model's info), logged."""
        from .weights import load_checkpoint

        choice = self.weights_choice()  # "auto" reads this machine's caches only: no fit waits for a network
        network = load_checkpoint(choice.path).to(device)  # verifies the sha256 recorded below
        weights = choice.record()
        if p.get(CHOICE_KEY):  # a refit (refit_full, refit_folds) repeating the decision of the fit it replaces
            weights["repeats"] = p[CHOICE_KEY]
        logger.log(20, f"\tTabSwift weights: {choice.source}, {describe_checkpoint(choice.path)}; sha256 "
                       f"{weights['sha256'][:16]}...; checkpoint_path={choice.requested!r}: {choice.reason}"
                       + (f" (repeating: {p[CHOICE_KEY]})" if p.get(CHOICE_KEY) else ""))
        return network, choice, weights

    def _plan(self, p: Dict, X_val, y_val, network) -> "FitPlan":
        """Step 2: what this fit will do, from its settings and data: the fine-tuning mode (True, False, "auto"),
        the τ asked for, and for a refit (no validation rows) whether it repeats a fall-back to the prior (then
        nothing is fine-tuned and nothing exits early).  Exit heads are worth training only if early exit can be
        used: an explicit τ, or "auto" with validation rows to choose it on."""
        from .network import CLASSIFICATION
        from .network import REGRESSION as REG_TASK

        has_val = X_val is not None and y_val is not None and len(X_val) > 0
        mode = p["fine_tune"]
        if isinstance(mode, str) or mode is None:  # None: False, as before "auto" existed
            mode = {"auto": "auto", "true": True, "false": False, "none": False}.get(str(mode).lower(), mode)
        if mode not in FINE_TUNE_MODES:
            raise ValueError(f"TabSwift fine_tune must be True, False or 'auto', got {p['fine_tune']!r}")
        mode = mode if mode == "auto" else bool(mode)  # 0 / 1 / numpy bools as False / True
        share, share_basis = (None, "") if has_val else self._prior_share_of_checked(p)
        prior_refit = share is not None and share > 0.5
        tau = None if prior_refit else p["tau"]
        return FitPlan(task=CLASSIFICATION if self.problem_type in (BINARY, MULTICLASS) else REG_TASK,
                       has_val=has_val, mode=False if prior_refit else mode, tau=tau,
                       wants_exit=tau is not None and (tau != "auto" or has_val),
                       headless=network.n_exit_layers == 0,  # e.g. the authors' released weights
                       prior_share=share, prior_basis=share_basis, prior_refit=prior_refit)

    def _build_context(self, network, X: pd.DataFrame, y: np.ndarray, p: Dict, plan: "FitPlan", seed: int):
        """Step 3: the ensemble's members (per-variant preprocessing fitted on the training rows) and their context."""
        from .ensemble import EnsembleSettings, TabSwiftEnsemble
        from .network import CLASSIFICATION

        tau = plan.tau
        ens = TabSwiftEnsemble(network, plan.task, EnsembleSettings(
            n_estimators=int(p["n_estimators"]), norm_methods=tuple(p["norm_methods"]),
            softmax_temperature=float(p["softmax_temperature"]), max_context_rows=int(p["max_context_rows"]),
            outlier_threshold=float(p["outlier_threshold"]), random_state=seed, chunk_size=int(p["chunk_size"]),
            tau=None if tau in (None, "auto") or plan.headless else float(tau), cache_max_mb=float(p["cache_max_mb"]),
            wide_features=str(p.get("wide_features", "select")), pipeline=str(p.get("pipeline", "ours"))))
        classification = plan.task == CLASSIFICATION
        ens.keep_inputs_bytes = int(float(p["disk_cache_mb"]) * 2 ** 20)  # what a saved model stores of its caches
        ens.fit(X, y.astype(np.int64) if classification else y.astype(np.float64),
                n_classes=self.num_classes if classification else None)
        return ens

    def _warm_caches(self, ens, p: Dict, plan: "FitPlan", budget, threads: int) -> int:
        """Step 7: a fit without validation rows (a refit) encodes its members' contexts before it is saved, so
        that the saved model carries them (``disk_cache_mb``); member by member, none started once the next is
        due to end past the time budget.  With validation rows AutoGluon's own prediction of them (the score,
        or a fold's out-of-fold rows) encodes them before the save.  Returns the members encoded here."""
        from ..common.training import torch_threads

        if plan.has_val or ens.network is None or float(p["disk_cache_mb"]) <= 0:
            return 0
        end = None if budget.limit is None else budget.start + budget.limit
        with torch_threads(threads):
            return ens.warm(deadline=end, clock=budget.clock)

    def _validation_score(self, X_val, y_val, threads: int) -> tuple:
        """(a function scoring the ensemble as it now predicts on the validation rows, on the stopping metric and
        ``threads`` torch threads; the validation labels)."""
        from ..common.training import torch_threads

        X_val_p, y_val_np = self.preprocess(X_val), np.asarray(y_val)

        def score_fn() -> float:
            with torch_threads(threads):
                return self.score_with_y_pred_proba(y=y_val_np, y_pred_proba=self._ensemble_proba(X_val_p),
                                                    metric=self.stopping_metric)

        return score_fn, y_val_np

    def _fine_tune(self, ens, p: Dict, plan: "FitPlan", score_fn, budget, time_limit, first_step: float, seed: int,
                   summary: Dict) -> Dict:
        """Step 4: fine-tune or not, and why: ``"auto"`` with validation rows decides on them
        (``_fine_tune_auto``); ``"auto"`` without stays zero-shot; True with validation rows keeps the best
        validated step; True without (a refit) replays the step count of the fit it replaces, within the time
        that took; False (or a refit of a fall-back to the prior) does nothing."""
        from .finetune import auto_rule, fine_tune

        mode, has_val = plan.mode, plan.has_val
        ft_common = dict(lr=float(p["fine_tune_lr"]), episodes_per_step=int(p["fine_tune_episodes_per_step"]),
                         rows=int(p["fine_tune_rows"]), seed=seed)
        if mode == "auto" and has_val:
            decision = self._fine_tune_auto(ens, p, score_fn, budget, time_limit, first_step, ft_common, summary)
        elif mode == "auto":  # a first fit without validation rows; refits get True/False from their folds
            rule = auto_rule(has_val=False, n_classes=None, max_classes=0, context_rows=0, seconds_left=None,
                             step_seconds=0.0, min_steps=0, eval_every=1)
            decision = {"requested": "auto", "fine_tuned": rule.pop("fine_tune"), **rule, "steps_run": 0,
                        "best_step": 0}
            logger.log(20, f"\tTabSwift fine_tune='auto': zero-shot ({rule['reason']})")
        elif mode and has_val:
            deadline = None if time_limit is None else budget.start + 0.7 * time_limit
            n_eval = max(1, int(p["fine_tune_eval_members"]))
            summary.update(fine_tune(ens, self._no_exit_score(ens, score_fn, ens.members_[:n_eval]),
                                     steps=int(p["fine_tune_steps"]), eval_every=int(p["fine_tune_eval_every"]),
                                     patience=int(p["fine_tune_patience"]), deadline=deadline,
                                     first_step_seconds=first_step, **ft_common))
            summary.pop("history", None)
            kept = summary["best_step"] > 0
            decision = {
                "requested": True, "fine_tuned": kept, "rule": "requested",
                "reason": "fine_tune=True: the best validation step is kept (step 0 = the pretrained weights)",
                "steps_run": int(summary["fine_tune_steps"]), "best_step": int(summary["best_step"]),
                "stop_reason": summary.get("stop_reason"), "zero_shot_val_score": summary.get("zero_shot_val_score"),
                "fine_tuned_val_score": summary.get("best_val_score") if kept else None, "val_members": n_eval}
        elif mode:  # refit_full / no validation: replay the step count found with validation
            steps, bound = replay_steps(p), replay_seconds(p)
            deadlines = [time.time() + bound] if bound is not None else []
            if time_limit is not None:
                deadlines.append(time.time() + budget.remaining())
            if steps > 0:
                summary.update(fine_tune(ens, None, steps=steps, eval_every=steps, patience=1,
                                         deadline=min(deadlines) if deadlines else None,
                                         schedule_steps=p.get("fine_tune_schedule_steps") or steps, **ft_common))
                summary.pop("history", None)
            ran = int(summary.get("fine_tune_steps", 0))  # 0 when fine-tuning skipped the table (> C_max classes)
            decision = {
                "requested": True, "fine_tuned": ran > 0, "rule": "replay",
                "reason": f"no validation rows: {steps} steps replayed, the step count the validated fit kept"
                          + (f", within {bound:.1f} s ({REPLAY_TIME_FACTOR:g} x the time its fine-tuning took)"
                             if bound is not None else ""),
                "steps_run": ran, "best_step": ran, "stop_reason": summary.get("stop_reason")}
        else:
            decision = {
                "requested": False, "fine_tuned": False, "rule": "prior" if plan.prior_refit else "requested",
                "reason": "the fit it replaces fell back to the prior" if plan.prior_refit else "fine_tune=False",
                "steps_run": 0, "best_step": 0}
        if p.get(FINE_TUNE_CHOICE_KEY) and not (mode == "auto") and not plan.prior_refit:
            # a refit of a fine_tune="auto" fit: the folds' (or the original model's) decision, repeated
            decision["repeats"] = p[FINE_TUNE_CHOICE_KEY]
            logger.log(20, f"\tTabSwift: {'fine-tuned' if mode else 'zero-shot'} ({decision.get('steps_run', 0)} "
                           f"steps), repeating: {p[FINE_TUNE_CHOICE_KEY]}")
        return decision

    def _early_exit(self, ens, p: Dict, plan: "FitPlan", score_fn, budget, time_limit, first_step: float, seed: int,
                    summary: Dict) -> None:
        """Step 5: the exit heads and τ.  Exit heads are used only if they were trained on the backbone as it is
        now: fine-tuning marks them stale, heads added to a checkpoint without any start stale; training clears
        the mark, and heads still stale below are dropped, so neither this fit nor a later τ can exit with them.
        An explicit τ after retrained heads is checked on validation; ``"auto"`` is chosen there."""
        network, tau = ens.network, plan.tau
        if plan.wants_exit and plan.headless:
            network.add_exit_heads()
            logger.log(20, f"\tTabSwift: the checkpoint has no exit heads (the authors' released weights ship "
                           f"none): training them on this table with the backbone frozen, for tau={tau!r}")
        if plan.wants_exit and network.exit_heads_stale:
            summary.update(self._train_exit_heads(ens, p, seed, budget, time_limit, first_step, fresh=plan.headless))
            if not network.exit_heads_stale and tau != "auto":
                ens.tau = float(tau)
                if plan.has_val:
                    summary.update(self._check_retrained_tau(ens, score_fn, float(tau), float(p["tau_max_loss"]),
                                                             budget))
        if network.exit_heads_stale:
            summary.update(self._drop_stale_exit_heads(ens, p, tau if plan.wants_exit else None,
                                                       fresh=plan.headless))
            if plan.wants_exit:
                tau = None
        if tau == "auto":
            if plan.has_val and network.n_exit_layers:
                summary.update(self._choose_tau(ens, score_fn, float(p["tau_max_loss"]), budget))
            else:
                logger.log(20, "\tTabSwift: tau='auto' needs validation data and exit heads; early exit off")
                ens.tau = None

    def _prior_step(self, y: np.ndarray, y_val, plan: "FitPlan", summary: Dict, score_fn, budget) -> Dict:
        """Step 6: with validation rows, fall back to the prior where the ensemble validates below it
        (``_check_against_prior``); a refit repeats the fit it replaces."""
        if plan.has_val:
            return self._check_against_prior(y, y_val, summary, score_fn, budget)
        share = plan.prior_share
        reason = "no validation rows" if share is None else \
            f"repeats the fit it replaces ({plan.prior_basis}: {'the prior' if plan.prior_refit else 'the network'})"
        if plan.prior_refit:
            self._fall_back_to_prior(self._prior_prediction(y), reason)
        return {"checked": False, "fallback": plan.prior_refit, "reason": reason}

    def _record_for_refits(self, p: Dict, choice, plan: "FitPlan", summary: Dict) -> None:
        """What a refit without validation rows repeats, written by every fit on every path.  AutoGluon gives a
        refit the fit's ``params_trained`` as hyperparameters; a bag first combines its folds' records key by key
        over the first fold's keys (``BaggedEnsembleModel._get_compressed_params``), so a key that one fold
        lacks fails the bag's refit.  Recorded: the weights (``checkpoint_path`` by the value that names them
        again, ``CHOICE_KEY`` the decision "auto" took, "" where none), the fine-tuning outcome, the τ in use,
        and whether the fit fell back to the prior."""
        d, mode = summary["fine_tune_decision"], plan.mode
        kept = bool(d["fine_tuned"])
        decided = choice.replay is not None and choice.replay != p["checkpoint_path"]
        self.params_trained["checkpoint_path"] = choice.replay or p["checkpoint_path"]
        self.params_trained[CHOICE_KEY] = (f"checkpoint_path={choice.requested!r}: {choice.reason}" if decided
                                           else p.get(CHOICE_KEY) or "")
        # validated fine-tuning ran on the cosine horizon fine_tune_steps; a replay on the one it was given
        horizon = p["fine_tune_steps"] if plan.has_val else p.get("fine_tune_schedule_steps") or p["fine_tune_steps"]
        self._record_fine_tune(p, kept, int(d.get("best_step", 0)) if kept else 0,
                               AUTO_CHOICES[kept] if mode == "auto" else p.get(FINE_TUNE_CHOICE_KEY) or "",
                               seconds=float(summary.get("fine_tune_seconds", 0.0)) if kept else 0.0,
                               horizon=int(horizon))
        self.params_trained["tau"] = self.model.tau
        if "prior_share" not in self.params_trained:  # no validation rows: _check_against_prior did not run
            # a refit passes on the record it repeated (a refit of it repeats the same decision); a first fit
            # without validation rows has none
            self.params_trained["prior_share"] = float(p["prior_share"]) if p.get("prior_share") is not None \
                else (1.0 if self._prior is not None else 0.0)
            self.params_trained["prior_checked"] = float(p.get("prior_checked") or 0.0)

    def _validated_score(self, summary: Dict) -> Optional[float]:
        """The whole ensemble's validation score as it now predicts, where this fit has measured it, else None:
        by tau="auto" or an explicit tau's check (with and without early exit), and by fine_tune="auto" once it
        has room to fine-tune (the zero-shot ensemble, and the fine-tuned one it keeps; both without early
        exit)."""
        tau = self.model.tau
        if tau is not None:
            for t, score, _ in summary.get("tau_table", ()):
                if t == tau:
                    return float(score)
            if summary.get("tau_requested") == tau:  # an explicit tau kept by its check
                base = float(summary["val_score_no_exit"])
                return base - float(summary["tau_requested_val_loss"]) * max(abs(base), 1e-12)
            return None
        if "val_score_no_exit" in summary:
            return float(summary["val_score_no_exit"])
        d = summary.get("fine_tune_decision") or {}
        if d.get("requested") != "auto":
            return None
        score = d.get("fine_tuned_val_score") if d.get("fine_tuned") else d.get("zero_shot_val_score")
        return None if score is None else float(score)

    def _check_against_prior(self, y: np.ndarray, y_val: np.ndarray, summary: Dict, score_fn, budget) -> Dict:
        """Falls back to the prior (``TorchPluginMixin._prior_prediction``) where the whole ensemble's validation
        score is below the prior's on the stopping metric: a pretrained network that does not suit a table can
        do worse than the class frequencies or the mean.  The score is the one the fit measured
        (``_validated_score``), else one prediction of the validation rows (``score_fn``) while at least half
        of the time limit is left: the members' context encodings it builds stay cached for the prediction of
        the same rows AutoGluon makes next (out-of-fold, or the validation score), so the check adds the
        queries' share of one prediction.  Records for refits ``prior_checked`` (1.0 compared with the prior, 0.0
        had no time to) and ``prior_share`` (1.0 fell back, else 0.0), which a bag averages over its folds."""
        self.params_trained["prior_share"] = self.params_trained["prior_checked"] = 0.0
        score = self._validated_score(summary)
        if score is None:
            left = budget.remaining()
            if budget.limit is not None and left < 0.5 * budget.limit:
                return {"checked": False, "fallback": False,
                        "reason": f"{left:.1f} s left of {budget.limit:.1f} s: no time to score the ensemble on "
                                  f"validation"}
            score = float(score_fn())
        self.params_trained["prior_checked"] = 1.0
        prior = self._prior_prediction(y)
        prior_score, reason = self._prior_verdict(score, y_val, prior)
        check = {"checked": True, "metric": self.stopping_metric.name, "tabswift": score, "prior": prior_score,
                 "fallback": False}
        if not reason:
            return check
        self.params_trained["prior_share"] = 1.0
        self._fall_back_to_prior(prior, reason)
        return {**check, "fallback": True, "reason": reason}

    @staticmethod
    def _prior_share_of_checked(p: Dict) -> Tuple[Optional[float], str]:
        """(the share of the fits a refit replaces that fell back to the prior, what it was taken over).  Among
        the fits that compared with the prior: a bag averages ``prior_share`` and ``prior_checked`` over its
        folds, so their ratio leaves out the folds that had no time to check (they kept their network without a
        verdict).  Where fewer than half of the folds checked, the share among all of them: a minority of checks
        does not overrule the networks whose out-of-fold predictions the next level was fitted on.  (None, "")
        where the record is absent (not a refit)."""
        share, checked = p.get("prior_share"), p.get("prior_checked")
        if share is None:
            return None, ""
        share = float(share)
        if checked is None:
            return share, f"{share:.0%} of its fits fell back"
        checked = float(checked)
        if checked == 0.0:
            return 0.0, "none of its fits compared with the prior"
        if checked < 0.5:
            return share, f"{share:.0%} of its fits fell back, {checked:.0%} compared with the prior"
        return share / checked, f"{share / checked:.0%} of the fits that compared with the prior fell back"

    def _fall_back_to_prior(self, prior, reason: str) -> None:
        """Predict ``prior`` from now on.  The ensemble stays for its record (tau) but drops its network: weights
        that will never run are neither kept in memory nor saved beside the model, and ``load`` does not look
        for them."""
        self._prior = prior
        self.model.set_network(None)  # drops the context caches too
        logger.warning(f"\tTabSwift predicts the prior instead: {reason}")

    @staticmethod
    def _no_exit_score(ens, score_fn, members):
        """A validation score of ``members`` only, without early exit.

        Fine-tuning validates with the first ``fine_tune_eval_members`` members: every evaluation
        re-encodes the context (the weights changed), which dominates fine-tuning time on CPU.  Without
        early exit: the exit heads still belong to the pretrained backbone while it is being tuned (they
        are retrained afterwards with tau set, dropped without), so exits would make the step selection
        depend on stale heads."""
        def score() -> float:
            kept_members, kept_tau = ens.members_, ens.tau
            ens.members_, ens.tau = list(members), None
            try:
                return score_fn()
            finally:
                ens.members_, ens.tau = kept_members, kept_tau

        return score

    def _fine_tune_auto(self, ens, p, score_fn, budget, time_limit, first_step: float, ft_common: Dict,
                        summary: Dict) -> Dict:
        """``fine_tune="auto"`` with validation rows (``finetune.fine_tune_auto``): fine-tune when the minimum
        useful step count fits before 70 % of the time limit (the share fine-tuning had before "auto"), keep
        the result only if the whole ensemble validates better with it; record the decision for the refits."""
        from .finetune import Deadlines, Schedule, fine_tune_auto

        members = list(ens.members_)
        n_eval = max(1, int(p["fine_tune_eval_members"]))
        limited = time_limit is not None
        schedule = Schedule(steps=int(p["fine_tune_steps"]), eval_every=int(p["fine_tune_eval_every"]),
                            patience=int(p["fine_tune_patience"]), **ft_common)
        deadlines = Deadlines(budget.start + 0.7 * time_limit if limited else None,
                              budget.start + 0.85 * time_limit if limited else None, first_step)
        result = fine_tune_auto(
            ens, self._no_exit_score(ens, score_fn, members[:n_eval]), self._no_exit_score(ens, score_fn, members),
            schedule, deadlines, eval_share=min(1.0, n_eval / len(members)), min_steps=int(p["fine_tune_min_steps"]))
        decision = result.pop("decision")
        result.pop("history", None)
        summary.update(result)
        decision.update(metric=self.stopping_metric.name, val_members=len(members))
        kept = bool(decision["fine_tuned"])
        verdict = "fine-tuned weights kept" if kept else "zero-shot"
        logger.log(20, f"\tTabSwift fine_tune='auto': {verdict} (rule {decision['rule']}): {decision['reason']}")
        return decision

    def _record_auto(self, p, kept: bool, steps: int = 0, seconds: float = 0.0) -> None:
        """params_trained of a fine_tune="auto" fit (``_record_fine_tune`` with the decision's text)."""
        self._record_fine_tune(p, kept, steps, AUTO_CHOICES[bool(kept)], seconds)

    def _record_fine_tune(self, p, kept: bool, steps: int, choice: str, seconds: float = 0.0,
                          horizon: Optional[int] = None) -> None:
        """The fine-tuning outcome as explicit values a refit repeats: whether the kept weights are fine-tuned,
        their step count and the cosine's horizon; ``fine_tune_share`` (1.0 or 0.0) lets a bag's refit average
        the step count over the folds that fine-tuned (``replay_steps``); ``choice``: the "auto" decision's text
        ("" where fine_tune was given); ``seconds``: how long the fine-tuning ran, the bound of a refit's replay
        (``replay_seconds``); ``horizon``: the cosine's horizon the fine-tuning ran on (default ``fine_tune_steps``)."""
        self.params_trained["fine_tune"] = bool(kept)
        self.params_trained["fine_tune_steps"] = int(steps)
        self.params_trained["fine_tune_seconds"] = float(seconds)
        self.params_trained["fine_tune_share"] = 1.0 if kept else 0.0
        self.params_trained["fine_tune_schedule_steps"] = int(p["fine_tune_steps"] if horizon is None else horizon)
        self.params_trained[FINE_TUNE_CHOICE_KEY] = choice

    def _choose_threads(self, ens, p, seed: int, num_cpus: int, device, summary: Dict, trains: bool) -> tuple:
        """The fit's torch thread count and one probe episode's forward seconds at that count.

        On CPU with more than one core, one thread or all of them, whichever runs a fine-tuning-sized
        episode faster now (``adaptive_threads``): torch's threads spin-wait at every parallel region,
        and with another process on one of 2 cores, 2 threads ran a fine-tuning step in 5-9 s where
        1 thread took 0.3-0.5 s, and a 500-row prediction in 1.7 s instead of 0.26 s.  The count is
        kept for the fit and for predict (``_get_child_num_cpus``).  ``trains``: the fit will train
        something (fine-tuning or exit heads), whose first step is budgeted from the probe."""
        import torch

        from ..common.training import faster_thread_count
        from .finetune import episode_probe

        threads, probe_seconds = max(1, int(num_cpus or 1)), 0.0
        self._fit_threads = summary["threads"] = threads
        choose = p["adaptive_threads"] and threads > 1
        if len(ens.y_context_) < 2 or not (choose or trains) or (device.type != "cpu" and not trains):
            return threads, probe_seconds  # (an episode needs a support and a query row)
        probe = episode_probe(ens, rows=int(p["fine_tune_rows"]), seed=seed)
        if device.type != "cpu":  # no thread choice; the second call is timed (the first pays kernel set-up)
            probe()
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            probe()
            torch.cuda.synchronize(device)
            return threads, time.perf_counter() - t0
        if choose:
            threads, times = faster_thread_count(probe, threads)
            probe_seconds = times[threads]
            summary["thread_probe_seconds"] = times
            logger.log(15, f"\tTabSwift: {threads} torch thread(s) (probe episode: " +
                       ", ".join(f"{n} thread(s) {t * 1000:.0f} ms" for n, t in times.items()) + ")")
        elif trains:
            t0 = time.perf_counter()
            probe()
            probe_seconds = time.perf_counter() - t0
        torch.set_num_threads(threads)
        self._fit_threads = summary["threads"] = threads
        return threads, probe_seconds

    def _get_child_num_cpus(self) -> Optional[int]:
        """Threads for predict: in the fitting process, the count the fit's probe chose (the out-of-fold and
        validation predictions that follow run on the same machine at the same moment); a loaded model, the
        cores it was given (``save`` keeps no probe)."""
        return getattr(self, "_fit_threads", None) or super()._get_child_num_cpus()

    def _train_exit_heads(self, ens, p, seed: int, budget, time_limit, first_step: float, fresh: bool) -> Dict:
        """Train the exit and per-layer heads on the backbone as it is now (frozen): after fine-tuning moved
        it, or on heads just added to a checkpoint without any (``fresh``).  Until 85 % of the time limit."""
        from .finetune import retrain_exit_heads

        steps = int(p["fine_tune_exit_steps"])
        deadline = None if time_limit is None else budget.start + 0.85 * time_limit
        result = retrain_exit_heads(ens, steps, episodes_per_step=int(p["fine_tune_episodes_per_step"]),
                                    rows=int(p["fine_tune_rows"]), seed=seed, deadline=deadline,
                                    first_step_seconds=first_step)
        if result["exit_retrain_steps"]:
            what = "trained on this table" if fresh else "retrained on the fine-tuned backbone"
            logger.log(20, f"\tTabSwift: exit heads {what} ({result['exit_retrain_steps']} steps, "
                           f"{result['exit_retrain_seconds']:.1f} s)")
            if fresh:
                result["exit_heads"] = "trained on this table"
        return result

    def _drop_stale_exit_heads(self, ens, p, tau, fresh: bool) -> Dict:
        """Drop heads that were not trained on the current backbone; with ``tau`` (the early exit this fit
        wanted, None if it wanted none), say why early exit is off."""
        ens.network.drop_exit_heads()
        ens.tau = None
        if tau is None:
            logger.log(20, "\tTabSwift: exit heads dropped: fine-tuning changed the backbone they were trained "
                           "on and this fit does not use early exit (set tau to keep retrained ones)")
            return {"exit_heads": "dropped"}
        cause = "fine_tune_exit_steps=0" if int(p["fine_tune_exit_steps"]) < 1 else \
            f"the time limit left no time to {'train' if fresh else 'retrain'} them"
        if fresh:
            cause = f"the checkpoint has no exit heads and {cause}"
            context = "the checkpoint has no exit heads and none were trained on this table"
        else:
            context = ("fine-tuning changed the backbone and the exit heads, calibrated on the pretrained one, "
                       "were not retrained")
        logger.log(20, f"\tTabSwift: early exit turned off (tau={tau!r} not used): {context} ({cause}); "
                       f"the heads were dropped")
        return {"exit_heads": "dropped", "early_exit_off": cause}

    def _check_retrained_tau(self, ens, score_fn, tau: float, max_loss: float, budget) -> Dict:
        """An explicit τ after fine-tuning: keep it only if validation shows the retrained exit heads lose at
        most ``max_loss`` (relative) against no exit; otherwise raise it to the lowest larger candidate that
        does, or turn early exit off.

        Why: a few dozen episodes of head retraining are not always enough to recalibrate them to the moved
        backbone (on one 250-row table, 15 steps, τ = 0.5 lost up to 2 % RMSE with one checkpoint and up to
        10 % with another, depending on the data seed, and gained on other seeds), and the user set τ for
        speed, not for a loss they cannot see."""
        ens.tau = None
        if budget.limit is not None and budget.expired():
            logger.log(20, f"\tTabSwift: early exit turned off: no time left to check tau={tau} on validation "
                           f"with the retrained exit heads")
            return {"early_exit_off": "the time limit left no time to check tau on validation"}
        t0 = time.time()
        base = score_fn()
        ens.tau = tau
        score = score_fn()
        per_call = (time.time() - t0) / 2
        loss = (base - score) / max(abs(base), 1e-12)
        check = {"tau_requested": tau, "tau_requested_val_loss": loss, "val_score_no_exit": base}
        if loss <= max_loss:
            return check
        larger = tuple(t for t in TAU_CANDIDATES if t > tau)
        chosen = self._choose_tau(ens, score_fn, max_loss, budget, candidates=larger, base=(base, per_call))
        logger.log(20, f"\tTabSwift: tau={tau} lost {100 * loss:.1f} % on validation with the retrained exit "
                       f"heads (tau_max_loss {100 * max_loss:g} %); using tau={ens.tau} instead")
        return {**chosen, **check}

    def _choose_tau(self, ens, score_fn, max_loss: float, budget, candidates=TAU_CANDIDATES,
                    base: Optional[tuple] = None) -> Dict:
        """Lowest τ (earliest exits) whose validation score is within ``max_loss`` (relative) of no exit.

        Candidates run from high τ (late exits) to low; when the time budget runs out the search stops
        and keeps the best τ found so far (None if none was tried).  ``base``: the no-exit score and the
        seconds one validation pass took, when the caller has them."""
        ens.tau = None
        if base is None:
            t0 = time.time()
            base = (score_fn(), time.time() - t0)
        base, per_call = base
        chosen, depth, table = None, float(ens.network.config.n_layers), []
        for tau in sorted(candidates, reverse=True):
            if budget.limit is not None and budget.remaining() < 1.5 * per_call:
                logger.log(20, f"\tTabSwift: tau search stopped at the time limit after {len(table)} candidates")
                break
            ens.tau = tau
            score = score_fn()
            mean_depth = ens.last_mean_exit_layer
            table.append((tau, score, mean_depth))
            if base - score <= max_loss * max(abs(base), 1e-12):
                chosen, depth = tau, mean_depth
        ens.tau = chosen
        logger.log(20, f"\tTabSwift: tau={chosen} chosen on validation (mean exit layer {depth:.2f} of "
                       f"{ens.network.config.n_layers}; score {base:.4f} without early exit)")
        return {"tau": chosen, "tau_mean_exit_layer": depth, "tau_table": table, "val_score_no_exit": base}

    def get_info(self, include_feature_metadata: bool = True) -> dict:
        """AutoGluon's model info, plus which weights this fit loaded (``tabswift_weights``: source
        released/shipped/path, file, sha256, the reason), whether it fine-tuned them and why
        (``tabswift_fine_tune``: requested, fine_tuned, the rule and its reason, steps run, the zero-shot and
        fine-tuned validation scores, for a refit the decision it repeats) and what became of early exit
        (``tabswift_early_exit``: the τ in use, what happened to the exit heads, why it is off), and how many
        members' contexts a fit without validation rows encoded for its save (``tabswift_context_caches``)."""
        info = super().get_info(include_feature_metadata=include_feature_metadata)
        summary = getattr(self, "_fit_summary", None) or {}
        if "weights" in summary:
            info["tabswift_weights"] = dict(summary["weights"])
        if "fine_tune_decision" in summary:
            info["tabswift_fine_tune"] = dict(summary["fine_tune_decision"])
        if "prior_check" in summary:
            info["tabswift_prior_check"] = dict(summary["prior_check"])
        if "members_encoded_at_fit" in summary:  # a refit encodes its contexts for the saved model
            info["tabswift_context_caches"] = {"members_encoded_at_fit": summary["members_encoded_at_fit"]}
        if self.model is not None:
            info["tabswift_early_exit"] = {"tau": self.model.tau, "exit_heads": summary.get("exit_heads"),
                                           "early_exit_off": summary.get("early_exit_off")}
        return info

    # ---- predict ------------------------------------------------------------------------
    def _ensemble_proba(self, X: pd.DataFrame) -> np.ndarray:
        if self.problem_type in (BINARY, MULTICLASS):
            proba = self.model.predict_proba(X)
            return proba[:, 1] if self.problem_type == BINARY else proba
        return self.model.predict(X)

    def _predict_proba(self, X: pd.DataFrame, **kwargs) -> np.ndarray:
        from ..common.training import torch_threads

        if self._prior is not None:
            return self._prior_proba(len(X))
        X = self.preprocess(X, **kwargs)
        with torch_threads(self._get_child_num_cpus()):
            return self._ensemble_proba(X).astype(np.float32)

    # ---- save / load: weights beside the pickle -----------------------------------------
    def save(self, path: Optional[str] = None, verbose: bool = True) -> str:
        from .weights import save_checkpoint

        if path is None:
            path = self.path
        network = self.model.network if self.model is not None else None
        # the thread count probed at fit speaks for that machine at that moment: a saved model predicts on the
        # cores it is given (_get_child_num_cpus), wherever and whenever it is loaded
        fit_threads, self._fit_threads = self._fit_threads, None
        try:
            if network is None:
                return super().save(path=path, verbose=verbose)
            save_checkpoint(network, Path(path) / WEIGHTS_NAME, metadata={"source": "TabSwiftModel.save"})
            self._save_caches(Path(path))
            caches = self.model._caches  # the same network comes back: its caches stay valid (a second save keeps them)
            self.model.set_network(None)
            try:
                return super().save(path=path, verbose=verbose)
            finally:
                self.model.set_network(network)
                self.model._caches = caches
        finally:
            self._fit_threads = fit_threads

    def _save_caches(self, path: Path) -> int:
        """Write the members' context caches (``export_caches``, at most ``disk_cache_mb``: the ensemble's
        ``keep_inputs_bytes``) beside the weights, with the sha256 of the weights they were encoded with; remove a
        stale file where none is kept.  Returns how many caches were written."""
        import json

        from safetensors.torch import save_file

        from .weights import _publish, _temporary, read_checkpoint_info

        target = path / CACHES_NAME
        tensors, records = self.model.export_caches(getattr(self.model, "keep_inputs_bytes", 0))
        if not records:
            target.unlink(missing_ok=True)
            return 0
        sha = read_checkpoint_info(path / WEIGHTS_NAME)["sha256"]
        tmp = _temporary(target)
        try:
            save_file(tensors, str(tmp), metadata={"caches": json.dumps(records), "weights_sha256": sha,
                                                   "fit_token": str(getattr(self.model, "fit_token_", ""))})
            _publish(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return len(records)

    def _load_caches(self, path: Path) -> int:
        """Restore the caches ``_save_caches`` wrote, if they belong to the weights just loaded and to this fit's
        context (a token the ensemble draws at fit, saved on both sides); returns how many.  A file that cannot be
        used costs speed, never a prediction: its caches are encoded again on first use."""
        import json

        from safetensors import safe_open

        from .weights import read_checkpoint_info

        source = path / CACHES_NAME
        if not source.is_file():
            return 0
        try:
            with safe_open(str(source), framework="pt", device="cpu") as f:
                meta = f.metadata() or {}
                if meta.get("weights_sha256") != read_checkpoint_info(path / WEIGHTS_NAME)["sha256"] \
                        or not meta.get("fit_token") or meta["fit_token"] != getattr(self.model, "fit_token_", None):
                    logger.warning(f"TabSwift: context caches in {source} belong to other weights or another fit; "
                                   f"not used")
                    return 0
                tensors = {k: f.get_tensor(k) for k in f.keys()}
            return self.model.import_caches(tensors, json.loads(meta["caches"]))
        except Exception as err:  # noqa: BLE001  (safetensors, JSON, a missing tensor: all mean "not usable")
            self.model.clear_cache()
            logger.warning(f"TabSwift: context caches in {source} not used ({type(err).__name__}: {err}); they "
                           f"are encoded again on first use")
            return 0

    @classmethod
    def load(cls, path: str, reset_paths: bool = True, verbose: bool = True):
        from .weights import load_checkpoint

        model = super().load(path=path, reset_paths=reset_paths, verbose=verbose)
        weights = Path(path) / WEIGHTS_NAME
        if model.model is not None and model.model.network is None and model._prior is None:
            network = load_checkpoint(weights).to(model.to_torch_device(model.suggest_device_infer()))
            model.model.set_network(network)
            model._load_caches(Path(path))
        return model

    # ---- device / resources / tags ------------------------------------------------------
    def get_device(self) -> str:
        network = self.model.network if self.model is not None else None  # None: not fitted, or predicts the prior
        return "cpu" if network is None else network.registers.device.type

    def _set_device(self, device: str):
        if self.model is not None and self.model.network is not None:
            self.model.set_network(self.model.network.to(self.to_torch_device(device)))

    @classmethod
    def _estimate_memory_usage_static(cls, *, X: pd.DataFrame, hyperparameters: dict = None,
                                      num_classes: int = 1, **kwargs) -> int:
        """Bytes a fit and its predictions add: a fixed overhead (the loaded network, the preprocessing, torch's
        allocator), the preprocessed context copies (one per normalization variant), the context K/V caches
        of every member (layers x (context + registers) x d x 8 bytes of float32 keys and values, plus 2 for the float16
        block inputs where ``disk_cache_mb`` keeps them to save them; capped by ``cache_max_mb``), one
        attention block of ``chunk_size`` queries x context keys per head, and, where fine-tuning will run,
        its episodes' activations and attention maps kept for the backward pass.  The sizes come from the
        checkpoint the fit will load (``_network_dims``); torch's own import is added where it has not
        happened yet.  ``fine_tune="auto"`` counts fine-tuning only where validation rows are given (without
        them it stays zero-shot); a bag's static estimate does not see its folds' validation rows."""
        import sys

        hp = {**DEFAULT_PARAMS, **(hyperparameters or {})}

        def num(key):
            return param_value(hp, key)

        layers, d, heads, registers = _network_dims(num("checkpoint_path"))
        ctx = min(len(X), int(num("max_context_rows")))
        keys = ctx + registers
        members = int(num("n_estimators"))
        f = min(max(1, X.shape[1]), 100)
        data = 8 * ctx * f * 2 * 4
        kept = 10 if float(num("disk_cache_mb")) > 0 else 8  # float32 keys + values (+ float16 block inputs)
        cache = min(float(num("cache_max_mb")) * 2 ** 20, members * kept * layers * keys * d)
        attention = heads * int(num("chunk_size")) * keys * 4 * 3
        fine_tune = num("fine_tune")
        tune = 0
        if fine_tune is True or (fine_tune == "auto" and kwargs.get("X_val") is not None):
            rows, episodes = int(num("fine_tune_rows")), int(num("fine_tune_episodes_per_step"))
            tune = episodes * layers * (heads * rows * rows * 4 * 2 + rows * d * 4 * 12)
        torch_import = 0 if "torch" in sys.modules else TORCH_IMPORT_BYTES
        return int(FIT_OVERHEAD_BYTES + data + cache + attention + tune + torch_import)

    @classmethod
    def _class_tags(cls):
        # the weights never enter the pickle, so there is nothing to move to CPU before saving; load()
        # rebuilds the network directly on the device available at load time
        return {"reset_torch_threads": True, "set_device_on_save_to": None, "set_device_on_load": False}

    def _more_tags(self) -> dict:
        return {"can_refit_full": True}
