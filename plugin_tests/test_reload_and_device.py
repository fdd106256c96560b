"""What the README promises about saved predictors, checked in a fresh Python process:

- "A saved predictor loads in a fresh process without [``import autogluon_maya``]": the child process
  imports only AutoGluon, loads the predictor and predicts; the probabilities must equal those of the
  fitting process for both models.
- "a model trained on a GPU loads and predicts on a CPU-only machine": no GPU is needed to write what a
  GPU fit saves: the pickles record ``cuda`` as the training device and would record every tensor in them
  on ``cuda:0`` (they hold none: the weights are saved apart, through safetensors), and the child, with
  ``CUDA_VISIBLE_DEVICES=""``, must load them onto the CPU and predict the same.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from autogluon.tabular import TabularPredictor
from plugin_tests.resources import pickle_as_if_on_cuda

MODELS = ("Maya", "TabSwift")
#: how far a reloaded model may predict from the fitted one: MAYA exactly; TabSwift from the context caches it saved,
#: whose block inputs are float16 (~1e-5 on real tables, docs/tabswift.md "A model loaded from disk")
ATOL = {"Maya": 1e-6, "TabSwift": 2e-4}
HP = {"MAYA": {"max_epochs": 3, "hidden_size": 16, "num_heads": 2, "num_layers": 1},
      "TABSWIFT": {"n_estimators": 2, "max_context_rows": 256, "fine_tune": False}}

CHILD = textwrap.dedent("""
    import json, pickle, sys
    from autogluon.tabular import TabularPredictor   # deliberately no `import autogluon_maya`

    path, test_file, out_file = sys.argv[1:4]
    test = pickle.load(open(test_file, "rb"))
    pred = TabularPredictor.load(path, verbosity=0, require_py_version_match=False)
    result = {}
    for name in pred.model_names():
        model = pred._trainer.load_model(name)
        result[name] = {"proba": pred.predict_proba(test, model=name, as_multiclass=False).to_numpy().tolist(),
                        "device": model.get_device()}
    json.dump(result, open(out_file, "w"))
""")


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer(as_frame=True).frame.sample(n=260, random_state=0).reset_index(drop=True)
    root = tmp_path_factory.mktemp("reload")
    train, val = data.iloc[:200], data.iloc[200:]
    pred = TabularPredictor(label="target", path=str(root / "ag"), verbosity=0).fit(
        train, tuning_data=val, hyperparameters=HP, fit_weighted_ensemble=False, raise_on_model_failure=True,
        num_cpus=1)
    assert set(pred.model_names()) == set(MODELS)
    # The fitting process's own predictions: AutoGluon scores the validation rows with the in-memory
    # model right after fit and caches them. (predict_proba in this process would reload from disk and
    # could hide what saving loses.)
    expected = {m: np.asarray(pred._trainer._load_model_y_pred_proba_val(m)) for m in MODELS}
    (root / "test.pkl").write_bytes(pickle.dumps(val.drop(columns="target")))
    return root, expected


def _predict_in_child(root, predictor_dir, env_extra=None) -> dict:
    import json

    script = root / "child.py"
    script.write_text(CHILD)
    out = root / f"out_{predictor_dir.name}.json"
    env = {**os.environ, **(env_extra or {})}
    proc = subprocess.run([sys.executable, str(script), str(predictor_dir), str(root / "test.pkl"), str(out)],
                          env=env, capture_output=True, text=True, timeout=300, cwd=str(root))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


def test_fresh_process_predicts_the_same_without_importing_the_package(fitted):
    root, expected = fitted
    result = _predict_in_child(root, root / "ag")
    for m in MODELS:
        np.testing.assert_allclose(np.asarray(result[m]["proba"]), expected[m], atol=ATOL[m], err_msg=m)


def test_model_recorded_as_trained_on_cuda_loads_on_cpu_and_predicts_the_same(fitted):
    """What a GPU fit leaves: "cuda" as the training device, and any tensor in the pickle recorded on cuda:0.
    Neither model pickles a tensor (MAYA's networks go to ``module.safetensors``, TabSwift's weights to their
    own file), so nothing in ``model.pkl`` can name a CUDA device; each model must load on the CPU and predict
    the same."""
    root, expected = fitted
    gpu_dir = root / "ag_gpu"
    shutil.copytree(root / "ag", gpu_dir)
    for m in MODELS:
        pkl = gpu_dir / "models" / m / "model.pkl"
        model = pickle.loads(pkl.read_bytes())
        model.device_train = model.device = "cuda"
        data, storages = pickle_as_if_on_cuda(model)
        assert storages == 0, f"{m}'s pickle holds {storages} torch storages"
        pkl.write_bytes(data)
    assert (gpu_dir / "models" / "Maya" / "module.safetensors").is_file()
    result = _predict_in_child(root, gpu_dir, {"CUDA_VISIBLE_DEVICES": ""})
    for m in MODELS:
        assert result[m]["device"] == "cpu", m
        np.testing.assert_allclose(np.asarray(result[m]["proba"]), expected[m], atol=ATOL[m], err_msg=m)


def test_a_save_without_a_network_removes_the_weights_an_earlier_save_left(tmp_path):
    """A model that keeps no network (a fall-back to the prior) saved into a folder that holds the weights of an
    earlier save must not load them back into its empty module."""
    from sklearn.datasets import load_breast_cancer

    from autogluon_maya import MayaModel
    from autogluon_maya.common.ag_model import MODULE_WEIGHTS_NAME
    from autogluon_maya.maya.fitted import FittedMayaMembers

    data = load_breast_cancer(as_frame=True).frame.sample(n=120, random_state=0).reset_index(drop=True)
    pred = TabularPredictor(label="target", path=str(tmp_path / "ag"), verbosity=0).fit(
        data, hyperparameters={"MAYA": {"max_epochs": 1, "hidden_size": 8, "num_heads": 2}},
        fit_weighted_ensemble=False, num_cpus=1, num_gpus=0)
    model = pred._trainer.load_model("Maya")
    weights = os.path.join(model.path, MODULE_WEIGHTS_NAME)
    assert os.path.isfile(weights)
    model.model, model._prior = FittedMayaMembers([]), np.float32(0.6)
    model.save()
    assert not os.path.isfile(weights)
    loaded = MayaModel.load(model.path)
    assert np.allclose(loaded.predict_proba(data.drop(columns="target").iloc[:5]), 0.6)
