"""MAYA and TabSwift as TabArena methods: config generators and bagged experiments in TabArena's own terms.

Requires ``tabarena`` (``pip install "autogluon_maya[bench]"``), which this module imports only inside its
functions: ``import autogluon_maya`` never imports it.

* :func:`maya_config_generator` -- MAYA's default (``{}``, named ``Maya_c1``) then random draws (``Maya_r1``,
  ``Maya_r2``, ...) from :func:`autogluon_maya.maya_search_space`, drawn by TabArena's ``ConfigGenerator``
  (AutoGluon's ``LocalRandomSearcher``, fixed seed: the same draws on every machine).
* :func:`tabswift_config_generator` -- TabSwift's default with the checkpoint that ships in the package
  (``{"checkpoint_path": "shipped"}``, named ``TabSwift_c1``); ``checkpoint_path="auto"`` takes the authors'
  released weights instead (after :func:`autogluon_maya.prefetch_weights`).
* :func:`bag_experiments`, :func:`maya_experiments`, :func:`tabswift_experiments` -- ``AGModelBagExperiment``
  objects with TabArena's protocol (8 bag folds, one bag set, a one-hour fit limit), named as TabArena names
  its own (``Maya_c1_BAG_L1``, ``Maya_r1_BAG_L1``, ``TabSwift_c1_BAG_L1``).

A generator also goes straight into ``TabArenaExperimentBundle(models=[(maya_config_generator(), 10)], ...)``,
the route TabArena recommends for a model outside its registry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from tabarena.benchmark.experiment import AGModelBagExperiment
    from tabarena.utils.config_utils import ConfigGenerator

#: TabArena's bagging protocol for its own models: 8 folds, one set, a one-hour limit on each model's fit
NUM_BAG_FOLDS = 8
NUM_BAG_SETS = 1
TIME_LIMIT = 3600

#: TabSwift's default in TabArena: the pretrained checkpoint shipped in the package, identical on every machine
TABSWIFT_DEFAULT: dict[str, Any] = {"checkpoint_path": "shipped"}


def _model_cls(model):
    """``MAYA`` / ``TABSWIFT`` (the registry keys) or the model class itself -> the model class."""
    from ..maya import MayaModel
    from ..tabswift.model import TabSwiftModel

    if isinstance(model, str):
        by_key = {MayaModel.ag_key: MayaModel, TabSwiftModel.ag_key: TabSwiftModel}
        if model.upper() not in by_key:
            raise ValueError(f"model must be one of {sorted(by_key)} or a model class, got {model!r}")
        return by_key[model.upper()]
    return model


def maya_config_generator(device: str = "cpu") -> ConfigGenerator:
    """MAYA's TabArena config generator: the default ``{}`` first, then random draws from
    ``maya_search_space(device=device)`` ("cpu": the space sized for CPUs; "gpu": the paper's Table 12).

    ``generate_all_configs_lst(n)`` lists the configs (``Maya_c1``, then ``Maya_r1`` ... ``Maya_r{n}``),
    ``generate_all_bag_experiments(n, ...)`` builds experiments from them."""
    from tabarena.utils.config_utils import ConfigGenerator

    from ..maya import MayaModel, maya_search_space

    return ConfigGenerator(model_cls=MayaModel, search_space=maya_search_space(device=device), manual_configs=[{}])


def tabswift_config_generator(checkpoint_path: str = "shipped") -> ConfigGenerator:
    """TabSwift's TabArena config generator: one config, the default with ``checkpoint_path`` ("shipped": the
    checkpoint in the package; "auto": the authors' released weights where fetched, see ``prefetch_weights``).
    A pretrained in-context model is run at its default, as TabArena runs its own TabSwift (no random draws)."""
    from tabarena.utils.config_utils import ConfigGenerator

    from ..tabswift.model import TabSwiftModel

    return ConfigGenerator(model_cls=TabSwiftModel, search_space={},
                           manual_configs=[{**TABSWIFT_DEFAULT, "checkpoint_path": checkpoint_path}])


def bag_experiments(model: str | type, configs: Sequence[dict[str, Any]], *,
                    time_limit: float | None = TIME_LIMIT, num_bag_folds: int = NUM_BAG_FOLDS,
                    num_bag_sets: int = NUM_BAG_SETS, add_seed: str = "fold-config-wise",
                    name_prefix: str = "c", **kwargs) -> list[AGModelBagExperiment]:
    """One ``AGModelBagExperiment`` per hyperparameter dict in ``configs``, for ``model`` ("MAYA", "TABSWIFT" or
    the class), with TabArena's protocol by default (8 folds, one set, 3,600 s per model fit, and the seeds of
    ``TabArenaExperimentBundle``: each config its own, varied across its folds).

    A config from a generator's ``generate_all_configs_lst`` keeps its name (``Maya_r3_BAG_L1``); plain dicts
    are named in order ``{ag_name}_{name_prefix}{i}_BAG_L1`` (``Maya_c1_BAG_L1``, ``Maya_c2_BAG_L1``, ...).
    ``kwargs`` go to TabArena's ``generate_bag_experiments`` (e.g. ``fold_fitting_strategy``, ``method_kwargs``)
    and on to ``AGModelBagExperiment``."""
    from tabarena.utils.config_utils import add_suffix_to_config, generate_bag_experiments

    configs = [dict(config) for config in configs]
    tagged = ["name_suffix" in config.get("ag_args", {}) for config in configs]
    if any(tagged) and not all(tagged):
        raise ValueError("configs mix named (from a config generator) and unnamed dicts; pass one kind")
    if not all(tagged):
        configs = [add_suffix_to_config(config, suffix=f"_{name_prefix}{i + 1}") for i, config in enumerate(configs)]
    return generate_bag_experiments(model_cls=_model_cls(model), configs=configs, time_limit=time_limit,
                                    num_bag_folds=num_bag_folds, num_bag_sets=num_bag_sets,
                                    add_seed=add_seed, name_suffix_from_ag_args=True, **kwargs)


def maya_experiments(num_random_configs: int = 0, *, device: str = "cpu",
                     **kwargs) -> list[AGModelBagExperiment]:
    """MAYA's default then ``num_random_configs`` random draws, as bagged experiments (``Maya_c1_BAG_L1``,
    ``Maya_r1_BAG_L1``, ...); ``kwargs`` as in :func:`bag_experiments`."""
    configs = maya_config_generator(device=device).generate_all_configs_lst(num_random_configs=num_random_configs)
    return bag_experiments("MAYA", configs, **kwargs)


def tabswift_experiments(checkpoint_path: str = "shipped", **kwargs) -> list[AGModelBagExperiment]:
    """TabSwift's default as a bagged experiment (``TabSwift_c1_BAG_L1``); ``kwargs`` as in
    :func:`bag_experiments`."""
    configs = tabswift_config_generator(checkpoint_path=checkpoint_path).generate_all_configs_lst(num_random_configs=0)
    return bag_experiments("TABSWIFT", configs, **kwargs)


__all__ = ["NUM_BAG_FOLDS", "NUM_BAG_SETS", "TABSWIFT_DEFAULT", "TIME_LIMIT", "bag_experiments",
           "maya_config_generator", "maya_experiments", "tabswift_config_generator", "tabswift_experiments"]
