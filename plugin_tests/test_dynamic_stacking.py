"""Dynamic stacking (DyStack) with the STRING keys "MAYA" and "TABSWIFT".

AutoGluon runs the DyStack sub-fit in a fresh Ray worker that resolves the hyperparameter keys in its
own model registry; without ``autogluon_maya._registry.install_dystack_hook`` that worker has never
imported ``autogluon_maya``, the sub-fit dies with "Unknown model type ... 'MAYA'" (logged, not raised)
and DyStack picks ``num_stack_levels`` from nothing.  MAYA's bagging keeps the default parallel (Ray)
fold strategy, so the sub-fit's nested fold workers (which receive the model object, not the key) are
exercised too.
"""

import logging
from pathlib import Path

from autogluon.tabular import TabularPredictor


def test_string_key_is_trained_in_the_dystack_sub_fit(caplog):
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True).frame.sample(n=300, random_state=0).reset_index(drop=True)
    # For speed (each parallel fold is a fresh Ray worker): MAYA only on level 1, where it keeps the
    # default parallel fold strategy; GBM fits its folds in-process.
    gbm = {"num_boost_round": 10, "ag_args_ensemble": {"fold_fitting_strategy": "sequential_local"}}
    ag_logger = logging.getLogger("autogluon")  # AutoGluon may stop propagation to the root logger
    ag_logger.addHandler(caplog.handler)
    try:
        pred = TabularPredictor(label="target", path="ag", verbosity=2).fit(
            data, hyperparameters={1: {"MAYA": {"max_epochs": 10}, "TABSWIFT": {"n_estimators": 1, "max_context_rows": 128, "fine_tune": False},
                                     "GBM": gbm}, 2: {"GBM": gbm}},
            num_bag_folds=2, num_stack_levels=1, dynamic_stacking=True,
            ds_args={"clean_up_fits": False})  # keep the sub-fit on disk as evidence
    finally:
        ag_logger.removeHandler(caplog.handler)
    log = caplog.text

    assert "Unknown model type" not in log, log[log.find("Unknown model type") - 200:][:600]
    assert "Exception encountered during DyStack sub-fit" not in log
    # AutoGluon logs the sub-fit's holdout leaderboard in the driver process: Maya must be on it.
    assert "Leaderboard on holdout data (DyStack)" in log
    assert "Maya_BAG_L1" in log.split("Leaderboard on holdout data (DyStack)", 1)[1]
    assert "TabSwift_BAG_L1" in log.split("Leaderboard on holdout data (DyStack)", 1)[1]

    # The sub-fit predictor itself (written by the Ray worker) holds the trained Maya model, stacked on.
    sub_fits = sorted(p.parent for p in Path("ag", "ds_sub_fit").glob("*/predictor.pkl"))
    assert sub_fits, "no DyStack sub-fit was saved"
    sub = TabularPredictor.load(str(sub_fits[0]), verbosity=0)
    assert {"Maya_BAG_L1", "TabSwift_BAG_L1", "LightGBM_BAG_L1", "LightGBM_BAG_L2"} <= set(sub.model_names()), \
        sub.model_names()

    # ... and the main fit trains Maya too (stacking kept or not, depending on DyStack's verdict).
    lb = pred.leaderboard(silent=True)
    assert {"Maya_BAG_L1", "TabSwift_BAG_L1"} <= set(lb["model"]), lb
    # trained on the right labels, not just present: out-of-fold accuracy well above the majority class
    majority = data["target"].value_counts(normalize=True).max()  # 0.63
    scores = lb.set_index("model")["score_val"]
    assert scores["Maya_BAG_L1"] > majority + 0.2 and scores["TabSwift_BAG_L1"] > majority + 0.2, (scores, majority)


def test_hook_is_installed_once_and_ships_by_reference():
    """Fast checks of the mechanism: one wrapper of ours, and Ray's pickle of it names our module."""
    from autogluon.tabular.predictor import predictor as ag_predictor
    from ray import cloudpickle

    from autogluon_maya import MayaModel, _registry, register_models

    assert _registry.install_dystack_hook()
    hook = ag_predictor._dystack
    assert hook is _registry._dystack_with_registered_models
    register_models([MayaModel])  # a repeat registration (e.g. TabSwift's) does not stack a second wrapper
    assert _registry.install_dystack_hook() and ag_predictor._dystack is hook
    assert not _registry._is_our_hook(hook.__wrapped__) and hook.__wrapped__ is _registry._original_dystack
    payload = cloudpickle.dumps(hook)  # what ray.remote(_dystack) exports: a reference, not AutoGluon's function
    assert b"autogluon_maya._registry" in payload and len(payload) < 300, payload


def test_autogluons_private_dystack_still_has_the_signature_the_hook_passes_through():
    """The hook replaces a private AutoGluon function (no public route makes a DyStack worker import a plugin):
    when AutoGluon changes that function, this test fails by name instead of DyStack silently losing MAYA."""
    import inspect

    from autogluon.tabular.predictor import predictor as ag_predictor

    from autogluon_maya import _registry

    original = _registry._original_dystack
    assert original is not None and original.__module__ == ag_predictor.__name__
    assert tuple(inspect.signature(original).parameters) == _registry._DYSTACK_PARAMS, (
        f"AutoGluon's _dystack changed signature: {inspect.signature(original)}")
    assert "_dystack" in ag_predictor.TabularPredictor._sub_fit_memory_save_wrapper.__code__.co_names


def test_a_changed_dystack_is_refused_with_a_warning(monkeypatch):
    import warnings

    from autogluon.tabular.predictor import predictor as ag_predictor

    from autogluon_maya import _registry

    def changed(predictor, train_data, time_limit, ds_fit_kwargs):  # a hypothetical new signature
        return None

    monkeypatch.setattr(ag_predictor, "_dystack", changed)
    monkeypatch.setattr(_registry, "_original_dystack", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _registry.install_dystack_hook() is False
    assert ag_predictor._dystack is changed
    assert any("unexpected signature" in str(w.message) for w in caught)
