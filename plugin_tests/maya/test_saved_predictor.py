"""A MAYA predictor saved by an earlier version of the package (``saved_maya/``, written by ``saved_maya/make.py``)
loads and predicts bit for bit what it predicted when it was saved.  Its pickle names the fitted-model classes
by the module they were defined in then, ``autogluon_maya.maya.trainer``; that path must keep resolving."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import numpy as np

FIXTURE = Path(__file__).resolve().parent / "saved_maya"


def query_rows():
    """The rows the fixture's probabilities were predicted on, as ``make.py`` draws them."""
    spec = importlib.util.spec_from_file_location("saved_maya_make", FIXTURE / "make.py")
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    return make.rows()[2]


def test_a_saved_predictor_predicts_bit_for_bit_as_when_it_was_saved(tmp_path, one_torch_thread_seeded):
    from autogluon.tabular import TabularPredictor

    from autogluon_maya.maya.trainer import FittedMaya, FittedMayaMembers

    # the fixture's pickle names the fitted classes by the module that first defined them, so loading it exercises
    # the re-export there
    pickled = (FIXTURE / "predictor" / "models" / "Maya" / "model.pkl").read_bytes()
    assert b"autogluon_maya.maya.trainer" in pickled and b"FittedMayaMembers" in pickled
    shutil.copytree(FIXTURE / "predictor", tmp_path / "predictor")
    pred = TabularPredictor.load(str(tmp_path / "predictor"), verbosity=0, require_py_version_match=False)
    members = pred._trainer.load_model("Maya").model
    assert isinstance(members, FittedMayaMembers) and len(members) == 2
    assert all(isinstance(m, FittedMaya) for m in members.members)
    got = pred.predict_proba(query_rows(), as_multiclass=False).to_numpy()
    want = np.load(FIXTURE / "proba.npy")
    assert got.dtype == want.dtype and np.array_equal(got, want)
