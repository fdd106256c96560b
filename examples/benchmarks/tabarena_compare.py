"""Compare what ``tabarena_run.py`` wrote: Elo, win rate and average rank of the seven methods, how many tables
each is best on, and ensembles of their stored predictions simulated with TabArena's ensemble selection.

    python examples/benchmarks/tabarena_compare.py                            # examples/benchmarks/results/tabarena_12
    python examples/benchmarks/tabarena_compare.py --out /tmp/ta_smoke        # after tabarena_run.py --smoke --out ...

Every statistic comes from TabArena's own code:

* The leaderboard: ``bencheval.BenchmarkEvaluator.leaderboard`` configured the way TabArena's
  ``LeaderboardReporter.eval`` (behind ``tabarena.nips2025_utils.compare.compare``) configures it: the table is the
  task, the outer split the seed column, results grouped by metric and problem type; Elo with 95 % bootstrap
  intervals (``--elo-rounds`` resamples of the tables, 200 as in the reporter; ``--elo-anchor`` pins one
  method at 1000, TabArena pins its random forest, which is not run here), win rate (ties count half), average
  rank, mean reciprocal rank and the rank counts -- ``rank=1_count`` is the PAMA-style count of tables a method
  is best on (a tie splits the table).  The per-table ranks are the evaluator's ``compute_results_per_task``.
  ``compare()`` itself is not called: it wraps this same evaluator call but also wants TabArena's method-metadata
  columns, the tasks' metadata (for times per 1,000 rows) and ``tueplots`` (not installed by the package's
  extras) for its figures; this script needs only ``results.csv``.
* The ensembles: ``EvaluationRepository.evaluate_ensembles`` on the repository the run saved
  (``<out>/raw/repo``), i.e. TabArena's greedy ensemble selection (Caruana et al.) fitted on the configs'
  out-of-fold validation predictions and scored on their test predictions, 40 iterations as in TabArena's
  "tuned + ensembled" results (``--ensemble-size``).  Six member sets: the trees alone (CatBoost + LightGBM +
  XGBoost), trees + MAYA + TabSwift, trees + TabM + RealMLP, all seven, all seven without MAYA, all seven without
  TabSwift.  They are ranked against each other with the same evaluator (relative error: the mean over the
  tables of error / error of the trees alone, ``compute_relative_error``).
* The figure: ``BenchmarkEvaluator.plot_winrate_matrix`` (pairwise win rates of the seven methods).

A (table, method) pair without a result (a failed or unfinished fit) leaves the table out of the leaderboard,
unless ``--fillna METHOD`` fills it with that method's result the way TabArena imputes (``prepare_data`` of
``compare.py``; such rows are flagged).  An ensemble on a table where one of its members has no result uses the
members that have one and is flagged; the ensemble leaderboard takes only tables where every member of every
set has a result.  A table whose predictions are not in ``<out>/raw/repo`` (a checkout holds only the committed
files; a run spread over machines holds some tables' predictions on each) keeps the rows the earlier
``ensembles.csv`` has for it, when that was computed with the same ``--ensemble-size`` from results of the
package commit ``results.csv`` holds for the table (a table's ensembles depend on its own predictions only); the
report names the tables simulated and those kept.  With neither, the
ensembles are left out and the report says so.

Outputs in ``--out``: ``leaderboard.csv`` (the seven methods), ``ensembles.csv`` (per table and member set:
test and validation error, fit and predict seconds, weights), ``ensemble_leaderboard.csv``, ``compare.json``
(all of it), ``results.md`` (the report) and ``winrate_matrix.png``.  Offline: nothing here downloads.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from benchlib.stats import sign_test_p  # noqa: E402
from benchlib.tables import markdown  # noqa: E402
from tabarena_run import DEFAULT_OUT, LABELS, row_package_commits  # noqa: E402

#: the seven methods in report order, as tabarena_run.py labels them
METHODS = tuple(LABELS.values())
TREES = ("CatBoost", "LightGBM", "XGBoost")
#: the simulated ensembles: name -> members
ENSEMBLES = {
    "trees": TREES,
    "trees + MAYA + TabSwift": (*TREES, "MAYA", "TabSwift"),
    "trees + TabM + RealMLP": (*TREES, "TabM", "RealMLP"),
    "all seven": METHODS,
    "all without MAYA": tuple(m for m in METHODS if m != "MAYA"),
    "all without TabSwift": tuple(m for m in METHODS if m != "TabSwift"),
}
#: what adding models to a member set changes: name -> (the set without them, the set with them)
ADDITIONS = {
    "MAYA + TabSwift to the trees": ("trees", "trees + MAYA + TabSwift"),
    "TabM + RealMLP to the trees": ("trees", "trees + TabM + RealMLP"),
    "MAYA + TabSwift to trees + TabM + RealMLP": ("trees + TabM + RealMLP", "all seven"),
    "MAYA to the other six": ("all without MAYA", "all seven"),
    "TabSwift to the other six": ("all without TabSwift", "all seven"),
}
ERROR_NAMES = {"roc_auc": "1 − ROC-AUC", "log_loss": "log loss", "rmse": "RMSE",
               "root_mean_squared_error": "RMSE"}


# ---- inputs ----------------------------------------------------------------------------------------------
def load_results(out: Path) -> tuple[pd.DataFrame, dict]:
    path = out / "results.csv"
    if not path.is_file():
        raise SystemExit(f"error: no {path}; run tabarena_run.py --out {out} first")
    frame = pd.read_csv(path)
    settings_path = out / "settings.json"
    settings = json.loads(settings_path.read_text()) if settings_path.is_file() else {}
    return frame, settings


def evaluator_frame(results: pd.DataFrame) -> pd.DataFrame:
    """The ``ok`` rows in the column names TabArena's evaluation uses (one split per table: fold 0)."""
    ok = results[results["status"] == "ok"]
    return pd.DataFrame({"method": ok["method"], "dataset": ok["table"], "fold": 0,
                         "metric_error": ok["test_error"].astype(float), "metric": ok["metric"],
                         "problem_type": ok["problem_type"], "time_train_s": ok["fit_s"].astype(float),
                         "time_infer_s": ok["predict_s"].astype(float)}).reset_index(drop=True)


def complete_tables(frame: pd.DataFrame, methods) -> list[str]:
    """Tables on which every one of ``methods`` has a result."""
    have = frame.groupby("dataset")["method"].apply(set)
    return sorted(d for d, got in have.items() if set(methods) <= got)


# ---- the leaderboard -------------------------------------------------------------------------------------
def evaluator():
    from bencheval.evaluator import BenchmarkEvaluator

    return BenchmarkEvaluator(method_col="method", task_col="dataset", seed_column="fold", error_col="metric_error",
                              columns_to_agg_extra=["time_train_s", "time_infer_s"],
                              groupby_columns=["metric", "problem_type"])


def leaderboard(frame: pd.DataFrame, *, elo_rounds: int, elo_anchor: str | None,
                baseline: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """bencheval's leaderboard (Elo, win rate, rank, MRR, rank counts; relative error to ``baseline``) and the
    per-table ranks."""
    ev = evaluator()
    elo_kwargs = {"calibration_framework": elo_anchor, "calibration_elo": 1000, "BOOTSTRAP_ROUNDS": elo_rounds}
    board = ev.leaderboard(data=frame, include_elo=True, include_winrate=True, include_mrr=True,
                           include_rank_counts=True, include_improvability=False,
                           include_relative_error=baseline is not None, baseline_method=baseline,
                           elo_kwargs=elo_kwargs, sort_by="rank")
    per_table = ev.compute_results_per_task(data=frame)
    return board, per_table


def winrate_plot(frame: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    ev = evaluator()
    per_table = ev.compute_results_per_task(data=frame, include_seed_col=True)
    matrix = ev.compute_winrate_matrix(results_per_task=per_table)
    ev.plot_winrate_matrix(winrate_matrix=matrix, save_path=str(path), title=title)


# ---- the ensembles ---------------------------------------------------------------------------------------
def simulate_ensembles(repo_dir: Path, results: pd.DataFrame, ensemble_size: int, commits: dict) -> pd.DataFrame:
    """One row per (table, member set): TabArena's ensemble selection on the stored predictions, with the
    ensemble size and the package commit of the members' results (what decides whether a later call may keep
    the row)."""
    from tabarena.repository import EvaluationRepository

    repo = EvaluationRepository.from_dir(repo_dir, verbose=False)
    ok = results[results["status"] == "ok"]
    config_of = dict(zip(ok["method"], ok["config"]))
    label_of = {c: m for m, c in config_of.items()}
    table_of = dict(zip(results["dataset"], results["table"]))
    rows = []
    for name, members in ENSEMBLES.items():
        configs = [config_of[m] for m in members if m in config_of]
        if not configs:
            continue
        df_out, weights = repo.evaluate_ensembles(configs=configs, ensemble_size=ensemble_size, backend="native",
                                                  progress_bar=False)
        for (dataset, fold), r in df_out.iterrows():
            w = weights.loc[(dataset, fold)].dropna()
            present = [label_of[c] for c in w.index]
            rows.append({"table": table_of.get(dataset, dataset), "ensemble": name, "members": " + ".join(members),
                         "complete": set(members) <= set(present), "metric": r["metric"],
                         "problem_type": r["problem_type"], "test_error": float(r["metric_error"]),
                         "val_error": float(r["metric_error_val"]), "fit_s": float(r["time_train_s"]),
                         "predict_s": float(r["time_infer_s"]),
                         "weights": {label_of[c]: round(float(v), 4) for c, v in w.items() if v > 0},
                         "ensemble_size": ensemble_size,
                         "package_commit": commits.get(table_of.get(dataset, dataset))})
    return pd.DataFrame(rows)


def earlier_ensembles(out: Path, results: pd.DataFrame, simulated: set[str], ensemble_size: int,
                      commits: dict) -> pd.DataFrame:
    """The rows an earlier call wrote to ``<out>/ensembles.csv`` for tables of ``results`` that are not in
    ``simulated`` (their predictions are not on this disk), where the row has the same ``ensemble_size`` and
    was built from results of the package commit that ``results`` now holds for its table (``commits``).

    A table's ensembles depend on that table's predictions only, so they are kept as computed: a run spread
    over machines (``tabarena_run.py --datasets``) and a checkout without ``raw/`` report every table."""
    path = out / "ensembles.csv"
    if not path.is_file():
        return pd.DataFrame()
    old = pd.read_csv(path, float_precision="round_trip")  # the errors as written, to the last digit
    if not {"ensemble_size", "package_commit"} <= set(old.columns):  # nothing says what made these rows
        return pd.DataFrame()
    keep = set(results["table"]) - simulated
    old = old[old["table"].isin(keep) & (old["ensemble_size"] == ensemble_size)
              & (old["package_commit"].fillna("?") == old["table"].map(commits).fillna("?"))].reset_index(drop=True)
    return old.assign(weights=old["weights"].map(json.loads), complete=old["complete"].astype(bool))


def additions(ens: pd.DataFrame, tables: list[str]) -> pd.DataFrame:
    """For each of :data:`ADDITIONS` on ``tables``: the relative error (error / error of the trees alone, mean
    over the tables) without and with the added models, and on how many tables the test error is lower, higher
    or the same (equal to 1e-9 relative: the selection often picks the same weights), with the sign test's
    p-value of better against worse."""
    err = ens[ens["table"].isin(tables)].pivot_table(index="table", columns="ensemble", values="test_error")
    rel = err.div(err["trees"], axis=0)
    rows = []
    for name, (before, after) in ADDITIONS.items():
        if before not in err.columns or after not in err.columns:
            continue
        same = pd.Series([math.isclose(a, b, rel_tol=1e-9) for a, b in zip(err[after], err[before])],
                         index=err.index)
        rows.append({"addition": name, "from": before, "to": after, "tables": len(err),
                     "rel_error_before": float(rel[before].mean()), "rel_error_after": float(rel[after].mean()),
                     "better": int(((err[after] < err[before]) & ~same).sum()),
                     "worse": int(((err[after] > err[before]) & ~same).sum()), "same": int(same.sum())})
        rows[-1]["sign_p"] = sign_test_p(rows[-1]["better"], rows[-1]["worse"])
    return pd.DataFrame(rows)


# ---- the report ------------------------------------------------------------------------------------------
def _num(v, digits=4) -> str:
    """Significant digits, not benchlib's fixed decimals: TabArena reports errors, and 1 - AUC can be 0.0012."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if not isinstance(v, float):
        return str(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}g}"


def _weight(v) -> str:
    return "—" if pd.isna(v) else f"{float(v):.2f}"


def md_table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    """``benchlib.tables.markdown`` as report lines."""
    return markdown(header, rows, align).splitlines()


def board_rows(board: pd.DataFrame) -> list[list[str]]:
    rows = []
    for method, r in board.iterrows():
        elo = f"{r['elo']:.0f} (−{r['elo-']:.0f}/+{r['elo+']:.0f})"
        rows.append([str(method), elo, f"{r['winrate']:.3f}", f"{r['rank']:.2f}", f"{r['mrr']:.3f}",
                     f"{r['rank=1_count']:.1f}", f"{r['rank=1_count'] + r['rank=2_count'] + r['rank=3_count']:.1f}",
                     f"{r['median_time_train_s']:.1f}", f"{r['median_time_infer_s']:.2f}"]
                    + ([f"{r['relative_error']:.3f}"] if "relative_error" in board.columns else []))
    return rows


def limit_counts(results: pd.DataFrame, methods: list[str]) -> dict:
    """Per method, "n of m": on how many of its tables with a result the config ran up to its time limit
    (``at_limit`` of ``results.csv``); "—" where the results do not record it."""
    out = {}
    for m in methods:
        rows = results[(results["method"] == m) & (results["status"] == "ok")]
        known = rows["at_limit"].dropna() if "at_limit" in rows.columns else rows.iloc[0:0]
        out[m] = f"{int(known.astype(bool).sum())} of {len(known)}" if len(known) else "—"
    return out


def per_table_lines(frame: pd.DataFrame, per_table: pd.DataFrame, columns: list[str], order: list[str]) -> list[str]:
    """Test error of each entry on each table (in the run's table order), the best (rank 1 in the evaluator's
    ranks) in bold."""
    err = frame.pivot_table(index="dataset", columns="method", values="metric_error")
    metric = frame.groupby("dataset")["metric"].first()
    ranks = per_table.pivot_table(index="dataset", columns="method", values="rank")
    rows = []
    for table in [t for t in order if t in err.index]:
        cells = []
        for m in columns:
            v = err.loc[table].get(m)
            cell = _num(float(v)) if v is not None and not pd.isna(v) else "—"
            if m in ranks.columns and table in ranks.index and ranks.loc[table, m] == ranks.loc[table].min():
                cell = f"**{cell}**"
            cells.append(cell)
        rows.append([table, ERROR_NAMES.get(metric[table], metric[table])] + cells)
    return md_table(["table", "error"] + columns, rows, "ll" + "r" * len(columns))


def report(out: Path, settings: dict, results: pd.DataFrame, frame: pd.DataFrame, board, per_table, tables,
           excluded, imputed, ens: pd.DataFrame | None, ens_board, ens_per_table, ens_tables, added, ens_note: str,
           args) -> str:
    s = settings.get("settings", {})
    code = settings.get("code", {})
    smoke = bool(s.get("smoke"))
    lines = [f"# Seven methods at their defaults under TabArena's protocol{' [SMOKE: tiny models]' if smoke else ''}",
             "",
             f"{len(tables)} tables, one outer split each (P1's split, seed {s.get('seed', '?')}: train = P1 train + "
             f"validation, test = P1 test; tables capped at {s.get('max_rows', '?')} rows), "
             f"{s.get('bundle', 'TabArena bundle')} defaults, {s.get('num_bag_folds', '?')}-fold bagging "
             f"({s.get('num_bag_sets', 1)} set), {s.get('time_limit', '?')} s per config, {s.get('num_cpus', '?')} "
             f"CPU cores, {s.get('num_gpus', 0)} GPUs; code {code.get('commit', '?')} "
             f"(package {code.get('package_commit', '?')}). Errors are TabArena's: 1 − ROC-AUC (binary), "
             "log loss (multiclass), RMSE (regression); lower is better.", ""]
    if excluded:
        lines += [f"Left out of the leaderboard (a method has no result there): {', '.join(excluded)}.", ""]
    if imputed:
        lines += [f"Imputed with {args.fillna}'s result (TabArena's fillna): {', '.join(imputed)}.", ""]

    lines += ["## Leaderboard", "",
              f"bencheval's `BenchmarkEvaluator.leaderboard` as TabArena's reporter runs it. Elo: "
              f"{args.elo_rounds} bootstrap resamples of the tables, 95 % interval in brackets"
              + (f", {args.elo_anchor} pinned at 1000" if args.elo_anchor else ", no method pinned (1000 = start)")
              + ". Win rate: share of pairwise table comparisons won, ties half. Best on: tables where the method "
              "ranks first (PAMA-style; a tie splits the table); top 3 likewise.", ""]
    at_limit = limit_counts(results, list(board.index))
    lines += md_table(["method", "Elo", "win rate", "avg rank", "MRR", "best on", "top 3", "median fit s",
                       "median predict s", "at limit"], [r + [at_limit[m]] for r, m in zip(board_rows(board),
                                                                                            board.index)])
    lines += ["", f"At limit: tables where the config used at least 90 % of its {s.get('time_limit', '?')} s "
              "(its models may have been cut short; `results.csv` has the seconds and share per table)."]
    lines += ["", "## Test error per table", "", "Bold: the best method on the table (the evaluator's rank 1).", ""]
    order = list(dict.fromkeys(results["table"]))
    lines += per_table_lines(frame, per_table, [m for m in METHODS if m in set(frame["method"])], order)

    lines += ["", "## Simulated ensembles", ""]
    if ens is None or ens.empty:
        lines += [ens_note or "No ensembles simulated.", ""]
    else:
        lines += [f"TabArena's ensemble selection (`EvaluationRepository.evaluate_ensembles`, {args.ensemble_size} "
                  "greedy iterations) on the configs' out-of-fold validation predictions, scored on their test "
                  "predictions. Ranked against each other on "
                  f"{len(ens_tables)} table(s) where every member of every set has a result; "
                  "relative error = mean over tables of error / error of the trees alone.", ""]
        if ens_note:
            lines += [ens_note, ""]
        if ens_board is not None:
            lines += md_table(["member set", "Elo", "win rate", "avg rank", "MRR", "best on", "top 3",
                               "median fit s", "median predict s", "rel. error vs trees"], board_rows(ens_board))
            lines += [""]
            ens_frame = ens_eval_frame(ens[ens["table"].isin(ens_tables)])
            lines += per_table_lines(ens_frame, ens_per_table, [e for e in ENSEMBLES if e in set(ens["ensemble"])],
                                     order)
        incomplete = ens[~ens["complete"]]
        if len(incomplete):
            lines += ["", "Ensembles missing a member (its fit has no result): "
                      + ", ".join(f"{t}/{e}" for t, e in zip(incomplete["table"], incomplete["ensemble"]))]
        # a member the selection never picked on a table weighs 0 there; a method outside the set has no weight
        weights = pd.DataFrame([{"ensemble": e, **{m: w.get(m, 0.0) for m in ENSEMBLES[e]}}
                                for e, w in zip(ens["ensemble"], ens["weights"])])
        mean_w = weights.groupby("ensemble").mean().reindex([e for e in ENSEMBLES if e in set(weights["ensemble"])])
        cols = [m for m in METHODS if m in mean_w.columns]
        lines += ["", "Mean ensemble weight of each member over the tables (0 on a table where the selection "
                  "did not pick it; — : not in the set):", ""]
        lines += md_table(["member set"] + cols, [[e] + [_weight(mean_w.loc[e, m]) for m in cols]
                                                  for e in mean_w.index])
        if added is not None:
            lines += ["", "## What each addition changes", "",
                      "Relative error vs the trees alone (mean over the tables above) without and with the added "
                      "models; tables where the ensemble's test error is lower, higher or the same with them.", ""]
            lines += md_table(["addition", "rel. error without", "rel. error with", "change", "better", "worse",
                               "same", "sign test p"],
                              [[r.addition, f"{r.rel_error_before:.3f}", f"{r.rel_error_after:.3f}",
                                f"{r.rel_error_after - r.rel_error_before:+.3f}", str(r.better), str(r.worse),
                                str(r.same), f"{r.sign_p:.2f}"] for r in added.itertuples()], "lrrrrrrr")
            lines += ["", "One outer split per table: a change whose sign test gives p > 0.1 is level within noise."]
    lines += ["", "Files: `results.csv` (per table and method, from `tabarena_run.py`), `leaderboard.csv`, "
              "`ensembles.csv`, `ensemble_leaderboard.csv`, `compare.json`, `winrate_matrix.png`.", ""]
    text = "\n".join(lines)
    (out / "results.md").write_text(text)
    return text


def ens_eval_frame(ens: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"method": ens["ensemble"], "dataset": ens["table"], "fold": 0,
                         "metric_error": ens["test_error"], "metric": ens["metric"],
                         "problem_type": ens["problem_type"], "time_train_s": ens["fit_s"],
                         "time_infer_s": ens["predict_s"]}).reset_index(drop=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="the folder tabarena_run.py wrote (default: %(default)s)")
    ap.add_argument("--elo-rounds", type=int, default=200, help="Elo bootstrap resamples (default 200)")
    ap.add_argument("--elo-anchor", default=None, help="pin this method's Elo at 1000 (default: none)")
    ap.add_argument("--fillna", default=None, metavar="METHOD",
                    help="fill a missing (table, method) result with METHOD's (TabArena's imputation); "
                         "default: leave such tables out")
    ap.add_argument("--ensemble-size", type=int, default=40, help="greedy ensemble-selection iterations (default 40)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    results, settings = load_results(out)
    frame = evaluator_frame(results)
    if frame.empty:
        raise SystemExit(f"error: {out / 'results.csv'} has no ok result yet")
    methods = [m for m in METHODS if m in set(frame["method"])]
    all_tables = sorted(set(results["table"]))

    imputed = []
    if args.fillna:
        from tabarena.nips2025_utils.compare import prepare_data

        if args.fillna not in methods:
            raise SystemExit(f"error: --fillna {args.fillna}: no result of that method; have {methods}")
        filled = prepare_data(frame, fillna=args.fillna)
        imputed = [f"{d}/{m}" for d, m in zip(filled.loc[filled["imputed"], "dataset"],
                                             filled.loc[filled["imputed"], "method"])]
        frame = filled[["method", "dataset", "fold", "metric_error", "metric", "problem_type", "time_train_s",
                        "time_infer_s"]]
    tables = complete_tables(frame, methods)
    excluded = [t for t in all_tables if t not in tables]
    frame = frame[frame["dataset"].isin(tables)].reset_index(drop=True)
    if not tables:
        raise SystemExit("error: no table has a result of every method (try --fillna METHOD)")
    if args.elo_anchor is not None and args.elo_anchor not in methods:
        raise SystemExit(f"error: --elo-anchor {args.elo_anchor}: not among {methods}")

    board, per_table = leaderboard(frame, elo_rounds=args.elo_rounds, elo_anchor=args.elo_anchor)
    board.to_csv(out / "leaderboard.csv")
    winrate_plot(frame, out / "winrate_matrix.png",
                 f"Win rates, {len(tables)} tables{' (smoke)' if settings.get('settings', {}).get('smoke') else ''}")

    ens = ens_board = ens_per_table = None
    ens_tables: list[str] = []
    repo_dir = out / "raw" / "repo"
    commits = dict(zip(results["table"], row_package_commits(results, settings)))
    simulated = (simulate_ensembles(repo_dir, results, args.ensemble_size, commits)
                 if (repo_dir / "context.json").is_file() else pd.DataFrame())
    kept = earlier_ensembles(out, results, set(simulated["table"]) if len(simulated) else set(), args.ensemble_size,
                             commits)
    ens_sources = {"simulated": sorted(set(simulated["table"])) if len(simulated) else [],
                   "kept": sorted(set(kept["table"])) if len(kept) else []}
    if len(simulated) or len(kept):
        ens = pd.concat([simulated, kept], ignore_index=True)
        ens.assign(weights=ens["weights"].map(json.dumps)).to_csv(out / "ensembles.csv", index=False)
        full = ens.groupby("table")["complete"].all()
        ens_tables = sorted(t for t, ok in full.items() if ok and len(ens[ens["table"] == t]) == len(ENSEMBLES))
        if ens_tables:
            ens_frame = ens_eval_frame(ens[ens["table"].isin(ens_tables)])
            ens_board, ens_per_table = leaderboard(ens_frame, elo_rounds=args.elo_rounds, elo_anchor=None,
                                                   baseline="trees")
            ens_board.to_csv(out / "ensemble_leaderboard.csv")
    added = additions(ens, ens_tables) if ens_board is not None else None

    ens_note = ""
    if ens_sources["kept"]:
        ens_note = (f"Simulated from the predictions on this disk: {', '.join(ens_sources['simulated']) or 'none'}; "
                    "kept from the earlier `ensembles.csv` (same ensemble size and package; predictions not on this "
                    f"disk): {', '.join(ens_sources['kept'])}.")
    elif ens is None:
        ens_note = (f"Not simulated: no EvaluationRepository at {repo_dir} (the raw artefacts of tabarena_run.py are "
                    "not committed; rerun it, which loads its cached results, to rebuild them).")
    text = report(out, settings, results, frame, board, per_table, tables, excluded, imputed, ens, ens_board,
                  ens_per_table, ens_tables, added, ens_note, args)
    summary = {"tables": tables, "excluded": excluded, "imputed": imputed,
               "leaderboard": json.loads(board.reset_index().to_json(orient="records")),
               "ensembles": None if ens is None else json.loads(ens.to_json(orient="records")),
               "ensemble_tables": ens_tables, "ensemble_sources": ens_sources,
               "additions": None if added is None else json.loads(added.to_json(orient="records")),
               "ensemble_leaderboard": None if ens_board is None else json.loads(
                   ens_board.reset_index().to_json(orient="records")),
               "settings": {"elo_rounds": args.elo_rounds, "elo_anchor": args.elo_anchor, "fillna": args.fillna,
                            "ensemble_size": args.ensemble_size}, "run": settings}
    (out / "compare.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(text)
    print("wrote results.md, leaderboard.csv, compare.json, winrate_matrix.png"
          + (", ensembles.csv, ensemble_leaderboard.csv" if ens_board is not None else "") + f" in {out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
