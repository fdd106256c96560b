"""Wall-clock time of every model fit inside one ``TabularPredictor.fit``, as an AutoGluon callback.

AutoGluon's own ``fit_time`` of a bagged model is the fitting time its folds report; with the folds fitted in
parallel Ray workers it leaves out the workers' start-up and the scheduling around them, which on a loaded
2-core machine can be most of the model's share of the budget.  The trainer calls ``before_model_fit`` /
``after_model_fit`` around each model's whole fit (bagging, out-of-fold predictions and saving included), so
the time between the two calls is what the model cost the fit's ``time_limit``.

    clock = ModelWallClock()
    predictor.fit(train, ..., callbacks=[clock])
    clock.records["CatBoost_BAG_L1"]   # {"wall_s": 41.2, "allotted_s": 160.0, "fitted": True, "level": 1}

A model the trainer skipped for lack of time before calling the callbacks has no record; one that was
started and produced nothing has ``fitted: False``.  The callback never stops or skips a model.
"""

from __future__ import annotations

import time
from typing import Callable, Dict, Optional

from autogluon.core.callbacks import AbstractCallback


class ModelWallClock(AbstractCallback):
    """Records per model: wall seconds of its fit, the time limit the trainer gave it, and whether it fitted."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        super().__init__()
        self.clock = clock
        self.records: Dict[str, dict] = {}
        self._current: Optional[str] = None
        self._t0 = 0.0

    def _before_model_fit(self, trainer, model, time_limit=None, stack_name="core", level=1):
        self._current, self._t0 = model.name, self.clock()
        self.records[model.name] = {"wall_s": None, "allotted_s": None if time_limit is None else float(time_limit),
                                    "fitted": False, "level": int(level), "stack_name": stack_name}
        return False, False

    def _after_model_fit(self, trainer, model_names, stack_name="core", level=1):
        if self._current is not None:
            rec = self.records[self._current]
            rec["wall_s"] = self.clock() - self._t0
            rec["fitted"] = bool(model_names)
            self._current = None
        return False

    def __getstate__(self):  # the trainer pickles its callbacks with itself; a custom clock may not pickle
        state = dict(self.__dict__)
        state["clock"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.clock = self.clock or time.perf_counter
