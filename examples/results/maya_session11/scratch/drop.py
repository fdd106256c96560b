import time, torch
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import make_loss
torch.set_num_threads(1); F_,C,B=16,26,128
def make(**kw):
    torch.manual_seed(0)
    net=MayaNetwork(F_,[],C,"class",num_classes=C,num_layers=1,**kw)
    opt=torch.optim.AdamW(net.parameters(),lr=1e-3,fused=True)
    x=torch.randn(B,F_); xc=torch.zeros(B,0,dtype=torch.long); y=torch.randint(0,C,(B,))
    loss_fn=make_loss("class")
    def step():
        out,br=net.forward_train(x,xc,y,return_branches=True)
        loss=loss_fn(out,y).mean(); opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        net.update_branch_weights(br, lambda q: loss_fn(q,y).mean(), 0.9)
    return step
cfgs={"default":{}, "no dropout":dict(dropout=0.0,decoder_dropout=0.0), "branch1":dict(num_branch=1), "branch4":dict(num_branch=4)}
steps={k:make(**v) for k,v in cfgs.items()}
res={k:[] for k in cfgs}
for rep in range(3):
    for k,s in steps.items():
        for _ in range(10): s()
        t=time.perf_counter()
        for _ in range(100): s()
        res[k].append((time.perf_counter()-t)*10)
print({k:round(min(v),2) for k,v in res.items()})
