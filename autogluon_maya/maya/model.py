"""MAYA as an AutoGluon-Tabular model (``hyperparameters={"MAYA": {...}}``)."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Optional

import numpy as np
import pandas as pd
from autogluon.common.features.types import R_BOOL, R_CATEGORY, R_FLOAT, R_INT, S_TEXT_AS_CATEGORY, S_TEXT_NGRAM
from autogluon.core.constants import BINARY, MULTICLASS, QUANTILE, REGRESSION
from autogluon.core.hpo.constants import RAY_BACKEND
from autogluon.core.utils.exceptions import TimeLimitExceeded
from autogluon.tabular.models.abstract.abstract_torch_model import AbstractTorchModel

from ..common.ag_model import TorchPluginMixin, param_value

from .defaults import DEFAULT_PARAMS, label_smoothing, numeric_scale, numeric_transform, resolve_task_defaults
from .members import parallel_wanted, plan_further_members, resolve_members, resolve_parallel, smoothed_log_loss

logger = logging.getLogger(f"autogluon.ext.{__name__}")


# ensemble members' seeds: the fit's seed, then steps of this stride (tests derive them from it)
MEMBER_SEED_STRIDE = 7919
# Members train in parallel only while a network is this small (its activations, forward + backward, one
# batch): its step is then many small kernels that a second thread barely speeds up.  The default size on
# letter is ~40 MB; at hidden_size 256 with 8 branches a step is a few large matmuls that two threads run ~2x
# faster, so two members at once would each train at half speed for no gain in the work done.
PARALLEL_MAX_ACTIVATION_BYTES = 256 * 2**20


def activation_bytes(batch: int, n_features: int, hidden: int, layers: int, branches: int) -> int:
    """Training activations of one batch (forward + backward, branch-stacked), as the memory estimate counts them."""
    return 4 * batch * (n_features + 1) * hidden * layers * branches * 12 * 3

class MayaModel(TorchPluginMixin, AbstractTorchModel):
    """MAYA: multi-branch-attention encoder + inter-instance-attention decoder, trained per dataset.

    Hyperparameters: see ``autogluon_maya.maya.defaults.DEFAULT_PARAMS`` and the README.
    """

    ag_key = "MAYA"
    ag_name = "Maya"
    ag_priority = 70
    seed_name = "random_seed"
    _supported_problem_types = [BINARY, MULTICLASS, REGRESSION, QUANTILE]
    # One token per feature and attention over them: a 457-column table (1.1k rows, 180 s on 2 cores) ran
    # a dozen epochs and ended near the majority rate.  Wider tables are declined up front (AutoGluon
    # logs the reason and fits the other models); raise it with ag_args_fit={"ag.max_features": N}.
    # AutoGluon's text n-gram / text-as-category features are left out, as its own NN_TORCH does: ~57 sparse
    # count columns from one noise text column drowned a bool-XOR-date signal (accuracy 0.96 -> 0.53).
    _default_auxiliary_params_extra = {"valid_raw_types": [R_BOOL, R_INT, R_FLOAT, R_CATEGORY],
                                       "ignored_type_group_special": [S_TEXT_NGRAM, S_TEXT_AS_CATEGORY],
                                       "max_features": 300}
    default_num_gpus = 1
    default_resources_physical_cores_only = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._encoder = None
        self._target_scaler = None
        self._fit_summary: Dict = {}

    # ---- hyperparameters ----------------------------------------------------------------
    def _set_default_params(self):
        for k, v in DEFAULT_PARAMS.items():
            self._set_default_param_value(k, v)

    def _get_default_searchspace(self) -> dict:
        from .search_space import maya_search_space

        return maya_search_space(self._get_model_params(convert_search_spaces_to_default=True))

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
            transform = numeric_transform(p, self.problem_type)
            self._encoder = TabularEncoder(numeric_transform=transform,
                                           random_state=p.get(self.seed_name, 0) or 0).fit(X)
        return self._encoder.transform(X)

    # ---- fit ----------------------------------------------------------------------------
    def _label_kind(self) -> str:
        return "class" if self.problem_type in (BINARY, MULTICLASS) else ("quantile" if self.problem_type == QUANTILE else "real")

    def _fit(self, X: pd.DataFrame, y: pd.Series, X_val: Optional[pd.DataFrame] = None,
             y_val: Optional[pd.Series] = None, time_limit: Optional[float] = None, num_cpus: int = 1,
             num_gpus: float = 0, sample_weight: Optional[np.ndarray] = None, verbosity: int = 2, **kwargs):
        import torch

        from ..common.preprocessing import TargetScaler
        from ..common.training import TimeBudget, to_tensors, torch_threads
        from .network import MayaNetwork
        from .search_space import round_hidden_size
        from .trainer import FittedMaya, FittedMayaMembers, make_loss, train_maya

        budget = TimeBudget(time_limit)
        p = self._get_model_params()
        seed, device = self._start_torch_fit(p, num_cpus, num_gpus)
        p.pop(self.seed_name, None)  # the remaining params go to the trainer as network/optimizer settings
        p = resolve_task_defaults(p, regression=self._label_kind() != "class")
        p["numeric_scale"] = numeric_scale(p, self.problem_type)
        p["label_smoothing"] = label_smoothing(p, self.problem_type, self.eval_metric)

        hidden = round_hidden_size(int(p["hidden_size"]), int(p["num_heads"]))
        if hidden != p["hidden_size"]:
            logger.log(15, f"\tMAYA: hidden_size {p['hidden_size']} -> {hidden} (multiple of num_heads={p['num_heads']})")
        p["hidden_size"] = hidden

        enc = self.preprocess(X, is_train=True)
        kind = self._label_kind()
        if kind == "class":
            y_label = y_target = np.asarray(y, dtype=np.int64)
            out_dim = self.num_classes
        else:
            self._target_scaler = TargetScaler(y)
            y_label = y_target = self._target_scaler.transform(y)
            out_dim = len(self.quantile_levels) if kind == "quantile" else 1
        if enc.x_num.shape[1] + enc.x_cat.shape[1] == 0:
            from autogluon.core.utils.exceptions import NoValidFeatures
            raise NoValidFeatures("MAYA received no usable features")

        def build_network(num_layers: int) -> MayaNetwork:
            return MayaNetwork(
                n_num=enc.x_num.shape[1], cat_cardinalities=self._encoder.cat_cardinalities, out_dim=out_dim,
                label_kind="class" if kind == "class" else "real", num_classes=self.num_classes or 0,
                hidden_size=hidden, num_heads=int(p["num_heads"]), num_branch=int(p["num_branch"]),
                num_layers=num_layers, intermediate_factor=float(p["intermediate_factor"]),
                dropout=float(p["dropout"]), if_bias=bool(p["if_bias"]), add_act=bool(p["add_act"]),
                act_type=p["act_type"], num_decoder_layers=int(p["num_decoder_layers"]),
                decoder_intermediate_factor=float(p["decoder_intermediate_factor"]),
                decoder_act_type=p["decoder_act_type"], decoder_dropout=float(p["decoder_dropout"]),
                decoder_if_bias=bool(p["decoder_if_bias"]), qk_shared_weights=bool(p["qk_shared_weights"]),
                use_branch_weights=bool(p["use_branch_weights"]), numeric_scale=p["numeric_scale"],
            )

        x_num, x_cat, y_label_t, y_target_t = to_tensors([enc.x_num, enc.x_cat, y_label, y_target], device)
        w_t = None
        if sample_weight is not None:
            w_t = to_tensors([np.asarray(sample_weight, dtype=np.float32)], device)[0]

        val_score_fn, val_proba = None, None
        use_es = bool(p["early_stopping"]) and X_val is not None and len(X_val) > 0
        if use_es:
            val_enc = self.preprocess(X_val)
            vx_num, vx_cat = to_tensors([val_enc.x_num, val_enc.x_cat], device)
            y_val_np = np.asarray(y_val)

            def val_proba(f: FittedMaya) -> np.ndarray:
                return self._raw_to_proba(f.predict_raw(vx_num, vx_cat, int(p["predict_chunk_size"]),
                                                        p["context_topk"]))

            def score(proba: np.ndarray, metric=None) -> float:
                return self.score_with_y_pred_proba(y=y_val_np, y_pred_proba=proba,
                                                    metric=self.stopping_metric if metric is None else metric)

            def val_score_fn(f: FittedMaya) -> float:  # the trainer has just refreshed f's context
                return score(val_proba(f))

        # one loss for all members, built before anything trains
        loss_fn = make_loss(kind, self.quantile_levels, p["label_smoothing"])
        # What decides whether a further member stays: the stopping metric, except that classification is
        # judged by log loss (against the smoothed targets where label smoothing is on, see smoothed_log_loss).
        # Accuracy on satimage's 1,030 validation rows dropped a member twice for one row (0.9049 vs 0.9058,
        # 0.9068 vs 0.9078); a proper score of the averaged probabilities moves with every row's confidence, not
        # only with the rows that flip.
        member_metric = smoothed_log_loss(p["label_smoothing"]) if kind == "class" else self.stopping_metric
        max_members = resolve_members(p["ensemble_members"], time_limit)
        parallel = resolve_parallel(p["parallel_members"], max_members, num_cpus, device.type)
        if parallel > 1:
            from .trainer import effective_batch_size

            activ = activation_bytes(effective_batch_size(p["batch_size"], len(enc), p["auto_batch_rows"]),
                                     enc.x_num.shape[1] + enc.x_cat.shape[1], hidden, int(p["num_layers"]),
                                     int(p["num_branch"]))
            if activ > PARALLEL_MAX_ACTIVATION_BYTES:
                logger.log(15, f"\tMAYA: members train one at a time: a network of this size ({activ / 2**20:.0f} MB "
                               f"of activations a step) runs faster on all {num_cpus} threads")
                parallel = 1
        members, summaries, member_probas, ensemble_score, dropped = [], [], [], None, []
        members_stop = f"ensemble_members={max_members}"
        started_with = []  # each member's time share when it started (the whole fit's time left for the first)
        deeper_planned = False
        member_layers = list(p["member_layers"] or [])  # refit_full replays the depths a fit chose

        def member_seed(i: int) -> int:
            return seed + MEMBER_SEED_STRIDE * i

        def replayed_layers(i: int) -> int:  # refit_full replays the depths a fit chose; else num_layers
            return member_layers[i] if i < len(member_layers) else int(p["num_layers"])

        def build_member(i: int, layers: int) -> FittedMaya:
            if i > 0:
                torch.manual_seed(member_seed(i))  # member 0 keeps the fit's own seeding
            return FittedMaya(build_network(layers)).to(device)

        def train_member(i: int, fitted: FittedMaya, member_budget, threads: int, reserve_passes: int = 0) -> dict:
            start = budget.elapsed()
            summary = train_maya(fitted, x_num=x_num, x_cat=x_cat, y_label=y_label_t, y_target=y_target_t,
                                 sample_weight=w_t, loss_fn=loss_fn, params=p,
                                 device=device, budget=member_budget, seed=member_seed(i),
                                 val_score_fn=val_score_fn, max_epochs=int(p["max_epochs"]), num_threads=threads,
                                 reserve_passes=reserve_passes)
            if summary["steps"] > 0 and not summary["context_fresh"]:  # the restored weights must encode it
                fitted.set_context(x_num, x_cat, y_label_t)
            summary["train_seconds"] = budget.elapsed() - start
            summary["started_at"] = start
            at_best = [t for epoch, t, _ in summary["history"] if epoch == summary["best_epoch"]]
            summary["seconds_to_best"] = at_best[0] - start if at_best else summary["train_seconds"]
            return summary

        i = 0
        while i < max_members:
            if i == 0 and parallel > 1:
                # The first members train at once, one thread each (2 cores): a default-size step is made of
                # small kernels that a second thread barely speeds up (letter, batch 128: 10.3 ms on one
                # thread, 14.0 ms on two), while two members in two threads take 11.7 ms a step each, ~1.8x the
                # work per second (session 11).  Each has the whole budget.
                round_ = list(range(min(parallel, max_members)))
                layers_of = [replayed_layers(j) for j in round_]
                fitted_round = [build_member(j, layers_of[j]) for j in round_]
                threads_each = max(1, num_cpus // len(round_))
                logger.log(15, f"\tMAYA: members 1-{len(round_)} train in parallel, {threads_each} thread(s) each")
                started_with.extend([budget.remaining()] * len(round_))
                # one budget for the pair, on the fit's clock: a member that fails ends it, so that the other
                # stops at its next step instead of training on to the limit before the error is raised
                pair_budget = budget.share(float("inf"))

                def train_in_pair(j: int, f: FittedMaya) -> dict:
                    try:
                        # one validation pass kept back: after the pair, both members are scored for the average
                        return train_member(j, f, pair_budget, 1, reserve_passes=1 if val_proba is not None else 0)
                    except BaseException:
                        pair_budget.limit = 0.0
                        raise

                with torch_threads(threads_each), ThreadPoolExecutor(len(round_)) as pool:
                    futures = [pool.submit(train_in_pair, j, f) for j, f in zip(round_, fitted_round)]
                    summaries_round = [fut.result() for fut in futures]
            else:
                layers = replayed_layers(i)
                member_budget = budget
                if i > 0 and budget.limit is not None:
                    # Planned again before each further member, from the time actually left: a member that
                    # early-stops leaves time for another (letter, 600 s: with the plan made once, the second
                    # member early-stopped after 167 s and the fit ended at 376 s of 600).  Each member is scored
                    # on validation after it trains (one pass) and anneals its rate to the end of its own share.
                    if deeper_planned:
                        members_stop = "the deeper member took all the time left"
                        break
                    plan = plan_further_members(
                        time_left=budget.remaining(), validation_seconds=summaries[0]["validation_seconds"] or 0.0,
                        first_train_seconds=summaries[0]["train_seconds"],
                        first_seconds_to_best=summaries[0]["seconds_to_best"], max_further=max_members - i,
                        num_layers=int(p["num_layers"]), member_time=float(p["member_time"]),
                        deeper_member=p["deeper_member"],
                        may_deepen=i == max(1, parallel) and p["ensemble_members"] in (None, "auto")
                        and not member_layers)
                    logger.log(15, f"\tMAYA: member {i + 1}: {plan.reason}")
                    if plan.further < 1:
                        members_stop = plan.reason
                        break
                    deeper_planned = plan.num_layers > int(p["num_layers"])
                    if not member_layers:  # a replay (refit_full) keeps the depths it was given
                        layers = plan.num_layers
                    member_budget = budget.share(plan.seconds)
                round_, layers_of = [i], [layers]
                started_with.append(member_budget.remaining())
                fitted_round = [build_member(i, layers)]
                summaries_round = [train_member(i, fitted_round[0], member_budget, num_cpus)]
            stop = False
            for j, fitted, summary, layers in zip(round_, fitted_round, summaries_round, layers_of):
                failed = summary["stop_reason"].startswith("infeasible") or summary["steps"] == 0
                if failed and j == 0:
                    if summary["stop_reason"].startswith("infeasible"):
                        raise TimeLimitExceeded(f"MAYA skipped (batch_size={p['batch_size']}, num_layers="
                                                f"{p['num_layers']}, hidden_size={hidden}): {summary['stop_reason']}")
                    raise TimeLimitExceeded("MAYA could not run a single training step within the time limit")
                if failed:
                    members_stop, stop = f"member {j + 1}: {summary['stop_reason']}", True
                    break
                summary["rows_per_second"] = summary["epochs"] * len(enc) / max(summary["train_seconds"], 1e-9)
                summary["seed"] = member_seed(j)
                summary["num_layers"] = layers
                summary["parallel"] = len(round_)
                if val_proba is not None and j > 0:
                    if not member_probas:  # the first member's share, scored only once a second one exists
                        member_probas.append(val_proba(members[0]))
                        summaries[0]["ensemble_val_score"] = score(member_probas[0])
                        summaries[0]["ensemble_member_score"] = ensemble_score = score(member_probas[0], member_metric)
                    proba = val_proba(fitted)
                    average = np.mean(member_probas + [proba], axis=0)
                    averaged = score(average, member_metric)
                    if averaged < ensemble_score:
                        # the next member still trains in its planned share: one that hurts the average says
                        # little about the next seed
                        dropped.append(f"member {j + 1} dropped: the average scored {averaged:.4f} on validation "
                                       f"({member_metric.name}), "
                                       f"{ensemble_score:.4f} without it")
                        logger.log(15, f"\tMAYA: {dropped[-1]}")
                        continue
                    member_probas.append(proba)
                    summary["ensemble_val_score"] = score(average)
                    summary["ensemble_member_score"] = ensemble_score = averaged
                members.append(fitted)
                summaries.append(summary)
            if stop:
                break
            i += len(round_)
        self.model = FittedMayaMembers(members)
        summary = dict(summaries[0])
        summary["members_stop"] = members_stop
        summary["members_dropped"] = dropped
        summary["members_started_with_seconds"] = started_with
        member_keys = ("seed", "num_layers", "parallel", "started_at", "epochs", "best_epoch", "best_score", "stop_reason", "train_seconds",
                       "seconds_to_best", "ensemble_val_score", "ensemble_member_score")
        summary["members"] = [{k: m.get(k) for k in member_keys} for m in summaries]
        self._fit_summary = summary
        # refit_full trains on all rows, without validation: as many members as were kept here, each for
        # the mean of their best epoch counts
        self.params_trained["ensemble_members"] = len(members)
        self.params_trained["member_layers"] = [m["num_layers"] for m in summaries]
        self.params_trained["max_epochs"] = max(1, int(round(np.mean([m["best_epoch"] for m in summaries]))))
        self.params_trained["early_stopping"] = False
        self.params_trained["hidden_size"] = hidden
        # what "auto" became, for refit_full and the saved model; refit_full (no validation) replays the
        # average only where it won this fit's validation (the first member's)
        self.params_trained["numeric_scale"] = p["numeric_scale"]
        self.params_trained["label_smoothing"] = p["label_smoothing"]
        self.params_trained["ema_epochs"] = None if summary["best_is_average"] is False else p["ema_epochs"]
        logger.log(15, f"\tMAYA trained {summary['epochs']} epochs (best {summary['best_epoch']}, batch "
                       f"{summary['batch_size']}, stop: {summary['stop_reason']}), "
                       f"{summary['rows_per_second']:.0f} rows/s, threads chosen {summary['threads']}"
                       + (f"; {len(members)} members" if len(members) > 1 else ""))

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

    def _predict_proba(self, X: pd.DataFrame, **kwargs) -> np.ndarray:
        import torch

        from ..common.training import to_tensors, torch_threads

        p = self._get_model_params()
        enc = self.preprocess(X, **kwargs)
        device = next(self.model.parameters()).device
        with torch_threads(self._get_child_num_cpus()):
            x_num, x_cat = to_tensors([enc.x_num, enc.x_cat], device)
            raws = self.model.predict_raw_members(x_num, x_cat, int(p["predict_chunk_size"]), p["context_topk"])
        # classification averages probabilities (not logits), regression the de-standardized values
        return np.mean([self._raw_to_proba(r) for r in raws], axis=0).astype(np.float32)

    # ---- device / resources / tags ------------------------------------------------------
    def get_device(self) -> str:
        return next(self.model.parameters()).device.type

    def _set_device(self, device: str):
        self.model.to(self.to_torch_device(device))

    @classmethod
    def _estimate_memory_usage_static(cls, *, X: pd.DataFrame, hyperparameters: dict = None,
                                      num_classes: int = 1, **kwargs) -> int:
        """Peak host RAM: process baseline + data copies + activations of one training batch + the
        1024-row chunks that encode the context + the inference similarity block (capped at 64M floats
        by ``FittedMaya.predict_raw``).  Calibrated on telco_churn and satimage P1 fits (measured
        increase 646 / 913 MB; this gives ~0.9 / 1.2 GB, deliberately on the safe side)."""
        hp = {**DEFAULT_PARAMS, **{k: v for k, v in (hyperparameters or {}).items() if k in DEFAULT_PARAMS}}
        n, f = len(X), max(1, X.shape[1])
        from .trainer import effective_batch_size

        # a search space stands for its default; "auto" becomes the task's value, as in the fit
        hp = resolve_task_defaults({k: param_value(hp, k) for k in hp}, regression=(num_classes or 1) <= 1)
        b = effective_batch_size(hp["batch_size"], n, hp["auto_batch_rows"])
        d, L, br = int(hp["hidden_size"]), int(hp["num_layers"]), int(hp["num_branch"])
        if hp["deeper_member"] and hp["ensemble_members"] in (None, "auto"):
            L += 1  # a deeper further member may follow the first
        data = 4 * n * f * 6  # encoded copies, tensors, context encodings
        activ = activation_bytes(b, f, d, L, br)
        # the fit decides on a pair at num_layers (before any deeper member), so the same size is judged here
        if parallel_wanted(hp["parallel_members"]) > 1 \
                and activation_bytes(b, f, d, int(hp["num_layers"]), br) <= PARALLEL_MAX_ACTIVATION_BYTES:
            activ *= 2  # two members may train at once
        context_chunks = 4 * 1024 * (f + 1) * d * br * 12  # eval-mode encoding of 1024 context rows
        params = 4 * 4 * (L * br * 4 * d * d + 2 * d * d * 3 + f * d * 2 + 64 * d * max(1, num_classes or 1))
        sim = 4 * min(1 << 26, 1024 * n)
        return int(6e8 + data + activ + context_chunks + params + sim)

    @classmethod
    def _class_tags(cls):
        return {"reset_torch_threads": True}

    def _more_tags(self) -> dict:
        return {"can_refit_full": True}
