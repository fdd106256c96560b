"""Results of ``examples/benchmarks/tabarena_run.py`` across runs into one folder: the method labels a row is
keyed by, the settings an earlier run's results must share, the rows of an earlier ``results.csv`` a run keeps
(per (table, method), with the package-commit check on the package's own methods), the order of the merged rows,
the ``settings.json`` that describes them all, and the cached fits of kept rows this disk still holds.

A run over some tables or some methods adds to the folder: it replaces the rows of the (table, method) pairs it
fits and keeps every other row, so runs spread over machines without each other's raw cache end in one
``results.csv``."""

from __future__ import annotations

import json
import math
from pathlib import Path

#: the label each method gets in the outputs, by the config name's prefix (the model's ``ag_name``)
LABELS = {"CatBoost": "CatBoost", "LightGBM": "LightGBM", "XGBoost": "XGBoost", "TA-TabM": "TabM",
          "TA-RealMLP": "RealMLP", "Maya": "MAYA", "TabSwift": "TabSwift"}
#: the seven methods in output order (``--methods`` takes these labels)
METHODS = tuple(LABELS.values())
#: the methods whose code is this package's: their results depend on the package commit, the registry's do not
OWN_METHODS = ("MAYA", "TabSwift")
#: settings whose change makes earlier results in the same --out something else
RESULT_SETTINGS = ("seed", "max_rows", "time_limit", "num_bag_folds", "num_cpus", "num_gpus", "smoke",
                   "parallel_folds", "bundle")


def label_of(config: str) -> str:
    """``CatBoost_c1_default_BAG_L1`` -> ``CatBoost``, ``TA-TabM_c1_default_BAG_L1`` -> ``TabM``,
    ``Maya_c1_default_BAG_L1`` -> ``MAYA``."""
    prefix = config.split("_")[0]
    return LABELS.get(prefix, prefix)


def check_settings(out: Path, settings: dict) -> None:
    """Stop when ``out`` holds results made with other result-defining settings."""
    path = out / "settings.json"
    if not path.is_file():
        return
    old = json.loads(path.read_text()).get("settings", {})
    changed = {k: (old.get(k), settings[k]) for k in RESULT_SETTINGS if k in old and old[k] != settings[k]}
    if changed:
        raise SystemExit(f"error: {out} holds results made with other settings "
                         f"({', '.join(f'{k}: {a!r} -> {b!r}' for k, (a, b) in changed.items())}); "
                         "choose another --out")


def row_package_commits(results, settings: dict):
    """The package commit each ``results.csv`` row was made by: its ``package_commit`` column; a row written
    before that column existed takes the one of the ``settings.json`` written with it."""
    import pandas as pd

    fallback = settings.get("code", {}).get("package_commit")
    if "package_commit" not in results.columns:
        return pd.Series(fallback, index=results.index, dtype=object)
    commits = results["package_commit"]
    return commits.where(commits.notna(), fallback)


def earlier_tables(out: Path, tables: list[str], package_commit: str,
                   methods=METHODS) -> tuple[list[dict], list[dict]]:
    """What an earlier run into ``out`` holds outside this run's (table, method) pairs (``tables`` x
    ``methods``): its ``results.csv`` rows and the table infos of the kept tables this run does not cover, so
    that a run over some of the tables or some of the methods adds to the results rather than replacing them
    (the raw predictions of those pairs may be gone: a new checkout holds only the committed files).

    The package commit matters for this package's own methods (:data:`OWN_METHODS`) alone: when this run fits
    one of them, every kept row of MAYA or TabSwift must have been made by the same, clean package (its
    ``package_commit`` column; rows written before that column existed take the one of ``settings.json``), so
    that results of two versions of these models are never mixed in; otherwise the run stops with an error
    before anything is fitted.  The registry's methods do not depend on this package: their rows are kept
    whatever package commit wrote them, and so are own rows beside a run that fits no own method (it adds no
    row that depends on the package)."""
    import pandas as pd

    results_path, settings_path = out / "results.csv", out / "settings.json"
    if not results_path.is_file() or not settings_path.is_file():
        return [], []
    old = json.loads(settings_path.read_text())
    frame = pd.read_csv(results_path, float_precision="round_trip")  # the errors as written, to the last digit
    frame = frame[~(frame["table"].isin(tables) & frame["method"].isin(methods))]
    if frame.empty:
        return [], []
    frame = frame.assign(package_commit=row_package_commits(frame, old))
    if set(methods) & set(OWN_METHODS):
        own = frame[frame["method"].isin(OWN_METHODS)]
        others = own[(own["package_commit"] != package_commit) | package_commit.endswith("-dirty")]
        if len(others):
            made = ", ".join(f"{t}/{m} ({c})" for t, m, c in
                             zip(others["table"], others["method"], others["package_commit"]))
            raise SystemExit(f"error: {out} holds results made by another package: {made}; this run's package is "
                             f"{package_commit}: choose another --out, or rerun those (table, method) pairs too")
    outside = set(frame["table"]) - set(tables)
    infos = [i for i in old.get("tables", []) if i["table"] in outside]
    lacking = sorted(outside - {i["table"] for i in infos})
    if lacking:
        raise SystemExit(f"error: {settings_path} has no table sizes for {', '.join(lacking)} of results.csv; "
                         "rerun those tables too")
    return frame.to_dict(orient="records"), infos


def table_order(out: Path, tables: list[str]) -> list[str]:
    """The tables of the folder after this run: those ``settings.json`` lists, in its order, then this run's
    new ones; a table keeps its place when a run over some methods refits it."""
    path = out / "settings.json"
    earlier = json.loads(path.read_text()).get("settings", {}).get("tables", []) if path.is_file() else []
    return list(dict.fromkeys([*earlier, *tables]))


def merged_rows(kept: list[dict], new: list[dict], order: list[str]) -> list[dict]:
    """The kept and the new ``results.csv`` rows, sorted by table (``order``) then method (:data:`METHODS`):
    the file reads the same whichever (table, method) pairs each run fitted."""
    rank = {t: i for i, t in enumerate(order)}
    method_rank = {m: i for i, m in enumerate(METHODS)}
    return sorted(kept + new, key=lambda r: (rank.get(r["table"], len(rank)),
                                             method_rank.get(r["method"], len(method_rank)), str(r["method"])))


def cached_results(runs: Path, rows: list[dict]) -> list[dict]:
    """The runner's cached result (``<runs>/data/<config>/<dataset>/0_0/results.pkl``) of each ``ok`` row of
    ``rows`` that this disk holds and that is the fit the row reports (the same test error): a row written from
    another machine's fit finds none, or another fit, and is left out."""
    from tabarena.utils.cache import CacheFunctionPickle

    found = []
    for r in rows:
        if r.get("status") != "ok":
            continue
        cache = CacheFunctionPickle(cache_name="results", cache_path=runs / "data" / r["config"] / r["dataset"]
                                    / "0_0", verbose=False)
        if not cache.exists:
            continue
        result = cache.load_cache()
        if math.isclose(float(result["metric_error"]), float(r["test_error"]), rel_tol=1e-9):
            found.append(result)
    return found


def kept_from_earlier(out: Path, settings: dict, package_commit: str,
                      methods=METHODS) -> tuple[list[dict], list[dict], list[str]]:
    """What a run over ``settings["tables"]`` x ``methods`` keeps of an earlier run into ``out``
    (:func:`earlier_tables`: the kept rows and the infos of the kept tables it does not cover), announced, and
    the folder's tables after the run in their order (:func:`table_order`): earlier tables without a kept row
    and not refitted drop out."""
    kept_rows, kept_infos = earlier_tables(out, settings["tables"], package_commit, methods)
    if kept_rows:
        kept = {}
        for r in kept_rows:
            kept.setdefault(r["table"], []).append(r["method"])
        print(f"kept from earlier runs into {out}: "
              + "; ".join(f"{t} ({', '.join(m)})" for t, m in kept.items()), flush=True)
    kept_tables = [i["table"] for i in kept_infos]
    order = [t for t in table_order(out, [*kept_tables, *settings["tables"]])
             if t in settings["tables"] or t in kept_tables]
    return kept_rows, kept_infos, order


def write_settings(out: Path, settings: dict, configs: list[str], kept_rows: list[dict], infos: list[dict],
                   code: dict) -> None:
    """``settings.json``: the settings (``settings["tables"]``: the folder's tables in order), the configs of
    this run and of the kept rows in :data:`METHODS` order, the sizes of every table (``infos``: the kept
    tables' and this run's; a later info of a table wins) and the code version of this run."""
    all_configs = sorted({*configs, *(r["config"] for r in kept_rows)}, key=lambda c: METHODS.index(label_of(c))
                         if label_of(c) in METHODS else len(METHODS))
    by_table = {i["table"]: i for i in infos}
    (out / "settings.json").write_text(json.dumps(
        {"settings": settings, "configs": all_configs, "tables": [by_table[t] for t in settings["tables"]],
         "code": code}, indent=1) + "\n")
