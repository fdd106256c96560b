"""autogluon_maya.hyperparameters(): the "light"/"best" portfolios of MAYA, TabSwift and GBDTs."""

import pytest
from autogluon.tabular import TabularPredictor

import autogluon_maya
from autogluon_maya import hyperparameters
from autogluon_maya.maya.defaults import DEFAULT_PARAMS as MAYA_DEFAULTS
from autogluon_maya.portfolio import PRESETS, TABSWIFT_PRIORITY, preset_doc
from autogluon_maya.tabswift.defaults import DEFAULT_PARAMS as TABSWIFT_DEFAULTS

AG_KEYS = ("ag_args", "ag_args_fit", "ag_args_ensemble")
OWN_DEFAULTS = {"MAYA": MAYA_DEFAULTS, "TABSWIFT": TABSWIFT_DEFAULTS}
# tiny settings for the end-to-end fits (the presets themselves are sized for minutes per model)
FAST = {"MAYA": {"max_epochs": 2}, "TABSWIFT": {"n_estimators": 1, "max_context_rows": 128},
        "GBM": {"num_boost_round": 20}, "CAT": {"iterations": 20}, "XGB": {"n_estimators": 20}}


def _configs(value):
    return value if isinstance(value, list) else [value]


def test_exported_from_the_package():
    assert "hyperparameters" in autogluon_maya.__all__ and autogluon_maya.hyperparameters is hyperparameters
    assert set(PRESETS) == {"light", "best"}


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_key_is_registered_and_every_setting_is_known(preset):
    from autogluon.tabular.registry import ag_model_registry

    registered = ag_model_registry.key_to_cls_map()
    hp = hyperparameters(preset, tabswift=True)
    assert {"MAYA", "TABSWIFT", "GBM", "CAT"} <= set(hp)
    for key, value in hp.items():
        assert key in registered, f"{preset}: {key!r} is not an AutoGluon model key"
        configs = _configs(value)
        assert configs and all(isinstance(c, dict) for c in configs)
        if key in OWN_DEFAULTS:  # a typo in a setting would silently be ignored by the model
            for c in configs:
                assert set(c) - set(AG_KEYS) <= set(OWN_DEFAULTS[key]), (key, c)
        names = [c.get("ag_args", {}).get("name_suffix", "") for c in configs]
        assert len(set(names)) == len(names), f"{preset}/{key}: variants would share a name: {names}"
        assert key in preset_doc(preset)  # the evidence for every entry is written down
    for c in _configs(hp["MAYA"]):
        p = {**MAYA_DEFAULTS, **c}
        assert p["hidden_size"] % p["num_heads"] == 0  # no silent rounding of a chosen width


def test_best_is_the_gpu_portfolio_described_in_the_brief():
    hp = hyperparameters("best")
    assert "XGB" in hp and "XGB" not in hyperparameters("light")
    maya = [{k: v for k, v in c.items() if k != "ag_args"} for c in hp["MAYA"]]
    assert 2 <= len(maya) <= 3 and {} in maya  # the defaults are one of the variants
    assert {"hidden_size": 128, "num_heads": 8} in maya
    tabswift = hp["TABSWIFT"]
    assert any(c.get("fine_tune") for c in tabswift) and any(not c.get("fine_tune") for c in tabswift)
    for c in tabswift:  # larger than the 2-core defaults
        assert c["n_estimators"] > TABSWIFT_DEFAULTS["n_estimators"]
        assert c["max_context_rows"] > TABSWIFT_DEFAULTS["max_context_rows"]


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_each_call_returns_an_independent_deep_copy(preset):
    a, b = hyperparameters(preset, tabswift=True), hyperparameters(preset, tabswift=True)
    assert a == b and a is not b
    a["MAYA"] = {"max_epochs": 1}
    a["GBM"]["num_boost_round"] = 3
    for value in _configs(b["TABSWIFT"]):
        value["n_estimators"] = 99
        value.setdefault("ag_args", {})["name_suffix"] = "_mutated"
    fresh = hyperparameters(preset, tabswift=True)
    assert fresh["MAYA"] != {"max_epochs": 1} and "num_boost_round" not in fresh["GBM"]
    assert all(c.get("n_estimators") != 99 for c in _configs(fresh["TABSWIFT"]))
    assert fresh == hyperparameters(preset, tabswift=True)
    assert hyperparameters(preset, tabswift=False) == {k: v for k, v in PRESETS[preset].items() if k != "TABSWIFT"}


def _priorities(hp, key):
    from autogluon.tabular.registry import ag_model_registry

    cls = ag_model_registry.key_to_cls(key)
    return [c.get("ag_args", {}).get("priority", cls.ag_priority) for c in _configs(hp[key])]


def test_best_fits_the_gbdts_before_tabswift_and_maya():
    """AutoGluon fits higher priorities first; MAYA last, so a tight time limit goes to the GBDTs first."""
    hp = hyperparameters("best")
    gbdt = [p for key in ("GBM", "CAT", "XGB") for p in _priorities(hp, key)]
    assert max(_priorities(hp, "TABSWIFT")) < min(gbdt)
    assert max(_priorities(hp, "MAYA")) < min(_priorities(hp, "TABSWIFT"))


def test_light_gives_maya_a_fair_share_of_level_one():
    """MAYA right after LightGBM and before CatBoost (and XGBoost, which a user may add), with at most half of the
    time left then, so neither the trees nor MAYA can take all of level 1; TabSwift after every tree."""
    hp = hyperparameters("light", tabswift=True)
    (maya,) = _priorities(hp, "MAYA")
    assert min(_priorities(hp, "GBM")) > maya > max(_priorities(hp, "CAT") + _priorities({"XGB": {}}, "XGB"))
    assert hp["MAYA"]["ag_args_fit"] == {"max_time_limit_ratio": 0.5}
    assert max(_priorities(hp, "TABSWIFT")) < min(_priorities(hp, "CAT") + _priorities({"XGB": {}}, "XGB"))


def test_light_stacks_maya_but_not_tabswift():
    """In "light" TabSwift is a level-1 model only (its level-2 stacker never earned ensemble weight); MAYA
    stays a stacker."""
    hp = hyperparameters("light", tabswift=True)
    assert hp["TABSWIFT"]["ag_args"]["valid_stacker"] is False
    assert hp["MAYA"]["ag_args"].get("valid_stacker", True) is True


@pytest.mark.parametrize("released", [False, True])
def test_light_carries_tabswift_only_where_the_released_weights_are_here(monkeypatch, released):
    """The shipped checkpoint did not earn its slot in "light" on the decision tables: the preset carries TabSwift
    (zero-shot, "auto" weights) only where the authors' released weights are on this machine."""
    from autogluon_maya.portfolio import LIGHT_TABSWIFT
    from autogluon_maya.tabswift.checkpoints_io import choice

    monkeypatch.setattr(choice, "released_on_this_machine", lambda: released)
    hp = hyperparameters("light")
    assert ("TABSWIFT" in hp) is released
    if released:
        assert hp["TABSWIFT"] == LIGHT_TABSWIFT and hp["TABSWIFT"]["checkpoint_path"] == "auto"
    assert "TABSWIFT" in hyperparameters("light", tabswift=True) and "TABSWIFT" in hyperparameters("best")
    if not released:
        with pytest.raises(ValueError, match="autogluon-maya-prefetch.*tabswift=True"):
            hyperparameters("light", overrides={"TABSWIFT": {"n_estimators": 4}})


def test_released_on_this_machine_reads_the_caches_without_the_network(monkeypatch, tmp_path):
    """Nothing prefetched and downloads switched off (the suite's default): False, and no socket is opened."""
    import socket

    from autogluon_maya.tabswift.checkpoints_io import choice

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(choice, "_AUTO_CHOICE", {})
    monkeypatch.setattr(socket.socket, "connect", lambda *a, **k: pytest.fail("a socket was opened"))
    assert choice.released_on_this_machine() is False


def test_unknown_preset_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown portfolio preset 'gpu'.*best, light"):
        hyperparameters("gpu")
    with pytest.raises(ValueError, match="valid presets"):
        preset_doc("medium")


def test_overrides_reach_every_variant_and_merge_ag_args():
    hp = hyperparameters("best", overrides={"MAYA": {"max_epochs": 3, "ag_args_fit": {"num_gpus": 0.5}},
                                            "TABSWIFT": {"ag_args": {"valid_stacker": False}}})
    assert all(c["max_epochs"] == 3 and c["ag_args_fit"] == {"num_gpus": 0.5} for c in hp["MAYA"])
    wide = [c for c in hp["MAYA"] if c.get("hidden_size") == 128][0]
    assert wide["num_heads"] == 8 and wide["ag_args"]["name_suffix"] == "_d128h8"
    ft = [c for c in hp["TABSWIFT"] if c.get("fine_tune")][0]
    # merged one level deep: the variant's suffix and priority are kept
    assert ft["ag_args"] == {"name_suffix": "_ft", "priority": TABSWIFT_PRIORITY - 1, "valid_stacker": False}
    assert all("max_epochs" not in c for c in hyperparameters("best")["MAYA"])  # nothing leaks into the preset
    with pytest.raises(ValueError, match="XGB.*does not contain"):
        hyperparameters("light", overrides={"XGB": {}})


def _breast_cancer(n):
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(as_frame=True).frame.sample(n=n, random_state=0).reset_index(drop=True)


def test_light_fits_end_to_end_with_every_family():
    data = _breast_cancer(240)
    train, test = data.iloc[:200], data.iloc[200:]
    # MAYA gets 20 epochs here (2 leave it at the majority class on 200 rows), so every family can be judged
    hp = hyperparameters("light", tabswift=True,
                         overrides={**{k: v for k, v in FAST.items() if k != "XGB"}, "MAYA": {"max_epochs": 20}})
    pred = TabularPredictor(label="target", path="ag", verbosity=0).fit(
        train, hyperparameters=hp, time_limit=120, num_cpus=1, num_gpus=0, raise_on_model_failure=True)
    lb = pred.leaderboard(test, silent=True)
    assert {"Maya", "TabSwift", "LightGBM", "CatBoost", "WeightedEnsemble_L2"} <= set(lb["model"]), lb
    majority = test["target"].value_counts(normalize=True).max()
    assert (lb["score_test"] > majority + 0.2).all(), (lb[["model", "score_test"]], majority)  # accuracy
    assert pred.predict(test.drop(columns="target")).shape == (len(test),)


def test_best_variants_get_readable_names():
    """The "best" portfolio on CPU with tiny sizes: every variant trains under its suffixed name."""
    data = _breast_cancer(200)
    overrides = {**FAST, "TABSWIFT": {**FAST["TABSWIFT"], "fine_tune_steps": 2, "fine_tune_eval_every": 1}}
    pred = TabularPredictor(label="target", path="ag", verbosity=0).fit(
        data, hyperparameters=hyperparameters("best", overrides=overrides), time_limit=150, num_cpus=1,
        num_gpus=0, raise_on_model_failure=True, fit_weighted_ensemble=False)
    assert set(pred.model_names()) == {"Maya", "Maya_d128h8", "Maya_dec2", "TabSwift", "TabSwift_ft",
                                       "LightGBM", "CatBoost", "XGBoost"}
    info = pred.info()["model_info"]
    assert info["Maya_d128h8"]["hyperparameters"]["hidden_size"] == 128
    assert info["Maya_dec2"]["hyperparameters"]["num_decoder_layers"] == 2
    assert info["TabSwift_ft"]["hyperparameters"]["fine_tune"] == "auto"
    assert info["TabSwift"]["hyperparameters"]["fine_tune"] is False


def test_best_keeps_every_tabswift_member_cached_at_the_released_size():
    """16 members x 24 blocks x (4,096 context rows + 64 registers) x d=192 x 10 bytes (float32 keys and values,
    float16 block inputs kept to save them): the "auto" caches keep all of them in memory where a quarter of the
    available memory holds them, and save every member's block inputs, or predict calls re-encode."""
    from autogluon_maya.tabswift.cache_budget import resolve_cache_mb
    from autogluon_maya.tabswift.config import RELEASED

    for config in hyperparameters("best")["TABSWIFT"]:
        rows = config["max_context_rows"] + RELEASED.n_registers
        members = config["n_estimators"]
        need = members * RELEASED.n_layers * rows * RELEASED.d_model * 10
        cache_mb, disk_mb = resolve_cache_mb(config.get("cache_max_mb", "auto"), config.get("disk_cache_mb", "auto"),
                                             members=members, layers=RELEASED.n_layers, keys=rows,
                                             d=RELEASED.d_model, available=16 * 2 ** 30)
        assert cache_mb * 2 ** 20 >= need
        assert disk_mb * 2 ** 20 >= members * RELEASED.n_layers * rows * RELEASED.d_model * 2