# Zero-shot TABSWIFT with ensemble seeds 0-4 (P1 split, seed 0, 1 core): python member_seeds.py NAME spambase,phoneme,qsar_biodeg,satimage
# (with AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT=<candidate> for a candidate); one JSON line per fit.
import sys, json
import autogluon_maya
from autogluon.tabular import TabularPredictor
from autogluon_maya.common.protocol import default_datasets_dir, load_dataset, p1_split
for ds_name in sys.argv[2].split(","):
    ds = load_dataset(str(default_datasets_dir() / ds_name)); train, val, test = p1_split(ds, 0)
    for rs in range(5):
        pred = TabularPredictor(label=ds.target, verbosity=0, path=f"/tmp/ag_zs_{sys.argv[1]}_{ds_name}_{rs}").fit(
            train, tuning_data=val, hyperparameters={"TABSWIFT": {"random_seed": rs}}, fit_weighted_ensemble=False,
            num_cpus=1, num_gpus=0)
        sc = pred.evaluate(test, silent=True)
        r = {"ckpt": sys.argv[1], "ds": ds_name, "rs": rs, "acc": sc.get("accuracy"), "rmse": -sc["root_mean_squared_error"] if "root_mean_squared_error" in sc else None}
        print(json.dumps(r), flush=True)
