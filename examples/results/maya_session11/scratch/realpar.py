"""letter P1 train split: train_maya for a fixed number of epochs, alone (2 threads adaptive / 1 thread) vs two at once in threads."""
import sys, time, json, threading, torch, numpy as np
from autogluon_maya.common.preprocessing import TabularEncoder
from autogluon_maya.common.protocol import load_dataset, p1_split
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import FittedMaya, make_loss, train_maya
from autogluon_maya.maya.defaults import DEFAULT_PARAMS, resolve_task_defaults
ds = load_dataset("/work/shared/datasets/letter"); train, val, _ = p1_split(ds, 0)
X, y = train.drop(columns=[ds.target]), train[ds.target]
enc = TabularEncoder().fit(X); t = enc.transform(X)
yl = y.astype("category").cat.codes.to_numpy().astype(np.int64)
tv = enc.transform(val.drop(columns=[ds.target]))
x_num, x_cat, y_t = torch.from_numpy(t.x_num), torch.from_numpy(t.x_cat), torch.from_numpy(yl)
vx, vc = torch.from_numpy(tv.x_num), torch.from_numpy(tv.x_cat)
p = resolve_task_defaults(dict(DEFAULT_PARAMS), regression=False); p["patience"]=None; p["budget_anneal"]=None
EPOCHS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
def one(seed, threads, out):
    torch.manual_seed(seed)
    net = MayaNetwork(t.x_num.shape[1], [], 26, "class", 26, num_layers=1)
    f = FittedMaya(net)
    def vs(ff):  # a validation pass like the wrapper's: predict + a numpy score
        raw = ff.predict_raw(vx, vc); return float(torch.softmax(raw, 1).max(1).values.mean())
    t0 = time.perf_counter()
    s = train_maya(f, x_num=x_num, x_cat=x_cat, y_label=y_t, y_target=y_t, sample_weight=None, loss_fn=make_loss("class"),
                   params=p, device=torch.device("cpu"), budget=TimeBudget(1e6), seed=seed, val_score_fn=vs,
                   max_epochs=EPOCHS, num_threads=threads)
    out[seed] = (time.perf_counter() - t0) / EPOCHS
mode = sys.argv[1]; out = {}
if mode == "alone2":
    torch.set_num_threads(2); one(0, 2, out)
elif mode == "alone1":
    torch.set_num_threads(1); one(0, 1, out)
else:
    torch.set_num_threads(1)
    ts = [threading.Thread(target=one, args=(s, 1, out)) for s in (0, 1)]
    [x.start() for x in ts]; [x.join() for x in ts]
print(mode, "s/epoch per member", {k: round(v, 3) for k, v in out.items()})
