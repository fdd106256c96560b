"""TABSWIFT's HPO space: only what matters for a pretrained ICL model -- inference ensemble size,
context size, early-exit threshold and fine-tuning (the backbone itself is fixed)."""

from autogluon.common import space


def tabswift_search_space() -> dict:
    return {
        "n_estimators": space.Categorical(8, 4, 16),
        "max_context_rows": space.Categorical(2048, 1024, 4096),
        "tau": space.Categorical(None, 0.9, 0.7),
        "fine_tune": space.Categorical("auto", False, True),
        "fine_tune_lr": space.Real(3e-5, 3e-4, default=1e-4, log=True),
        "fine_tune_steps": space.Categorical(400, 100, 800),
    }
