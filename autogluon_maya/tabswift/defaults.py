"""TABSWIFT hyperparameters and their defaults (README "TABSWIFT hyperparameters").

Defaults fit 2 CPU cores in seconds to minutes for tables up to ~10k rows; on a GPU raise
``n_estimators`` (the paper's benchmark used 16) and ``max_context_rows``.
"""

from pathlib import Path

#: The checkpoint shipped inside the package (trained by ``autogluon_maya.pretraining``).
SHIPPED_CHECKPOINT = Path(__file__).with_name("checkpoints") / "tabswift_small"

DEFAULT_PARAMS = {
    "checkpoint_path": "auto",        # "auto": the authors' released weights if they can be had, else the
                                      # shipped ones; "shipped" (= None), "hub", or a path (checkpoints_io/choice.py)
    "n_estimators": 8,                # ensemble members (feature permutation x class shift x normalization)
    "norm_methods": ("none", "power"),
    "softmax_temperature": 0.9,
    "max_context_rows": 2048,         # larger contexts are subsampled (stratified for classification)
    "outlier_threshold": 4.0,
    "wide_features": "select",        # > F_max columns: "select" (screened subsets), "subsets" (random), "pca"
    "pipeline": "ours",               # "authors": their preprocessing and member plan (docs/tabswift_vs_authors.md)
    "tau": None,                      # early exit threshold; None = off, "auto" = chosen on validation
    "tau_max_loss": 0.01,             # "auto": largest relative validation-score loss accepted
    "chunk_size": 1024,               # query/context rows per attention call (memory bound)
    "cache_max_mb": "auto",           # context K/V caches kept between predict calls, all members together;
                                      # "auto": every member's, within a quarter of the memory available
                                      # (cache_budget.py)
    "disk_cache_mb": "auto",          # the caches saved with the model (float16 block inputs), so that a model
                                      # loaded from disk does not encode its contexts again; 0 = none saved,
                                      # "auto": those of every member kept in memory
    "adaptive_threads": True,         # CPU: time 1 vs num_cpus threads on one episode at fit start, keep the faster
    "fine_tune": "auto",              # episodes from the training rows, early-stopped on validation; "auto":
                                      # only with validation rows and time for fine_tune_min_steps, kept only
                                      # if the whole ensemble validates better (finetune.fine_tune_auto)
    "fine_tune_steps": 400,           # the cosine's horizon and the most steps; early stopping usually ends
                                      # sooner (docs/tabswift.md, "How many steps")
    "fine_tune_min_steps": 20,        # "auto": fine-tune only if this many steps and their checks fit in time
    "fine_tune_lr": 1e-4,
    "fine_tune_episodes_per_step": 4,
    "fine_tune_rows": 512,            # rows per episode (support + queries)
    "fine_tune_eval_every": 10,
    "fine_tune_patience": 3,          # evaluations without improvement before stopping
    "fine_tune_exit_steps": 40,       # after fine-tuning with tau set: retrain the exit heads (0 = early exit off)
    "fine_tune_eval_members": 2,      # ensemble members used for the validation checks while fine-tuning
}
# What a fit records for its refits is no setting: refit_records.TabSwiftRefitRecord, "refit_" keys in
# params_trained (common.refit).
