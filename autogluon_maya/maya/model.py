"""MAYA as an AutoGluon-Tabular model (``hyperparameters={"MAYA": {...}}``)."""

from __future__ import annotations

import logging
from typing import Dict, Optional

import numpy as np
import pandas as pd
from autogluon.common.features.types import R_BOOL, R_CATEGORY, R_FLOAT, R_INT, S_TEXT_AS_CATEGORY, S_TEXT_NGRAM
from autogluon.core.constants import BINARY, MULTICLASS, QUANTILE, REGRESSION
from autogluon.core.hpo.constants import RAY_BACKEND
from autogluon.tabular.models.abstract.abstract_torch_model import AbstractTorchModel

from ..common.ag_model import TorchPluginMixin
from ..common.refit import write_refit_record
from .defaults import AUTO_BATCH_ROWS, check_params, pop_replay, replay_record, resolve_defaults
from .memory import activation_bytes, estimate_fit_memory, estimate_gpu_memory
from .members import MemberJudge, MemberSettings, resolve_members, resolve_parallel, train_members

logger = logging.getLogger(f"autogluon.ext.{__name__}")

PREDICT_CHUNK_ROWS = 1024  # query rows per inference chunk (FittedMaya.predict_raw also caps the similarity block)
class MayaModel(TorchPluginMixin, AbstractTorchModel):
    """MAYA: an encoder-decoder transformer trained per dataset (multi-branch attention encoder, label-aware
    inter-instance attention decoder).

    Paper: Multi-branch of Attention Yields Accurate Results for Tabular Data (arXiv:2502.12507, 2025)
    Authors: Xuechen Li, Yupeng Li, Jian Liu, Xiaolin Jin, Xin Hu
    Codebase: none named in the paper; this is an independent implementation from the paper's text
    License: Apache-2.0 (this implementation)

    Numeric embeddings (``num_embeddings``): Gorishniy et al., "On Embeddings for Numerical Features in Tabular
    Deep Learning" (NeurIPS 2022), through their library ``rtdl_num_embeddings`` (Apache-2.0).

    Settings: ``defaults.DEFAULT_PARAMS``, described in docs/maya.md.
    """

    ag_key = "MAYA"
    ag_name = "Maya"
    ag_priority = 70
    seed_name = "random_seed"
    _supported_problem_types = [BINARY, MULTICLASS, REGRESSION, QUANTILE]
    # Every feature is a token (Eq. 1), so a wide table costs memory and time in proportion; there is no fixed
    # cap on features: AutoGluon's memory check (``_estimate_memory_usage_static`` against the available memory)
    # and the trainer's time check (a step, or without validation data an epoch, against the time left) decline
    # a table only where the fit cannot succeed, naming the reason.  Text n-gram features are left out, as
    # NN_TORCH does: sparse count columns of a noise text outnumber and drown the real features (docs/maya.md).
    _default_auxiliary_params_extra = {"valid_raw_types": [R_BOOL, R_INT, R_FLOAT, R_CATEGORY],
                                       "ignored_type_group_special": [S_TEXT_NGRAM, S_TEXT_AS_CATEGORY]}
    default_num_gpus = 1
    default_resources_physical_cores_only = True
    _fit_info: Dict = {}  # get_info()["maya_fit"]: why the fit stopped, and a fall back to the prior
    _plugin_name, _plugin_logger = "MAYA", logger

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._encoder = None
        self._target_scaler = None
        self._fit_summary: Dict = {}

    # ---- hyperparameters ----------------------------------------------------------------
    def _table(self) -> dict:  # the table's defaults for this problem type and the user's recipe
        return resolve_defaults(self.problem_type, (self._user_params or {}).get("recipe", "default"))

    def _set_default_params(self):
        for k, v in self._table().items():
            self._set_default_param_value(k, v)

    def _init_params(self):
        super()._init_params()
        # a space from maya_search_space() without a problem type starts at this fit's default (trial 1)
        from .search_space import TABLE12, _to_space

        table = self._table()
        for k, v in list(self.params.items()):
            if getattr(v, "maya_table_default", False):
                entry = getattr(v, "maya_entry", TABLE12[k])
                self.params[k] = _to_space(entry, table[k])
                self.params[k].maya_entry = entry

    def _get_default_searchspace(self) -> dict:
        from .search_space import maya_search_space

        return maya_search_space(self._get_model_params(convert_search_spaces_to_default=True), self.problem_type)

    def _get_hpo_backend(self):
        return RAY_BACKEND

    def _get_default_stopping_metric(self):
        return self.eval_metric

    # ---- preprocessing ------------------------------------------------------------------
    def _preprocess(self, X: pd.DataFrame, is_train: bool = False, **kwargs):
        from ..common.preprocessing import TabularEncoder

        X = super()._preprocess(X, **kwargs)
        if is_train or self._encoder is None:
            p = self._get_model_params()
            self._encoder = TabularEncoder(numeric_transform=p["numeric_transform"],
                                           random_state=p.get(self.seed_name, 0) or 0).fit(X)
        return self._encoder.transform(X)

    # ---- fit ----------------------------------------------------------------------------
    def _fit(self, X: pd.DataFrame, y: pd.Series, X_val: Optional[pd.DataFrame] = None,
             y_val: Optional[pd.Series] = None, time_limit: Optional[float] = None, num_cpus: int = 1,
             num_gpus: float = 0, sample_weight: Optional[np.ndarray] = None, verbosity: int = 2, **kwargs):
        from autogluon.core.utils.exceptions import NoValidFeatures

        from .fitted import FittedMayaMembers
        from .schedule import effective_batch_size
        from .search_space import round_hidden_size

        budget = self._fit_budget(time_limit)
        p = self._get_model_params()
        seed, device = self._start_torch_fit(p, num_cpus, num_gpus)
        p.pop(self.seed_name, None)
        replay = pop_replay(p, seed)  # refit_full: the members the fit (or a bag's folds) kept
        p = check_params(p)
        enc = self.preprocess(X, is_train=True)
        if enc.x_num.shape[1] + enc.x_cat.shape[1] == 0:
            raise NoValidFeatures("MAYA received no usable features")
        p.update(hidden_size=round_hidden_size(p["hidden_size"], p["num_heads"]),
                 batch_size=effective_batch_size(p["batch_size"], len(enc), AUTO_BATCH_ROWS[self.problem_type]))
        classification = self.problem_type in (BINARY, MULTICLASS)
        data, y_np = self._training_data(enc, y, sample_weight, device, classification, (p["max_context_rows"], seed))
        net_args = self._network_args(enc, p, classification)
        val_proba, val_score_fn, judge, score_proba = self._validation_scorers(X_val, y_val, device)
        prior = self._prior_prediction(y_np if classification else np.asarray(y, dtype=np.float64), sample_weight)
        if replay is not None and not replay:  # the fit (or every fold, on average) fell back to the prior
            self._fit_info = {"stop": {"rule": "replay", "epoch": 0, "member": None, "seconds": 0.0,
                                       "time_limit": time_limit, "stopped_early": None},
                              "members_kept": 0, "fallback": None}
            self._fall_back_to_prior(prior, "the fit replayed kept no network (it fell back to the prior)")
            write_refit_record(self.params_trained, replay_record([], [], 0))
            return

        build, train = self._member_fns(net_args, p, device, data, val_score_fn)

        max_members = len(replay) if replay is not None else resolve_members(p["ensemble_members"], time_limit)
        step_bytes = activation_bytes(p["batch_size"], enc.x_num.shape[1] + enc.x_cat.shape[1], p["hidden_size"],
                                      p["num_layers"], p["num_branch"])
        parallel = resolve_parallel(p["parallel_members"], max_members, num_cpus, device.type, step_bytes)
        kept, s = train_members(build, train, budget, MemberSettings(max_members, parallel, num_cpus, seed, replay),
                                MemberJudge(val_proba, judge) if val_proba is not None else None)
        seconds = budget.elapsed()
        self.model, self._fit_summary = FittedMayaMembers([f for f, _ in kept]), s
        self._fit_info = {"stop": {**s["stop"], "seconds": round(seconds, 3), "time_limit": time_limit,
                                   "stopped_early": None if time_limit is None else seconds < 0.5 * time_limit},
                          "members_kept": len(kept), "context_rows": data.context_size, "fallback": None}
        fallback = self._worse_than_prior(kept, s, val_proba, score_proba, prior, y_val)
        if fallback:
            self._fall_back_to_prior(prior, fallback)
        # refit_full (all rows, no validation) replays the kept members (defaults.pop_replay): each member's
        # best epoch count, the batch and width trained here, and the weight average only where it won this
        # fit's validation; none where the fit fell back to the prior
        write_refit_record(self.params_trained, replay_record(
            [] if fallback else [m["best_epoch"] for _, m in kept], s["trained_best_epochs"], max_members))
        self.params_trained.update({  # the settings the refit trains with
            "hidden_size": p["hidden_size"], "batch_size": s["batch_size"],
            "ema_epochs": None if s["best_is_average"] is False else p["ema_epochs"]})
        logger.log(15, f"\tMAYA trained {s['epochs']} epochs (best {s['best_epoch']}, batch {s['batch_size']}, "
                       f"stop: {s['stop_reason']}), threads chosen {s['threads']}; {len(kept)} member(s)")

    def _training_data(self, enc, y: pd.Series, sample_weight, device, classification: bool, context) -> tuple:
        """(the training rows as tensors on ``device``, the targets as numpy): class codes, or the standardized
        target (the paper's regression loss is an MSE on it, Eq. 9).  ``context``: (``max_context_rows``, the
        fit's seed); a cap below the rows restricts the inference context to rows drawn once here."""
        from ..common.preprocessing import TargetScaler
        from ..common.training import to_tensors
        from .context import draw_context
        from .trainer import TrainData

        if not classification:
            self._target_scaler = TargetScaler(y)
        y_np = np.asarray(y, dtype=np.int64) if classification else self._target_scaler.transform(y)
        x_num, x_cat, y_t = to_tensors([enc.x_num, enc.x_cat, y_np], device)
        w_t = None if sample_weight is None else to_tensors([np.asarray(sample_weight, np.float32)], device)[0]
        rows = draw_context(y_np, *context, classification=classification)
        return TrainData(x_num, x_cat, y_t, y_t, w_t).with_context(rows), y_np

    def _network_args(self, enc, p: dict, classification: bool) -> dict:
        """What every member's ``MayaNetwork`` is built from: the table's shape, and the network settings as
        this fit resolved them (the table's defaults, the recipe, the user's values)."""
        from .network import NETWORK_KEYS, training_bins

        net_args = dict(n_num=enc.x_num.shape[1], cat_cardinalities=self._encoder.cat_cardinalities,
                        out_dim=self.num_classes if classification else int(np.size(self.quantile_levels)),  # None: 1
                        label_kind="class" if classification else "real", num_classes=self.num_classes or 0,
                        **{k: p[k] for k in NETWORK_KEYS})
        if p["num_embeddings"] == "piecewise" and enc.x_num.shape[1]:
            # the bins of the piecewise-linear embedding: quantiles of this fit's training rows only (the
            # validation rows never set one), of the values the tokenizer reads (s x), kept in every member
            import torch

            net_args["num_bins"] = training_bins(torch.from_numpy(enc.x_num) * p["numeric_scale"])
        return net_args

    def _member_fns(self, net_args: dict, p: dict, device, data, val_score_fn) -> tuple:
        """(build, train): one member's network from its seed, and its training (``members.train_members``) on
        the paper's loss for the problem type (``trainer.make_loss``)."""
        from .fitted import FittedMaya
        from .network import MayaNetwork
        from .trainer import TrainConfig, make_loss, train_maya

        classification = self.problem_type in (BINARY, MULTICLASS)
        loss_fn = make_loss("class" if classification else self.problem_type, self.quantile_levels)

        def build(member_seed: int):
            import torch

            torch.manual_seed(member_seed)
            return FittedMaya(MayaNetwork(**net_args)).to(device)

        def train(fitted, member_seed, member_budget, threads, reserve_passes, max_epochs) -> dict:
            cfg = TrainConfig(params=p, loss_fn=loss_fn, device=device, seed=member_seed,
                              max_epochs=max_epochs or p["max_epochs"], num_threads=threads,
                              reserve_passes=reserve_passes)
            summary = train_maya(fitted, data, cfg, member_budget, val_score_fn=val_score_fn)
            if summary["steps"] > 0 and not summary["context_fresh"]:  # the restored weights must encode it
                fitted.set_context(*data.context_rows())
            return summary

        return build, train

    # ---- the prior: what a fit must beat (TorchPluginMixin's _prior_prediction) ----------------
    def _worse_than_prior(self, kept, s, val_proba, score_proba, prior, y_val) -> str:
        """The reason the kept members validate worse than the prior on the stopping metric, or "" if they do not.
        A network that stopped early (too little time for the table) can predict worse than the class frequencies
        or the mean, and a model worse than the prior only costs an ensemble; where validation data exists the
        fit is judged, per fold when bagged (each fold has its own validation rows)."""
        if val_proba is None:
            return ""
        if len(kept) == 1 and s["best_score"] is not None:
            score = s["best_score"]  # the kept weights' validation score, as the trainer measured it
        else:
            score = score_proba(np.mean([val_proba(f) for f, _ in kept], axis=0))
        prior_score, reason = self._prior_verdict(score, np.asarray(y_val), prior)
        self._fit_info["validation"] = {"metric": self.stopping_metric.name, "maya": float(score),
                                        "prior": prior_score}
        if not reason:
            return ""
        stop = self._fit_info["stop"]
        return (f"{reason} after {stop['epoch']} epoch(s) of member {stop['member']} in {stop['seconds']:.1f} s "
                f"(stopped by {stop['rule']}: {stop['network']})")

    def _drop_network(self, reason: str) -> None:
        """A fall-back to the prior (``TorchPluginMixin._fall_back_to_prior``): no member is kept; the reason goes
        to the model's info."""
        from .trainer import FittedMayaMembers

        self.model = FittedMayaMembers([])
        self._fit_info = {**self._fit_info, "members_kept": 0, "fallback": {"to": "prior", "reason": reason}}

    def _validation_scorers(self, X_val, y_val, device):
        """(validation probabilities of a network, its stopping-metric score, the judge of an average of
        members, the stopping-metric score of given probabilities), or Nones without validation data.  Members
        are judged by log loss for classification: a proper score moves with every row's confidence, where
        accuracy moves in whole rows and on a small validation set one row decides (docs/maya.md).  Training
        (early stopping, the kept epoch) follows the stopping metric: following the log loss
        instead validated worse on 16 of 18 pairs (docs/maya.md, "How MAYA spends its budget")."""
        if X_val is None or not len(X_val):
            return None, None, None, None
        from autogluon.core.metrics import log_loss

        from ..common.training import to_tensors

        enc = self.preprocess(X_val)
        vx_num, vx_cat = to_tensors([enc.x_num, enc.x_cat], device)
        y_val = np.asarray(y_val)
        judge_metric = log_loss if self.problem_type in (BINARY, MULTICLASS) else self.stopping_metric

        def proba(f):
            return self._raw_to_proba(f.predict_raw(vx_num, vx_cat, PREDICT_CHUNK_ROWS))

        def score_proba(p):
            return self.score_with_y_pred_proba(y=y_val, y_pred_proba=p, metric=self.stopping_metric)

        def judge(p):
            return self.score_with_y_pred_proba(y=y_val, y_pred_proba=p, metric=judge_metric)

        def score(f):  # the trainer has just refreshed f's context
            return score_proba(proba(f))

        return proba, score, judge, score_proba

    # ---- predict ------------------------------------------------------------------------
    def _raw_to_proba(self, raw) -> np.ndarray:
        import torch

        if self.problem_type in (BINARY, MULTICLASS):
            proba = torch.softmax(raw.float(), dim=1).cpu().numpy()
            return proba[:, 1] if self.problem_type == BINARY else proba
        values = self._target_scaler.inverse(raw.float().cpu().numpy())
        if self.problem_type == QUANTILE:
            return np.sort(values, axis=1)  # quantile predictions must not cross
        return values.reshape(-1)

    def _network_outputs(self, enc) -> list:
        """Every member's raw outputs on the encoded rows (``TorchPluginMixin._predict_proba``)."""
        from ..common.training import to_tensors

        x_num, x_cat = to_tensors([enc.x_num, enc.x_cat], next(self.model.parameters()).device)
        return self.model.predict_raw_members(x_num, x_cat)

    def _outputs_to_proba(self, raws) -> np.ndarray:
        # classification averages probabilities (not logits), regression the de-standardized values
        return np.mean([self._raw_to_proba(r) for r in raws], axis=0).astype(np.float32)

    # ---- device / resources / tags ------------------------------------------------------
    def get_device(self) -> str:
        first = next(self.model.parameters(), None)  # none where the fit fell back to the prior
        return "cpu" if first is None else first.device.type

    def get_info(self, *args, **kwargs) -> dict:
        info = super().get_info(*args, **kwargs)
        info["maya_fit"] = self._fit_info
        return info

    def _validate_fit_memory_usage(self, **kwargs):
        """AutoGluon's check of the memory estimate against the available memory, its refusal given a message
        that names MAYA's reason (AutoGluon raises it bare, and a skipped model's failure record keeps only it)."""
        from autogluon.common.utils.resource_utils import ResourceManager
        from autogluon.core.utils.exceptions import NotEnoughMemoryError

        try:
            return super()._validate_fit_memory_usage(**kwargs)
        except NotEnoughMemoryError as err:
            if str(err):
                raise
            need = kwargs.get("approx_mem_size_req") or self.estimate_memory_usage(**kwargs)
            available = kwargs.get("available_mem") or ResourceManager.get_available_virtual_mem()
            ratio = self.params_aux["max_memory_usage_ratio"]
            allowed = kwargs.get("mem_error_threshold", 0.9) * ratio * available
            X = kwargs.get("X")
            tokens = "" if X is None else f" on {X.shape[1] + 1} tokens per row"
            raise NotEnoughMemoryError(
                f"MAYA declined: a fit{tokens} is estimated to need {need / 2**30:.2f} GiB, more than the "
                f"{allowed / 2**30:.2f} GiB it may use of {available / 2**30:.2f} GiB available "
                f"(ag.max_memory_usage_ratio={ratio})") from err

    def _set_device(self, device: str):
        self.model.to(self.to_torch_device(device))

    @classmethod
    def _estimate_memory_usage_static(cls, *, X: pd.DataFrame, hyperparameters: dict = None,
                                      problem_type: str = "binary", num_classes: int = 1, **kwargs) -> int:
        """Peak host RAM a fit adds to the process (``memory.estimate_fit_memory``)."""
        return estimate_fit_memory(X, hyperparameters, problem_type)

    @classmethod
    def _estimate_gpu_memory_usage_static(cls, *, X: pd.DataFrame, hyperparameters: dict = None,
                                          problem_type: str = "binary", num_classes: int = 1, **kwargs) -> int:
        """Device bytes of a fit on a GPU (``memory.estimate_gpu_memory``): AutoGluon checks it against the GPU's
        free memory before the fit and sizes parallel folds by it."""
        return estimate_gpu_memory(X, hyperparameters, problem_type)

    @classmethod
    def _class_tags(cls):
        return {"reset_torch_threads": True}

    def _more_tags(self) -> dict:
        return {"can_refit_full": True}
