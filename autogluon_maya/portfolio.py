"""Ready-made ``hyperparameters`` portfolios that put MAYA and TabSwift next to gradient-boosted trees.

    import autogluon_maya
    from autogluon_maya import hyperparameters

    predictor = TabularPredictor(label="y").fit(train, hyperparameters=hyperparameters("light"),
                                                num_bag_folds=5, num_stack_levels=1, time_limit=3600)

Each preset is a plain AutoGluon ``hyperparameters`` dict (model key -> config or list of configs,
AutoGluon's list-of-configs convention); MAYA/TabSwift variants carry ``ag_args: {"name_suffix": ...}``
so that their names on the leaderboard say which variant they are (``Maya_d128h8_BAG_L1``).  Every
call returns a fresh deep copy: editing the result never changes the next call's.

The evidence behind every entry is in the preset's docstring (``preset_doc("light")``,
``preset_doc("best")``).  Where an entry is a guess rather than a measurement, the docstring says so.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Optional

__all__ = ["hyperparameters", "PRESETS", "preset_doc", "MAYA_PRIORITY", "TABSWIFT_PRIORITY", "MAYA_SHARE_PRIORITY",
           "MAYA_SHARE_RATIO", "LIGHT_TABSWIFT"]

# Fit order of "best" (AutoGluon fits higher ``priority`` first; built-in GBM 90, CAT 70, XGB 40, and the class
# defaults MAYA 70, TABSWIFT 65): the GBDTs first, then TabSwift (seconds), then MAYA, which takes what is
# left of the level's time.  Measured reason: in a 60 s, 1-core, 5-fold bagged fit of "light" + XGB on
# qsar_biodeg with the class priorities, MAYA was fitted second and used the time that CatBoost, TabSwift
# and XGBoost then never got (examples/benchmarks/mixed_ensemble_benchmark.py smoke run) -- at a tight budget the
# "mixed" ensemble then had fewer GBDTs than the GBDT-only one.  With this order the same run fitted
# GBM, CAT and XGB and no neural model: at such budgets "mixed" falls back to the GBDTs instead of
# losing them.  ``priority`` only orders the fits; it changes no hyperparameter.
TABSWIFT_PRIORITY = 30
MAYA_PRIORITY = 20
# "light" instead gives MAYA a fair share of level 1: fitted right after LightGBM (GBM 90 > 80 > CAT 70) and
# allowed at most half of the level's time left then (``ag_args_fit.max_time_limit_ratio``), so CatBoost and
# XGBoost keep at least the other half.  On large multiclass tables the trees otherwise took all but 36-98 s
# of level 1's 400 s, too little for MAYA to learn (preset_doc("light") gives the measurements).
MAYA_SHARE_PRIORITY = 80
MAYA_SHARE_RATIO = 0.5

_LIGHT: Dict[str, Any] = {
    "MAYA": {"ag_args": {"priority": MAYA_SHARE_PRIORITY}, "ag_args_fit": {"max_time_limit_ratio": MAYA_SHARE_RATIO}},
    "GBM": {},
    "CAT": {},
}
#: "light"'s TabSwift, added where the authors' released weights are on this machine (or ``tabswift=True``): the
#: shipped checkpoint did not earn the slot on the decision tables (``_LIGHT_DOC``)
LIGHT_TABSWIFT: Dict[str, Any] = {"checkpoint_path": "auto", "fine_tune": False,
                                  "ag_args": {"priority": TABSWIFT_PRIORITY, "valid_stacker": False}}
_LIGHT_DOC = """\
"light": 2 CPU cores, minutes per model.  MAYA defaults, LightGBM, CatBoost; TABSWIFT zero-shot where the
authors' released weights are on this machine.

- Measured as a whole by the ensemble benchmark (README "Results" and docs/ensemble_benchmark.md: 12 tables,
  one 600 s fit on 2 cores each, 5-fold bagging, one stack level; this preset + XGBoost against LightGBM +
  CatBoost + XGBoost alone, and against the trees + TabM + RealMLP).
- MAYA defaults: sized for a 2-core CPU; every departure from the paper and its evidence is in docs/maya.md.
  In the benchmark MAYA earns most of its ensemble weight on regression tables.
- TABSWIFT (zero-shot, ``checkpoint_path="auto"``), only where the authors' released weights are on this
  machine (``autogluon-maya-prefetch``, or an earlier download), or with ``hyperparameters("light",
  tabswift=True)``.  Decided on the 13 decision tables, validation rows only, split seeds 0 and 1
  (``examples/benchmarks/tabswift_light_rows.py``, docs/tabswift.md "TabSwift in the presets"): with the shipped
  checkpoint, the trees' ensemble with TabSwift validated level with the trees' alone within noise even at 500
  training rows (26 (table, seed) pairs: 7 better, 4 worse, 15 the same; sign test p = 0.55) and worse at 2,000
  (8 pairs: 1 better, 4 worse); on the 12 benchmark tables it validated above the best tree on 0 of 20 fits.  The released weights are the paper's model; their cost and
  gain inside a 2-core stack are not measured.  No training step, 8 members, at most 2,048 context rows.
  At level 1 only (``ag_args.valid_stacker=False``): as a level-2 stacker (shipped checkpoint) it took 7-27 s of
  each fit and the final model gave it no weight in any of the 20 such fits of the ensemble benchmark (a
  decision that rests on the benchmark tables' validation rows).
- GBM, CAT ``{}``: AutoGluon's defaults.  XGB is left out to keep the CPU budget for the two neural models;
  it is in "best".
- Fit order (``ag_args.priority``): LightGBM, MAYA (at most half of the time left then,
  ``ag_args_fit.max_time_limit_ratio=0.5``), CatBoost, TabSwift.  Fitted last, as before, MAYA got 36-98 s of
  level 1's 400 s on the two 10,000-row multiclass tables and validated below every tree.  With this share, in
  600 s fits of the ensemble benchmark (6 tables at split seed 0, letter and otto at seed 1; docs/experiments.md,
  "A fair share of level 1 for MAYA"), the final model's validation error fell by 36 % on letter at both seeds
  (MAYA validates above every tree there and carries 0.47-0.75 of the final weight), by 3 % on satimage and 1 %
  on otto at seed 0, and moved by -0.6 % to +0.05 % on the other four pairs (otto seed 1 and three regression
  tables).  TabSwift, now fitted after CatBoost, was no longer reached on letter and otto.  This share rests on
  validation rows of benchmark tables (8 pairs: 5 better, 3 worse, sign test p = 0.73; the gain is letter's), not
  on the decision tables.
"""

_BEST: Dict[str, Any] = {
    "MAYA": [  # cheapest first: the last one fitted gets what is left of the time
        {"ag_args": {"priority": MAYA_PRIORITY}},
        {"num_decoder_layers": 2, "ag_args": {"name_suffix": "_dec2", "priority": MAYA_PRIORITY - 1}},
        {"hidden_size": 128, "num_heads": 8, "ag_args": {"name_suffix": "_d128h8", "priority": MAYA_PRIORITY - 2}},
    ],
    "TABSWIFT": [
        {"n_estimators": 16, "max_context_rows": 4096, "fine_tune": False,
         "ag_args": {"priority": TABSWIFT_PRIORITY}},
        {"n_estimators": 16, "max_context_rows": 4096, "fine_tune": "auto",
         "ag_args": {"name_suffix": "_ft", "priority": TABSWIFT_PRIORITY - 1}},
    ],
    "GBM": {},
    "CAT": {},
    "XGB": {},
}
_BEST_DOC = """\
"best": a GPU for MAYA and TabSwift (both request one GPU by default when AutoGluon sees one); the
trees run on the CPUs.  Three MAYA variants, two TabSwift variants, LightGBM, CatBoost, XGBoost.
This preset has not been measured as a whole: no GPU was available to this package's benchmarks.

- MAYA defaults (name ``Maya``), plus ``hidden_size=128, num_heads=8`` (``Maya_d128h8``) and
  ``num_decoder_layers=2`` (``Maya_dec2``): the two variants that scored best on california_housing in the
  CPU screens of docs/experiments.md ("First measurements of the defaults"); the wider one was about 3x
  slower per epoch and still improving when a 600 s 2-core budget stopped it, which is why they are GPU
  entries.  One table, one seed: that they help on other tables is an expectation, not a measurement.
- TABSWIFT ``n_estimators=16, max_context_rows=4096`` (``TabSwift``): the paper's benchmark used 16
  members; 4,096 rows is the top of ``tabswift_search_space()``.  A GPU guess, not measured.
  The caches (``cache_max_mb``/``disk_cache_mb="auto"``, the defaults) keep every member's context between
  predict calls: 16 x 24 blocks x (4,096 + 64) x 192 x 10 bytes = 2.9 GiB with the released weights, where a
  quarter of the memory available at fit time allows it; a saved model carries their float16 block inputs
  (585 MiB).
- TABSWIFT the same + ``fine_tune="auto"`` (``TabSwift_ft``): fine-tunes when the fold's time leaves room for
  the minimum step count and keeps the result only if the whole 16-member ensemble validates better than
  zero-shot, so on validation it is never worse than zero-shot; it costs a training loop per bag fold.  Not
  measured on a GPU.
- GBM, CAT, XGB ``{}``: AutoGluon's defaults; XGBoost adds a third, differently regularized tree ensemble
  for the stacker.
- Fit order (``ag_args.priority``): GBDTs, TabSwift, TabSwift_ft, then Maya, Maya_dec2, Maya_d128h8
  (cheapest first; the last one fitted gets what is left of the time).
"""

PRESETS: Dict[str, Dict[str, Any]] = {"light": _LIGHT, "best": _BEST}
_DOCS: Dict[str, str] = {"light": _LIGHT_DOC, "best": _BEST_DOC}
_NESTED = ("ag_args", "ag_args_fit", "ag_args_ensemble")


def preset_doc(preset: str) -> str:
    """The evidence for every entry of ``preset`` (what :func:`hyperparameters` documents)."""
    _check(preset)
    return _DOCS[preset]


def _check(preset: str) -> None:
    if preset not in PRESETS:
        raise ValueError(f"unknown portfolio preset {preset!r}; valid presets: {', '.join(sorted(PRESETS))}")


def _merge(config: Dict[str, Any], override: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(config)
    for k, v in override.items():
        if k in _NESTED and isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = {**out[k], **v}
        else:
            out[k] = v
    return out


def _with_tabswift(preset: str, hp: dict, tabswift: Optional[bool]) -> dict:
    """``hp`` with TabSwift where the preset and ``tabswift`` say so: "light" carries it where the released weights
    are on this machine (``tabswift=None``) or where asked (``True``); ``False`` leaves it out of either preset."""
    if tabswift is False:
        hp.pop("TABSWIFT", None)
    elif preset == "light":
        if tabswift is None:
            from .tabswift.checkpoints_io.choice import released_on_this_machine

            tabswift = released_on_this_machine()
        if tabswift:
            hp["TABSWIFT"] = copy.deepcopy(LIGHT_TABSWIFT)
    return hp


def hyperparameters(preset: str = "light", *, overrides: Optional[Dict[str, Dict[str, Any]]] = None,
                    tabswift: Optional[bool] = None) -> dict:
    """AutoGluon ``hyperparameters`` for ``preset`` ("light" or "best"), as a fresh deep copy.

    ``overrides`` (optional) maps a model key of the preset to settings merged into *every* config of
    that key (``ag_args``/``ag_args_fit``/``ag_args_ensemble`` are merged one level deep), e.g.
    ``overrides={"MAYA": {"max_epochs": 20}}``.  A key that is not in the preset is an error (add models
    to the returned dict instead).

    "light": MAYA, GBM and CAT at their defaults, for 2 CPU cores and minutes per model, and TABSWIFT (zero-shot,
    level 1 only) where the authors' released weights are on this machine: with the shipped checkpoint it did not
    lower the ensemble's validation error beyond noise on the decision tables (``preset_doc("light")``).
    ``tabswift=True`` adds it in any case ("auto" weights: the released ones where it can get them, else the
    shipped checkpoint), ``tabswift=False`` leaves it out of either preset.
    "best": for a GPU: three MAYA variants, TABSWIFT with 16 members with and without fine-tuning, GBM, CAT
    and XGB.

    In "best" MAYA and TabSwift are fitted after the GBDTs (``ag_args.priority``), so a tight ``time_limit``
    goes to the GBDTs first; in "light" MAYA is fitted right after LightGBM with at most half of the time left
    then, so that the trees cannot take all of it.  The evidence behind
    every entry, and what is a guess rather than a measurement, is in :func:`preset_doc`; the README's
    results section gives the light preset's benchmark.
    """
    _check(preset)
    hp = _with_tabswift(preset, copy.deepcopy(PRESETS[preset]), tabswift)
    for key, override in (overrides or {}).items():
        if key not in hp:
            why = (" (\"light\" carries TABSWIFT where the authors' released weights are on this machine: run "
                   "autogluon-maya-prefetch once, or pass tabswift=True)" if key == "TABSWIFT" and preset == "light"
                   else "")
            raise ValueError(f"override for {key!r}, which preset {preset!r} does not contain "
                             f"(its keys: {', '.join(hp)}){why}")
        configs = hp[key]
        if isinstance(configs, list):
            hp[key] = [_merge(c, copy.deepcopy(override)) for c in configs]
        else:
            hp[key] = _merge(configs, copy.deepcopy(override))
    return hp
