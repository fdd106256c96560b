"""Protocol P1 end to end, for the benchmark runner and every script under ``examples/benchmarks/``.

P1 (``protocol``): a dataset folder (``data.csv.gz`` + ``meta.json``) or a CSV, split
64/16/20 into train / validation / test (stratified for classification, seeded); one ``TabularPredictor``
fitted on the training part with the validation part as ``tuning_data``; test accuracy (and ROC-AUC) for
classification, RMSE for regression.

    data = p1_data("datasets/letter", seed=0)
    fit = p1_fit(data, {"MAYA": {}}, time_limit=300, num_cpus=2)
    fit.score()            # {"accuracy": ..., "roc_auc": ..., "predict_s_per_1k": ..., "val_score": ...}
    fit.model              # the fitted model object, for probes that read its internals
    fit.cleanup()          # removes the predictor's folder when p1_fit made it

A script that needs something other than the test score (a probe of the network, a sweep of a
predict-time setting) takes ``fit.predictor`` / ``fit.model`` and the parts in ``fit.data`` from here,
so the split and the fit are the same in every result folder.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Union

import pandas as pd

from .protocol import Dataset, load_dataset, p1_metric, p1_split


@dataclass
class P1Data:
    """A dataset and its P1 parts."""

    dataset: Dataset
    train: pd.DataFrame
    val: pd.DataFrame
    test: pd.DataFrame
    seed: int = 0

    @property
    def name(self) -> str:
        return self.dataset.name

    @property
    def target(self) -> str:
        return self.dataset.target

    @property
    def task(self) -> str:
        return self.dataset.task

    @property
    def metric(self) -> str:
        return p1_metric(self.dataset.task)


def p1_data(path: Union[str, Path, Dataset], seed: int = 0, max_rows: Optional[int] = None,
            label: Optional[str] = None) -> P1Data:
    """Load ``path`` (a dataset folder, a CSV or an already loaded ``Dataset``) and split it under P1."""
    ds = path if isinstance(path, Dataset) else load_dataset(path, max_rows=max_rows, seed=seed, label=label)
    train, val, test = p1_split(ds, seed)
    return P1Data(ds, train, val, test, seed)


def roc_auc(y_true, proba, positive_class=None) -> Optional[float]:
    """ROC-AUC from ``predict_proba`` (a DataFrame, one column per class), computed with sklearn.

    Binary: the AUC of the positive class.  Multiclass: one-vs-rest macro average, i.e. the mean of
    the per-class AUCs (what ``roc_auc_score(multi_class="ovr", average="macro")`` returns); done
    class by class so that a class absent from the test part is skipped rather than an error, and
    float32 probabilities that do not sum exactly to 1 are accepted.  None when undefined."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y_true)
    classes = [positive_class] if positive_class is not None else list(proba.columns)
    aucs = []
    for c in classes:
        hit = y == c
        if hit.all() or not hit.any():
            continue
        aucs.append(roc_auc_score(hit, proba[c].to_numpy()))
    return float(np.mean(aucs)) if aucs else None


def prediction_scores(task: str, y_true, pred, proba=None, positive_class=None) -> Dict[str, Any]:
    """The benchmark's test scores of one set of predictions: ``accuracy`` and ``roc_auc`` (from ``proba``, one
    column per class; see :func:`roc_auc`) for classification, ``rmse`` for regression."""
    import numpy as np
    from sklearn.metrics import accuracy_score

    if task == "regression":
        return {"rmse": float(np.sqrt(np.mean((np.asarray(pred, float) - np.asarray(y_true, float)) ** 2)))}
    return {"accuracy": float(accuracy_score(np.asarray(y_true), np.asarray(pred))),
            "roc_auc": roc_auc(y_true, proba, positive_class if task == "binary" else None)}


def p1_score(predictor, model: str, data: P1Data) -> Dict[str, Any]:
    """Test score of one fitted model under P1, its predict time per 1,000 test rows (the model persisted
    in memory first, so loading from disk is not timed) and its validation score (RMSE positive)."""
    try:
        predictor.persist(models=[model])
    except Exception:
        pass
    x_test, y_test = data.test.drop(columns=[data.target]), data.test[data.target]
    t0 = time.perf_counter()
    if data.dataset.is_classification:
        proba = predictor.predict_proba(x_test, model=model)
        pred_s = time.perf_counter() - t0
        row = prediction_scores(data.task, y_test, predictor.predict_from_proba(proba), proba, predictor.positive_class
                          if data.task == "binary" else None)
    else:
        y_pred = predictor.predict(x_test, model=model)
        pred_s = time.perf_counter() - t0
        row = prediction_scores(data.task, y_test, y_pred)
    row["predict_s_per_1k"] = round(1000.0 * pred_s / max(len(data.test), 1), 5)
    val = float(predictor.leaderboard(silent=True).set_index("model").loc[model, "score_val"])
    row["val_score"] = abs(val) if data.task == "regression" else val
    return row


@dataclass
class P1Fit:
    """A predictor fitted under P1, with its data and fit time."""

    data: P1Data
    predictor: Any
    fit_s: float
    path: str
    owns_path: bool = field(default=False, repr=False)

    @property
    def model_name(self) -> str:
        """The first fitted model (the only one when ``p1_fit`` was given one key and no ensemble)."""
        return self.predictor.model_names()[0]

    @property
    def model(self):
        """The fitted model object of ``model_name``."""
        return self.predictor._trainer.load_model(self.model_name)

    def score(self, model: Optional[str] = None) -> Dict[str, Any]:
        return p1_score(self.predictor, model or self.model_name, self.data)

    def cleanup(self) -> None:
        if self.owns_path:
            shutil.rmtree(self.path, ignore_errors=True)


def p1_fit(data: Union[str, Path, Dataset, P1Data], hyperparameters: Dict[str, Any], *, seed: int = 0,
           time_limit: Optional[float] = None, num_cpus: Optional[int] = None, num_gpus: Optional[float] = 0,
           path: Optional[str] = None, verbosity: int = 0, max_rows: Optional[int] = None,
           **fit_kwargs) -> P1Fit:
    """Fit ``TabularPredictor(...).fit(train, tuning_data=val, hyperparameters=...)`` under P1.

    ``data`` is a dataset path (split here with ``seed``) or a ``P1Data``.  No weighted ensemble and
    model failures raise, unless ``fit_kwargs`` says otherwise, so a single-key fit yields exactly that
    model.  ``path=None`` fits into a temporary folder that ``P1Fit.cleanup`` removes."""
    import autogluon_maya  # noqa: F401  (registers MAYA and TABSWIFT)
    from autogluon.tabular import TabularPredictor

    if not isinstance(data, P1Data):
        data = p1_data(data, seed=seed, max_rows=max_rows)
    owns = path is None
    path = path or tempfile.mkdtemp(prefix=f"p1_{data.name}_")
    kwargs: Dict[str, Any] = {"fit_weighted_ensemble": False, "raise_on_model_failure": True, **fit_kwargs}
    if time_limit is not None:
        kwargs["time_limit"] = time_limit
    if num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    if num_gpus is not None:
        kwargs["num_gpus"] = num_gpus
    predictor = TabularPredictor(label=data.target, problem_type=data.task, eval_metric=data.metric, path=path,
                                 verbosity=verbosity)
    t0 = time.perf_counter()
    predictor.fit(data.train, tuning_data=data.val, hyperparameters=hyperparameters, **kwargs)
    return P1Fit(data, predictor, time.perf_counter() - t0, path, owns)
