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
- the members' context caches are saved too (``disk_cache_mb``, ``cache_files``): AutoGluon loads a model from
  disk for every predict call unless the predictor is persisted, and without them each such call would encode
  every member's context again;
- a model fitted on a GPU loads on a CPU-only machine (the network is rebuilt on the device chosen at
  load time, and so are the saved caches' keys and values).

The fit's steps live beside this wrapper: the plan and the state the steps share (``fit_context``), the thread
count (``fit_threads``), fine-tuning (``fine_tune_policy``), the exit heads and τ (``early_exit``), the check
against the prior and the record refits repeat (``refit_records``), the saved caches (``cache_files``) and the
memory estimates (``memory``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import numpy as np
import pandas as pd
from autogluon.common.features.types import R_BOOL, R_CATEGORY, R_FLOAT, R_INT, S_TEXT_AS_CATEGORY, S_TEXT_NGRAM
from autogluon.core.constants import BINARY, MULTICLASS, REGRESSION
from autogluon.core.hpo.constants import RAY_BACKEND
from autogluon.tabular.models.abstract.abstract_torch_model import AbstractTorchModel

from ..common.ag_model import TorchPluginMixin
from ..common.refit import read_refit_record
from .cache_files import CACHES_NAME, load_caches, save_caches, warm_caches
from .checkpoints_io.info import RELEASED_DIMS, describe_checkpoint, network_dims
from .defaults import DEFAULT_PARAMS
from .early_exit import TAU_CANDIDATES, settle_early_exit
from .fine_tune_policy import REPLAY_TIME_FACTOR, decide_fine_tuning, replay_seconds, replay_steps
from .fit_context import FINE_TUNE_MODES, FitContext, FitPlan, logger, make_plan
from .memory import FIT_OVERHEAD_BYTES, estimate_fit_memory, estimate_gpu_memory
from .refit_records import (AUTO_CHOICES, CHOICE_KEY, FINE_TUNE_CHOICE_KEY, PriorCheckAndRefitRecords,
                            TabSwiftRefitRecord, recorded)

WEIGHTS_NAME = "tabswift_weights"
_network_dims = network_dims  # the name the memory tests and scripts read it by

__all__ = ["AUTO_CHOICES", "CACHES_NAME", "CHOICE_KEY", "FINE_TUNE_CHOICE_KEY", "FINE_TUNE_MODES",
           "FIT_OVERHEAD_BYTES", "FitPlan", "RELEASED_DIMS", "REPLAY_TIME_FACTOR", "TAU_CANDIDATES",
           "TabSwiftModel", "WEIGHTS_NAME", "describe_checkpoint", "replay_seconds", "replay_steps"]


class TabSwiftModel(PriorCheckAndRefitRecords, TorchPluginMixin, AbstractTorchModel):
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
        """The weights to load and why (``checkpoints_io.choice.choose_weights``): ``"auto"`` (default) = the
        authors' released weights, from this machine's caches or downloaded once (``autogluon_maya.prefetch_weights()``
        puts them there ahead of time), else the shipped checkpoint; ``"shipped"``/None, ``"hub"``, a path;
        ``$AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT`` replaces ``"auto"`` and None."""
        from .checkpoints_io.choice import choose_weights

        return choose_weights(self._get_model_params().get("checkpoint_path"))

    def checkpoint_path(self) -> Path:
        """Our checkpoint to load (see ``weights_choice``)."""
        return self.weights_choice().path

    # ---- fit ----------------------------------------------------------------------------
    def _fit(self, X: pd.DataFrame, y: pd.Series, X_val: Optional[pd.DataFrame] = None,
             y_val: Optional[pd.Series] = None, time_limit: Optional[float] = None, num_cpus: int = 1,
             num_gpus: float = 0, verbosity: int = 2, **kwargs):
        """The fit's steps: the weights (``_load_weights``), the plan (``fit_context.make_plan``: fine-tuning mode,
        τ, whether a refit repeats a fall-back to the prior), the preprocessing and the context
        (``_build_context``), the thread count (``fit_threads``), fine-tuning (``fine_tune_policy``), the exit
        heads and τ (``early_exit``), the check against the prior (``_prior_step``), the caches a saved refit
        carries (``cache_files.warm_caches``) and the record a refit repeats (``_record_for_refits``)."""
        from .fit_threads import choose_threads

        budget = self._fit_budget(time_limit)
        p = self._get_model_params()
        refit = read_refit_record(p, TabSwiftRefitRecord)  # a refit: what the fit it replaces decided
        seed, device = self._start_torch_fit(p, num_cpus, num_gpus)
        if kwargs.get("sample_weight") is not None:  # in-context learning has no loss to weight
            logger.warning("TabSwift ignores sample_weight: every context row counts the same")
        network, choice, weights = self._load_weights(p, device, recorded(refit, "checkpoint_choice"))
        has_val = X_val is not None and y_val is not None and len(X_val) > 0
        plan = make_plan(p, self.problem_type in (BINARY, MULTICLASS), has_val,
                         headless=network.n_exit_layers == 0,  # e.g. the authors' released weights
                         prior=(None, "") if has_val else self._prior_share_of_checked(refit))
        self.model = ens = self._build_context(network, self.preprocess(X, is_train=True), np.asarray(y), p, plan,
                                               seed)
        summary: Dict = {"context_rows": len(ens.y_context_), "members": len(ens.members_),
                         "checkpoint": str(choice.path), "weights": weights}
        ctx = FitContext(params=p, plan=plan, ensemble=ens, budget=budget, time_limit=time_limit, seed=seed,
                         summary=summary, metric_name=self.stopping_metric.name, refit=refit)
        ctx.threads, probe_seconds = choose_threads(ctx, num_cpus, device)
        self._fit_threads = ctx.threads
        if plan.has_val:
            ctx.score_fn, ctx.y_val = self._validation_score(X_val, y_val, ctx.threads)
        # a step is episodes_per_step episodes, forward + backward (~3 forwards each); without this the
        # first step, whose duration is not known yet, could start just before the deadline
        ctx.first_step = 3.0 * int(p["fine_tune_episodes_per_step"]) * probe_seconds
        summary["fine_tune_decision"] = decide_fine_tuning(ctx)
        settle_early_exit(ctx)
        summary["prior_check"] = self._prior_step(ctx, np.asarray(y))
        summary["members_encoded_at_fit"] = warm_caches(ctx)
        self._record_for_refits(ctx, choice)
        self._fit_summary = summary

    def _load_weights(self, p: Dict, device, repeats: Optional[str] = None) -> tuple:
        """Step 1: (the network on ``device``, the ``WeightsChoice``, its record for the model's info), logged.
        ``repeats``: a refit's record of why the fit it replaces chose its weights."""
        from .checkpoints_io.format import load_checkpoint

        # "auto" may download the released weights (the first fit on a machine), after a probe of the hub bounded
        # by $AUTOGLUON_MAYA_HUB_TIMEOUT (5 s); a failure falls back to the shipped weights, not retried in this
        # process, and the first choice holds for the rest of the process
        choice = self.weights_choice()
        network = load_checkpoint(choice.path).to(device)  # verifies the sha256 recorded below
        weights = choice.record()
        if repeats:  # a refit (refit_full, refit_folds) repeating the decision of the fit it replaces
            weights["repeats"] = repeats
        logger.log(20, f"\tTabSwift weights: {choice.source}, {describe_checkpoint(choice.path)}; sha256 "
                       f"{weights['sha256'][:16]}...; checkpoint_path={choice.requested!r}: {choice.reason}"
                       + (f" (repeating: {repeats})" if repeats else ""))
        return network, choice, weights

    def _build_context(self, network, X: pd.DataFrame, y: np.ndarray, p: Dict, plan: "FitPlan", seed: int):
        """Step 3: the ensemble's members (per-variant preprocessing fitted on the training rows) and their context."""
        from .cache_budget import resolve_cache_mb
        from .ensemble import EnsembleSettings, TabSwiftEnsemble
        from .network import CLASSIFICATION

        tau = plan.tau
        p["cache_max_mb"], p["disk_cache_mb"] = resolve_cache_mb(  # "auto": every member's cache, within a budget
            p["cache_max_mb"], p["disk_cache_mb"], members=int(p["n_estimators"]), layers=len(network.blocks),
            keys=min(len(X), int(p["max_context_rows"])) + network.registers.shape[0], d=network.registers.shape[1],
            cache_sets=2 if (self.num_classes or 0) > network.config.max_classes else 1)
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

    def _get_child_num_cpus(self) -> Optional[int]:
        """Threads for predict: in the fitting process, the count the fit's probe chose (the out-of-fold and
        validation predictions that follow run on the same machine at the same moment); a loaded model, the
        cores it was given (``save`` keeps no probe)."""
        return getattr(self, "_fit_threads", None) or super()._get_child_num_cpus()

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

    def _network_outputs(self, X: pd.DataFrame) -> np.ndarray:
        """The ensemble's predict_proba on the preprocessed rows (``TorchPluginMixin._predict_proba``)."""
        return self._ensemble_proba(X).astype(np.float32)

    # ---- save / load: weights beside the pickle -----------------------------------------
    def save(self, path: Optional[str] = None, verbose: bool = True) -> str:
        from .checkpoints_io.format import save_checkpoint

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
            save_caches(self.model, Path(path), WEIGHTS_NAME)
            caches = self.model._caches  # the same network comes back: its caches stay valid (a second save keeps them)
            self.model.set_network(None)
            try:
                return super().save(path=path, verbose=verbose)
            finally:
                self.model.set_network(network)
                self.model._caches = caches
        finally:
            self._fit_threads = fit_threads

    @classmethod
    def load(cls, path: str, reset_paths: bool = True, verbose: bool = True):
        from .checkpoints_io.format import load_checkpoint

        model = super().load(path=path, reset_paths=reset_paths, verbose=verbose)
        weights = Path(path) / WEIGHTS_NAME
        if model.model is not None and model.model.network is None and model._prior is None:
            network = load_checkpoint(weights).to(model.to_torch_device(model.suggest_device_infer()))
            model.model.set_network(network)
            load_caches(model.model, Path(path), WEIGHTS_NAME)
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
        """Host bytes a fit and its predictions add (``memory.estimate_fit_memory``), sized by the checkpoint the
        fit will load."""
        return estimate_fit_memory(X, hyperparameters, **kwargs)

    @classmethod
    def _estimate_gpu_memory_usage_static(cls, *, X: pd.DataFrame, hyperparameters: dict = None,
                                          num_classes: int = 1, **kwargs) -> int:
        """Device bytes of a fit on a GPU and its predictions (``memory.estimate_gpu_memory``): AutoGluon checks
        it against the free memory of the GPU before the fit and sizes parallel folds by it."""
        return estimate_gpu_memory(X, hyperparameters, **kwargs)

    @classmethod
    def _class_tags(cls):
        # the weights never enter the pickle, so there is nothing to move to CPU before saving; load()
        # rebuilds the network directly on the device available at load time
        return {"reset_torch_threads": True, "set_device_on_save_to": None, "set_device_on_load": False}

    def _more_tags(self) -> dict:
        return {"can_refit_full": True}
