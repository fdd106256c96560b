"""``recipe="paper"`` is the MAYA paper's training, held against a table written out by hand from
``../shared/papers/maya_paper.txt`` (not imported from the module under test)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon_maya import MayaModel
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya import trainer
from autogluon_maya.maya.defaults import PROBLEM_TYPES, resolve_defaults

from .test_search_space import PAPER_TABLE12
from plugin_tests.resources import fit_on_cores

# What the paper fixes (Appendix B.2, Appendix D.1 Table 12, Eqs. 1, 9; FT-Transformer's protocol, which it
# follows for training and evaluation):
PAPER = {
    "ensemble_members": 1,  # one network per seed; results are averages over 15 seeds, not ensembles
    "parallel_members": 1,
    "numeric_transform": "quantile",  # "Normalization is performed using quantile transformation"
    "numeric_scale": 1.0,  # numeric token x_j W_j + b_j
    "ema_epochs": None,  # the trained weights, no moving average
    "validation_every": 1,  # early stopping on the validation score of every epoch
    "recipe": "paper",  # the trainer: constant learning rate, weight decay on weight matrices only
}
TABLE12_BATCHES = {1024, 2048, 4096}


def _in_table12(name, value) -> bool:
    kind, *spec = PAPER_TABLE12[name]
    return spec[0] <= value <= spec[1] if kind in ("int", "uniform", "loguniform") else value in spec[0]


@pytest.mark.parametrize("problem_type", PROBLEM_TYPES)
def test_the_paper_recipe_resolves_to_the_papers_configuration(problem_type):
    p = resolve_defaults(problem_type, "paper")
    assert {k: p[k] for k in PAPER} == PAPER
    assert p["batch_size"] in TABLE12_BATCHES
    assert all(_in_table12(k, p[k]) for k in PAPER_TABLE12), {k: p[k] for k in PAPER_TABLE12}


def test_the_paper_recipe_trains_at_a_constant_rate_with_decay_on_matrices_only():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    y = (x[:, 0] > 0).long()
    fitted = trainer.FittedMaya(trainer.MayaNetwork(3, [], 2, "class", 2, hidden_size=8, num_heads=2))
    params = {**resolve_defaults("binary", "paper"), "learning_rate": 1e-2, "weight_decay": 0.1, "patience": None}
    summary = trainer.train_maya(fitted, x_num=x, x_cat=torch.zeros(64, 0, dtype=torch.long), y_label=y, y_target=y,
                                 sample_weight=None, loss_fn=trainer.make_loss("class"), params=params,
                                 device=torch.device("cpu"), budget=TimeBudget(None), seed=0, max_epochs=12,
                                 val_score_fn=lambda f: 0.5)  # a plateau: the default recipe would cut the rate
    assert summary["final_lr"] == 1e-2
    groups = trainer.parameter_groups(fitted.net, 0.1, matrices_only=True)
    decayed = {id(q) for q in groups[0]["params"]}
    names = [n for n, q in fitted.net.named_parameters() if id(q) in decayed]
    assert names and all(n.endswith("weight") and not n.startswith(("tokenizer.", "label_embedding.")) for n in names)
    assert not any("norm" in n for n in names)


def test_a_paper_fit_is_one_network_on_quantile_inputs_and_a_users_value_still_wins(tmp_path):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=list("abc"))
    y = pd.Series(np.digitize(X["a"] + X["b"], [-0.5, 0.5]))
    hp = {"recipe": "paper", "max_epochs": 3, "hidden_size": 16, "num_heads": 2}
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="multiclass", hyperparameters=hp)
    fit_on_cores(model, 1, X=X.iloc[:240], y=y.iloc[:240], X_val=X.iloc[240:], y_val=y.iloc[240:], time_limit=60)
    assert len(model.model) == 1  # "auto" members would train more under a time limit
    assert model._encoder.numeric_transform == "quantile"
    assert model.model.members[0].net.tokenizer.num_scale == 1.0
    assert model._fit_summary["weight_average_decay"] is None and model._fit_summary["batch_size"] == 240
    two = MayaModel(path=str(tmp_path / "t"), name="t", problem_type="multiclass",
                    hyperparameters={**hp, "ensemble_members": 2})
    fit_on_cores(two, 1, X=X.iloc[:240], y=y.iloc[:240])
    assert len(two.model) == 2


def test_the_docs_reference_is_the_table():
    """docs/maya.md's hyperparameter reference lists every setting with the table's value per problem type and
    the paper recipe's where it differs."""
    from pathlib import Path

    from autogluon_maya.maya.defaults import DEFAULT_PARAMS, PAPER

    def fmt(v):
        return "None" if v is None else (f'"{v}"' if isinstance(v, str) else repr(v))

    docs = (Path(__file__).resolve().parents[2] / "docs" / "maya.md").read_text()
    rows = {}
    for line in docs.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0].startswith("`") and cells[0].strip("`") in DEFAULT_PARAMS:
            rows[cells[0].strip("`")] = cells[1:6]
    assert set(rows) == set(DEFAULT_PARAMS)
    for name, cells in rows.items():
        want = [fmt(resolve_defaults(t)[name]) for t in PROBLEM_TYPES]
        want.append(fmt("paper" if name == "recipe" else PAPER[name]) if name in PAPER or name == "recipe" else "same")
        assert cells == want, name
