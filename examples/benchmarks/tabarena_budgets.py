"""Two budgets side by side: TabM, RealMLP and MAYA in TabArena's harness at 300 s per config (the 12-table run)
and at 1,200 s (the rerun on six of its tables), with the trees' 300 s results for reference.

    python examples/benchmarks/tabarena_budgets.py                                   # the committed folders
    python examples/benchmarks/tabarena_budgets.py --low /tmp/ta_300 --high /tmp/ta_1200 --tables qsar_biodeg

Reads the ``results.csv`` that ``tabarena_run.py`` wrote into ``--low`` (default
``examples/benchmarks/results/tabarena_12``) and ``--high`` (default
``examples/benchmarks/results/tabarena_12_1200s``; absent or partial is fine: the rerun goes one table per call).
Each folder's budget is the ``time_limit`` of its ``settings.json``.  The tables: ``--tables`` (default the six
of the rerun: qsar_biodeg, seismic_bumps, phoneme, satimage, ames_housing, cpu_act) that the low folder holds,
then any other table both folders hold.  At the high budget TabM, RealMLP and MAYA are expected on each of them,
and CatBoost where it was at its limit at the low budget (``at_limit``); the pairs without an ``ok`` row there
are named as still missing, and their cells say so.

Per table and budget: the test error (TabArena's: 1 − ROC-AUC, log loss, RMSE; lower is better) of TabM, RealMLP
and MAYA, the best of the three in bold and ``*`` where the config used at least 90 % of its limit; MAYA's rank
among the three (ties share the mean rank); the trees' errors -- at the low budget, and at the high one only
where the tree was rerun.  The seconds each config used against its limit.  Per budget, over the tables where
all three have a result at both budgets (the same tables at each budget): MAYA's mean rank among the three, and
MAYA against TabM and against RealMLP -- tables won and lost (equal errors left out) with the two-sided sign
test's p-value (``benchlib.stats.sign_test_p``; above 0.1 this repository calls the difference level within
noise) -- and how many of the three configs ran up to their limit.

Outputs in ``--out`` (default: the ``--high`` folder): ``budgets.md`` (the report; docs/tabarena.md embeds its
tables through ``results_tables.py``), ``budgets.csv`` (one row per table, budget and method: error, status,
seconds, share of the limit, ``at_limit``, rank among the three) and ``score_vs_budget.png`` (one panel per
table: test error against the budget on a log axis, one line per method, the trees' low-budget errors as
horizontal reference lines; a tree rerun at the high budget is a line like the others).  Needs only the two
``results.csv`` files: nothing is fitted or downloaded.
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

from benchlib.stats import p_text, sign_test_p  # noqa: E402
from benchlib.tables import markdown  # noqa: E402
from tabarena_compare import ERROR_NAMES, TREES  # noqa: E402
from tabarena_compare import _num as num  # noqa: E402
from tabarena_run import AT_LIMIT_SHARE, DEFAULT_OUT  # noqa: E402

LOW = DEFAULT_OUT
HIGH = HERE / "results" / "tabarena_12_1200s"
#: the tables of the 1,200 s rerun: two binary and one more, one multiclass, two regression
RERUN_TABLES = ("qsar_biodeg", "seismic_bumps", "phoneme", "satimage", "ames_housing", "cpu_act")
#: the methods compared across the budgets
NEURAL = ("TabM", "RealMLP", "MAYA")
#: a folder's budget when its settings.json does not give one
DEFAULT_LIMITS = {"low": 300.0, "high": 1200.0}
#: after an error: the config used at least AT_LIMIT_SHARE of its limit
AT_LIMIT_MARK = "†"
COLUMNS = ["table", "budget_s", "method", "status", "metric", "test_error", "fit_s", "time_limit_s",
           "time_used_share", "at_limit", "rank_of_3"]


# ---- inputs ----------------------------------------------------------------------------------------------
def load(folder: Path, default_limit: float) -> tuple[pd.DataFrame, float]:
    """A folder's ``results.csv`` (empty when there is none yet) and its time limit per config."""
    path = folder / "results.csv"
    frame = pd.read_csv(path, float_precision="round_trip") if path.is_file() else pd.DataFrame(
        columns=["table", "method", "status", "metric", "test_error", "fit_s", "time_limit_s", "at_limit"])
    settings_path = folder / "settings.json"
    limit = None
    if settings_path.is_file():
        limit = json.loads(settings_path.read_text()).get("settings", {}).get("time_limit")
    if limit is None and "time_limit_s" in frame.columns and frame["time_limit_s"].notna().any():
        limit = frame["time_limit_s"].dropna().iloc[0]
    return frame, float(limit if limit is not None else default_limit)


def ok_rows(frame: pd.DataFrame) -> dict:
    """(table, method) -> the row, for the ``ok`` rows."""
    ok = frame[frame["status"] == "ok"]
    return {(r["table"], r["method"]): r for r in ok.to_dict(orient="records")}


def report_tables(low: pd.DataFrame, high: pd.DataFrame, tables) -> list[str]:
    """``tables`` that the low folder holds, in that order, then any other table both folders hold (in the low
    folder's order)."""
    low_tables = list(dict.fromkeys(low["table"]))
    both = [t for t in low_tables if t in set(high["table"])]
    return list(dict.fromkeys([t for t in tables if t in low_tables] + both))


def expected_pairs(low: pd.DataFrame, tables: list[str]) -> list[tuple[str, str]]:
    """The (table, method) pairs the high budget should hold: TabM, RealMLP and MAYA on each table, and CatBoost
    where it ran up to its limit at the low budget."""
    at_limit = {(r["table"], r["method"]) for r in ok_rows(low).values() if flag(r.get("at_limit"))}
    return [(t, m) for t in tables for m in (*NEURAL, "CatBoost")
            if m in NEURAL or (t, m) in at_limit]


def flag(v) -> bool:
    """An ``at_limit`` cell as a bool: True, or "True" as a CSV may read back; empty is False."""
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and str(v) == "True"


# ---- the figures -----------------------------------------------------------------------------------------
def long_rows(low: pd.DataFrame, high: pd.DataFrame, low_limit: float, high_limit: float,
              tables: list[str]) -> pd.DataFrame:
    """One row per (table, budget, method): the three neural methods at both budgets (``missing`` where there
    is no ``ok`` row), the trees at the low budget and at the high one where the high folder holds them (or
    expects CatBoost); ``rank_of_3``: the rank among the three at that budget where all three have a result."""
    expected = set(expected_pairs(low, tables))
    rows = []
    for budget, frame, limit in (("low", low, low_limit), ("high", high, high_limit)):
        got = ok_rows(frame)
        in_frame = set(zip(frame["table"], frame["method"]))
        for table in tables:
            for method in (*NEURAL, *TREES):
                if budget == "high" and method in TREES and (table, method) not in in_frame | expected:
                    continue
                r = got.get((table, method))
                if r is None:
                    rows.append({"table": table, "budget_s": limit, "method": method, "status": "missing",
                                 "time_limit_s": limit})
                    continue
                fit_s = None if pd.isna(r.get("fit_s")) else float(r["fit_s"])
                share = None if fit_s is None else fit_s / limit
                rows.append({"table": table, "budget_s": limit, "method": method, "status": "ok",
                             "metric": r.get("metric"), "test_error": float(r["test_error"]), "fit_s": fit_s,
                             "time_limit_s": limit, "time_used_share": None if share is None else round(share, 3),
                             "at_limit": None if share is None else bool(share >= AT_LIMIT_SHARE)})
    frame = pd.DataFrame(rows, columns=COLUMNS[:-1])
    metric = {t: m for f in (low, high) for t, m in zip(f["table"], f["metric"]) if isinstance(m, str)}
    frame["metric"] = frame["table"].map(metric)
    frame["rank_of_3"] = float("nan")
    for _, group in frame[frame["method"].isin(NEURAL)].groupby(["table", "budget_s"]):
        ok = group[group["status"] == "ok"]
        if len(ok) == len(NEURAL):
            frame.loc[ok.index, "rank_of_3"] = ok["test_error"].rank(method="average")
    return frame


def summary(frame: pd.DataFrame, limits: list[float]) -> list[dict]:
    """Per budget, over the tables where all three neural methods have a result at every budget: MAYA's mean
    rank among the three, MAYA's wins and losses against TabM and RealMLP with the sign test's p-value, and how
    many configs of each of the three ran up to their limit."""
    neural = frame[frame["method"].isin(NEURAL)]
    complete = neural.groupby("table")["rank_of_3"].apply(lambda r: r.notna().sum() == len(NEURAL) * len(limits))
    tables = [t for t in dict.fromkeys(frame["table"]) if complete.get(t, False)]
    out = []
    for limit in limits:
        at = neural[(neural["budget_s"] == limit) & neural["table"].isin(tables)]
        err = at.pivot_table(index="table", columns="method", values="test_error")
        ranks = at[at["method"] == "MAYA"]["rank_of_3"]
        row = {"budget_s": limit, "tables": len(tables),
               "maya_mean_rank": float(ranks.mean()) if len(ranks) else None}
        for other in ("TabM", "RealMLP"):
            wins = int((err["MAYA"] < err[other]).sum()) if len(err) else 0
            losses = int((err["MAYA"] > err[other]).sum()) if len(err) else 0
            row.update({f"vs_{other}_wins": wins, f"vs_{other}_losses": losses,
                        f"vs_{other}_p": sign_test_p(wins, losses)})
        for m in NEURAL:
            row[f"{m}_at_limit"] = int(sum(flag(v) for v in at.loc[at["method"] == m, "at_limit"]))
        out.append(row)
    return out


# ---- the report ------------------------------------------------------------------------------------------
def budget_text(limit: float) -> str:
    return f"{limit:,.0f} s"


def percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def error_table(frame: pd.DataFrame, tables: list[str], limits: list[float]) -> str:
    rows = []
    for table in tables:
        metric = frame.loc[frame["table"] == table, "metric"].dropna()
        name = ERROR_NAMES.get(metric.iloc[0], metric.iloc[0]) if len(metric) else "?"
        for i, limit in enumerate(limits):
            at = frame[(frame["table"] == table) & (frame["budget_s"] == limit)].set_index("method")
            ok = at[(at["status"] == "ok") & at.index.isin(NEURAL)]
            best = ok["test_error"].min() if len(ok) else None
            cells = []
            for m in NEURAL:
                r = at.loc[m]
                if r["status"] != "ok":
                    cells.append("missing")
                    continue
                text = num(float(r["test_error"]))
                text = f"**{text}**" if len(ok) > 1 and r["test_error"] == best else text
                cells.append(text + (AT_LIMIT_MARK if flag(r["at_limit"]) else ""))
            rank = at.loc["MAYA", "rank_of_3"]
            cells.append("—" if pd.isna(rank) else f"{rank:g}")
            for m in TREES:
                if m not in at.index:
                    cells.append("—")
                elif at.loc[m, "status"] != "ok":
                    cells.append("missing")
                else:
                    cells.append(num(float(at.loc[m, "test_error"]))
                                 + (AT_LIMIT_MARK if flag(at.loc[m, "at_limit"]) else ""))
            rows.append([table if i == 0 else "", name if i == 0 else "", budget_text(limit)] + cells)
    return markdown(["table", "error", "budget", *NEURAL, "MAYA's rank of 3", *TREES], rows, "lll" + "r" * 7)


def time_table(frame: pd.DataFrame, tables: list[str], limits: list[float]) -> str:
    methods = [*NEURAL, *[m for m in TREES if ((frame["method"] == m) & (frame["budget_s"] == limits[-1])).any()]]
    rows = []
    for table in tables:
        for i, limit in enumerate(limits):
            at = frame[(frame["table"] == table) & (frame["budget_s"] == limit)].set_index("method")
            cells = []
            for m in methods:
                if m not in at.index or at.loc[m, "status"] != "ok" or pd.isna(at.loc[m, "fit_s"]):
                    cells.append("—" if m not in at.index else "missing")
                    continue
                r = at.loc[m]
                cells.append(f"{r['fit_s']:,.0f} ({percent(r['time_used_share'])})"
                             + (" at limit" if flag(r["at_limit"]) else ""))
            rows.append([table if i == 0 else "", budget_text(limit)] + cells)
    return markdown(["table", "budget", *methods], rows, "ll" + "r" * len(methods))


def summary_table(rows: list[dict]) -> str:
    body = []
    for r in rows:
        if not r["tables"]:
            body.append([budget_text(r["budget_s"]), "0", "—", "—", "—", "—"])
            continue
        rank = f"{r['maya_mean_rank']:.2f}"
        pairs = [f"{r[f'vs_{o}_wins']}–{r[f'vs_{o}_losses']} (p = {p_text(r[f'vs_{o}_p'])})"
                 for o in ("TabM", "RealMLP")]
        limits = ", ".join(f"{r[f'{m}_at_limit']}" for m in NEURAL)
        body.append([budget_text(r["budget_s"]), str(r["tables"]), rank, *pairs, limits])
    return markdown(["budget", "tables", "MAYA's mean rank of 3", "MAYA vs TabM: won–lost", "MAYA vs RealMLP: won–lost",
                     "at limit: TabM, RealMLP, MAYA"], body)


def missing_text(frame: pd.DataFrame, expected: list[tuple[str, str]], high_limit: float) -> str:
    got = set(zip(frame.loc[(frame["budget_s"] == high_limit) & (frame["status"] == "ok"), "table"],
                  frame.loc[(frame["budget_s"] == high_limit) & (frame["status"] == "ok"), "method"]))
    missing: dict[str, list[str]] = {}
    for t, m in expected:
        if (t, m) not in got:
            missing.setdefault(t, []).append(m)
    if not missing:
        return f"Every expected (table, method) pair has a {budget_text(high_limit)} result."
    return (f"Still missing at {budget_text(high_limit)}: {sum(map(len, missing.values()))} of the {len(expected)} "
            "expected (table, method) pairs, " + "; ".join(f"{t} ({', '.join(ms)})" for t, ms in missing.items()) + ".")


def report(frame: pd.DataFrame, tables: list[str], limits: list[float], summ: list[dict], missing: str,
           low: Path, high: Path) -> str:
    lo, hi = (budget_text(x) for x in limits)
    intro = (f"TabArena's harness as `tabarena_run.py` runs it, the same tasks, splits and seeds at both budgets: "
             f"{lo} per config from `{low}`, {hi} from `{high}`. Test errors as TabArena reports them (1 − ROC-AUC, "
             "log loss, RMSE; lower is better).")
    legend = (f"Bold: the best of TabM, RealMLP and MAYA at that budget; {AT_LIMIT_MARK}: the config used at least "
              f"{percent(AT_LIMIT_SHARE)} of its limit. MAYA's rank among the three (1 = best, ties share the mean "
              f"rank). The trees at {hi} only where they were rerun (— : not rerun; their {lo} errors are the "
              "reference).")
    lines = [f"# TabM, RealMLP and MAYA at {lo} and {hi} per config", "", intro, "", missing, "",
             "## Test error", "", legend, ""]
    lines += error_table(frame, tables, limits).splitlines()
    lines += ["", "## Time used", "", "Fit seconds of each config, in brackets the share of its limit.", ""]
    lines += time_table(frame, tables, limits).splitlines()
    n = summ[0]["tables"] if summ else 0
    note = (f"Over the {n} table(s) where TabM, RealMLP and MAYA have a result at both budgets: MAYA's mean rank "
            "among the three; tables MAYA won and lost against each (equal errors left out), two-sided sign test; "
            "configs that ran up to their limit.")
    lines += ["", "## Summary", "", note, ""]
    lines += summary_table(summ).splitlines()
    lines += ["", "Files: `budgets.csv` (per table, budget and method), `score_vs_budget.png`.", ""]
    return "\n".join(lines)


def plot(frame: pd.DataFrame, tables: list[str], limits: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = dict(zip((*NEURAL, *TREES), plt.get_cmap("tab10").colors))
    ncols = min(3, max(1, len(tables)))
    nrows = max(1, math.ceil(len(tables) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.8 * nrows), squeeze=False)
    for ax, table in zip(axes.flat, tables):
        at = frame[(frame["table"] == table) & (frame["status"] == "ok")]
        for m in (*NEURAL, *TREES):
            rows = at[at["method"] == m].sort_values("budget_s")
            if rows.empty:
                continue
            if m in TREES and len(rows) == 1 and rows["budget_s"].iloc[0] == limits[0]:
                ax.axhline(rows["test_error"].iloc[0], color=colors[m], ls="--", lw=1,
                           label=f"{m} ({budget_text(limits[0])})")
            else:
                ax.plot(rows["budget_s"], rows["test_error"], marker="o", color=colors[m], label=m)
        metric = at["metric"].dropna()
        ax.set_title(f"{table}" + (f" ({ERROR_NAMES.get(metric.iloc[0], metric.iloc[0])})" if len(metric) else ""),
                     fontsize=9)
        ax.set_xscale("log")
        ax.set_xticks(limits)
        ax.set_xticklabels([budget_text(x) for x in limits])
        ax.minorticks_off()
        ax.set_xlim(limits[0] / 1.4, limits[-1] * 1.4)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(tables):]:
        ax.set_visible(False)
    handles, labels = {}, []
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    labels = list(handles)
    fig.legend([handles[lab] for lab in labels], labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8,
               frameon=False)
    fig.suptitle("Test error against the time limit per config (lower is better)", fontsize=10)
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--low", default=str(LOW), help="the low-budget tabarena_run.py folder (default: %(default)s)")
    ap.add_argument("--high", default=str(HIGH), help="the high-budget folder (default: %(default)s)")
    ap.add_argument("--tables", default=",".join(RERUN_TABLES),
                    help="the tables rerun at the high budget (default: %(default)s)")
    ap.add_argument("--out", default=None, help="where the report goes (default: the --high folder)")
    args = ap.parse_args(argv)
    low_dir, high_dir = Path(args.low).resolve(), Path(args.high).resolve()
    out = Path(args.out).resolve() if args.out else high_dir
    if not (low_dir / "results.csv").is_file():
        raise SystemExit(f"error: no {low_dir / 'results.csv'}; run tabarena_run.py --out {low_dir} first")
    low, low_limit = load(low_dir, DEFAULT_LIMITS["low"])
    high, high_limit = load(high_dir, DEFAULT_LIMITS["high"])
    if low_limit >= high_limit:
        raise SystemExit(f"error: the low budget ({low_limit:g} s) is not below the high one ({high_limit:g} s)")
    tables = report_tables(low, high, [t for t in args.tables.split(",") if t])
    if not tables:
        raise SystemExit(f"error: none of {args.tables} is in {low_dir / 'results.csv'}")
    limits = [low_limit, high_limit]
    frame = long_rows(low, high, low_limit, high_limit, tables)
    summ = summary(frame, limits)
    missing = missing_text(frame, expected_pairs(low, tables), high_limit)
    text = report(frame, tables, limits, summ, missing, rel(low_dir), rel(high_dir))
    out.mkdir(parents=True, exist_ok=True)
    (out / "budgets.md").write_text(text)
    frame.to_csv(out / "budgets.csv", index=False)
    plot(frame, tables, limits, out / "score_vs_budget.png")
    print(text)
    print(f"wrote budgets.md, budgets.csv, score_vs_budget.png in {out}", file=sys.stderr)


def rel(path: Path) -> str:
    """``path`` relative to the repository where it lies inside it: the report reads the same on every checkout."""
    try:
        return str(path.relative_to(HERE.parents[1]))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    main()
