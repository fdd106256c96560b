"""What a benchmark row says about the budget a config got, and the sign test behind "level within noise"."""

from __future__ import annotations

import pandas as pd
import pytest

from benchlib.stats import sign_test_p


def test_sign_test_p_values():
    assert sign_test_p(11, 9) == pytest.approx(0.8238, abs=1e-4)  # the "0.97 % lower" of 11 wins, 9 losses
    assert sign_test_p(8, 2) == pytest.approx(0.1094, abs=1e-4)
    assert sign_test_p(10, 0) < 0.01
    assert sign_test_p(0, 0) == 1.0
    assert sign_test_p(3, 5) == sign_test_p(5, 3)


def test_budget_columns_mark_a_config_at_its_limit():
    from tabarena_run import AT_LIMIT_SHARE, budget_columns

    at = budget_columns(AT_LIMIT_SHARE * 300.0, 300.0, 8)
    assert at == {"time_limit_s": 300.0, "time_used_share": AT_LIMIT_SHARE, "at_limit": True, "folds_fitted": 8}
    inside = budget_columns(0.5 * 300.0, 300.0, None)
    assert inside["at_limit"] is False and inside["folds_fitted"] is None
    missing = budget_columns(float("nan"), 300.0, None)
    assert missing["at_limit"] is None and missing["time_used_share"] is None


def test_folds_fitted_reads_the_bagged_models_info():
    from tabarena_run import folds_fitted

    result = {"method_metadata": {"info": {"bagged_info": {"child_model_names": ["S1F1", "S1F2", "S1F3"],
                                                           "num_child_models": 8}}}}
    assert folds_fitted(result) == 3
    assert folds_fitted({"method_metadata": {"info": {"bagged_info": {"num_child_models": 5}}}}) == 5
    assert folds_fitted({}) is None


def test_limit_counts_count_only_recorded_rows():
    from tabarena_compare import limit_counts

    results = pd.DataFrame({"method": ["TabM", "TabM", "TabM", "MAYA", "LightGBM"],
                            "status": ["ok", "ok", "missing", "ok", "ok"],
                            "at_limit": [True, False, True, None, False]})
    assert limit_counts(results, ["TabM", "MAYA", "LightGBM"]) == {"TabM": "1 of 2", "MAYA": "—",
                                                                    "LightGBM": "0 of 1"}
    assert limit_counts(results.drop(columns="at_limit"), ["TabM"]) == {"TabM": "—"}


def test_p_text():
    from benchlib.stats import p_text

    assert p_text(0.0001) == "< 0.01"
    assert p_text(0.109375) == "0.11"
    assert p_text(1.0) == "1.00"
