"""What both AutoGluon wrappers (MAYA, TabSwift) do the same way around torch."""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, Optional, Tuple

from .fold_worker import fit_clock_start

logger = logging.getLogger(f"autogluon.ext.{__name__}")

#: the file beside ``model.pkl`` that holds the weights of a model's torch module (see ``TorchPluginMixin.save``)
MODULE_WEIGHTS_NAME = "module.safetensors"


class TorchPluginMixin:
    """Mixed into ``AbstractTorchModel`` subclasses that declare ``seed_name``."""

    _budget_clock = None  # the fit's clock in seconds; None: wall time (tests set a clock of their own)
    _plugin_name = "the model"  # how its warnings name the model ("MAYA", "TabSwift")
    _plugin_logger = logger  # the model's own logger, the one AutoGluon's verbosity and a user's handlers address

    def _fit_budget(self, time_limit: Optional[float]):
        """The fit's ``TimeBudget``: on wall time from ``fold_worker.fit_clock_start`` (a parallel fold counts its
        worker's start-up), or on ``_budget_clock`` where a test set one (from that clock's now)."""
        from .training import TimeBudget

        if self._budget_clock is not None:
            return TimeBudget(time_limit, clock=self._budget_clock)
        return TimeBudget(time_limit, start=fit_clock_start(time_limit))

    def _start_torch_fit(self, params: Dict[str, Any], num_cpus: int, num_gpus: float) -> Tuple[int, Any]:
        """Seed torch from AutoGluon's seed in ``params``, set the thread count (restored afterwards by
        the ``reset_torch_threads`` tag) and resolve the fit device; returns (seed, torch.device)."""
        import torch

        seed = int(params.get(self.seed_name, 0) or 0)
        torch.manual_seed(seed)
        torch.set_num_threads(max(1, int(num_cpus)))
        return seed, torch.device(self._resolve_fit_device(num_gpus=num_gpus))

    # ---- saving: the module's weights apart from the pickle ---------------------------------------------
    # A model whose ``self.model`` is a torch module (MAYA's fitted networks) saves the module's tensors in
    # ``module.safetensors`` beside ``model.pkl`` and pickles the module with its tensors on torch's "meta"
    # device (shapes only, no data).  The pickle then holds no torch storage, so no device: a model fitted on
    # a GPU loads on a CPU-only machine, and the weights are read through safetensors (no pickle).  TabSwift
    # keeps its network outside the pickle in the same way (``tabswift/model.py``).
    def _module_saved_apart(self):
        import sys

        torch = sys.modules.get("torch")
        module = getattr(self, "model", None)
        if torch is None or not isinstance(module, torch.nn.Module) or not module.state_dict():
            return None
        return module

    def save(self, path: Optional[str] = None, verbose: bool = True) -> str:
        module = self._module_saved_apart()
        if module is None:
            path = super().save(path=path, verbose=verbose)
            stale = os.path.join(path, MODULE_WEIGHTS_NAME)  # from an earlier save into this folder: not this model's
            if os.path.isfile(stale):
                os.remove(stale)
            return path
        from autogluon.core.models import AbstractModel
        from safetensors.torch import save_file

        state = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in module.state_dict().items()}
        device = next(iter(module.state_dict().values())).device
        module.to("meta")
        try:  # AbstractModel's save: the torch wrapper's move to the CPU has no tensor to move here
            path = AbstractModel.save(self, path=path, verbose=verbose)
        finally:
            module.to_empty(device=device)
            module.load_state_dict(state)
        save_file(state, os.path.join(path, MODULE_WEIGHTS_NAME))
        return path

    @classmethod
    def load(cls, path: str, reset_paths: bool = True, verbose: bool = True):
        """AutoGluon's load; a module saved apart (``save``) gets its weights back from ``module.safetensors``,
        on the device it was fitted on where this machine has it, else on the CPU."""
        from autogluon.tabular.models.abstract.abstract_torch_model import AbstractTorchModel

        weights = os.path.join(path, MODULE_WEIGHTS_NAME)
        if not os.path.isfile(weights):  # nothing saved apart (TabSwift; a model saved by an older version)
            return super().load(path=path, reset_paths=reset_paths, verbose=verbose)
        from safetensors.torch import load_file

        model = super(AbstractTorchModel, cls).load(path=path, reset_paths=reset_paths, verbose=verbose)
        device = model.suggest_device_infer(verbose=verbose)
        model.model.to_empty(device=device)
        model.model.load_state_dict(load_file(weights, device=device))
        model.device = device
        return model

    # ---- the prior: what a fit must beat ----------------------------------------------------------------
    # A network that stopped early (too little time for the table) or a pretrained one that does not suit the
    # table can predict worse than the class frequencies or the mean; such a model only costs an ensemble.
    # Where a fit has scored itself on validation rows and loses to the prior, it predicts the prior instead.
    _prior = None  # the prior's prediction for one row, where the fit fell back to it

    def _prior_prediction(self, y, sample_weight=None):
        """The prior's prediction for one row, from the training labels: the class frequencies (binary: the
        positive class's), the mean (regression), the quantiles at ``quantile_levels`` (quantile)."""
        import numpy as np
        from autogluon.core.constants import BINARY, MULTICLASS, QUANTILE

        y = np.asarray(y)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if self.problem_type in (BINARY, MULTICLASS):
            counts = np.bincount(y.astype(np.int64), weights=w, minlength=max(2, int(self.num_classes or 2)))
            freq = counts / counts.sum()
            return np.float32(freq[1]) if self.problem_type == BINARY else freq.astype(np.float32)
        y = y.astype(np.float64)
        if self.problem_type == QUANTILE:
            return np.quantile(y, self.quantile_levels).astype(np.float32)
        return np.float32(np.average(y, weights=w))

    def _prior_proba(self, n: int, prior=None):
        """``n`` rows of the prior's prediction (the fitted one unless ``prior`` is given), as predict_proba."""
        import numpy as np
        from autogluon.core.constants import MULTICLASS, QUANTILE

        prior = self._prior if prior is None else prior
        if self.problem_type in (MULTICLASS, QUANTILE):
            return np.tile(prior, (n, 1)).astype(np.float32)
        return np.full(n, prior, dtype=np.float32)

    def _prior_verdict(self, score: float, y_val, prior) -> Tuple[float, str]:
        """(the prior's score on the validation labels ``y_val``, the reason a fit scoring ``score`` there loses to
        it, or "" where it does not), both on the stopping metric (AutoGluon's sign: higher is better)."""
        metric = self.stopping_metric
        prior_score = float(self.score_with_y_pred_proba(y=y_val, y_pred_proba=self._prior_proba(len(y_val), prior),
                                                         metric=metric))
        if score >= prior_score:
            return prior_score, ""
        return prior_score, (f"validation {metric.name} {metric.convert_score_to_original(score):.4f} is worse than "
                             f"the prior's {metric.convert_score_to_original(prior_score):.4f}")

    def _fall_back_to_prior(self, prior, reason: str) -> None:
        """Predict ``prior`` from now on: the model keeps no network (``_drop_network``, the model's own part)
        and says why in the log."""
        self._prior = prior
        self._drop_network(reason)
        self._plugin_logger.warning(f"{self._plugin_name} predicts the prior instead: {reason}")

    def _drop_network(self, reason: str) -> None:
        """The model's part of a fall-back to the prior: drop its network, record ``reason`` where it reports."""
        raise NotImplementedError

    # ---- predict: the network under the fit's thread count ----------------------------------------------
    def _predict_proba(self, X, **kwargs):
        """The prior where the fit fell back to it; else the network's outputs on the preprocessed rows
        (``_network_outputs``), computed on the fit's thread count, made predict_proba's array
        (``_outputs_to_proba``) outside that limit."""
        from .training import torch_threads

        if self._prior is not None:
            return self._prior_proba(len(X))
        X = self.preprocess(X, **kwargs)
        with torch_threads(self._get_child_num_cpus()):
            outputs = self._network_outputs(X)
        return self._outputs_to_proba(outputs)

    def _network_outputs(self, X):
        """What the network computes for the preprocessed rows ``X`` (under the thread limit)."""
        raise NotImplementedError

    def _outputs_to_proba(self, outputs):
        """``_network_outputs``'s result as predict_proba's float32 array."""
        import numpy as np

        return np.asarray(outputs).astype(np.float32)

    def _get_child_num_cpus(self) -> Optional[int]:
        """Threads for predict: those the fit was given (AutoGluon asserts global torch state is unchanged)."""
        n = getattr(self, "fit_num_cpus_child", None) or getattr(self, "fit_num_cpus", None)
        return int(n) if n else None


#: what torch's first import adds to a process beside AutoGluon (measured: ~180 MiB); the models' memory
#: estimates add it only where torch has not been imported yet
TORCH_IMPORT_BYTES = 200 * 2 ** 20


def param_value(params: Dict[str, Any], key: str):
    """A hyperparameter's value, or the default of a search space given in its place (memory estimates
    are asked for before HPO has picked a value)."""
    v = params[key]
    return v.default if hasattr(v, "default") else v
