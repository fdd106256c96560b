import time, sys, threading, torch
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import make_loss
F_,C,B=36,6,128; L=int(sys.argv[1]); br=int(sys.argv[2]) if len(sys.argv)>2 else 2
def make(seed):
    torch.manual_seed(seed)
    net=MayaNetwork(F_,[],C,"class",num_classes=C,num_layers=L,num_branch=br)
    opt=torch.optim.AdamW(net.parameters(),lr=1e-3,fused=True)
    x=torch.randn(B,F_); xc=torch.zeros(B,0,dtype=torch.long); y=torch.randint(0,C,(B,))
    loss_fn=make_loss("class")
    def step():
        out,b=net.forward_train(x,xc,y,return_branches=True)
        loss=loss_fn(out,y).mean(); opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        net.update_branch_weights(b, lambda q: loss_fn(q,y).mean(), 0.9)
    return step
N=150
def run(step, out, i):
    for _ in range(10): step()
    t=time.perf_counter()
    for _ in range(N): step()
    out[i]=(time.perf_counter()-t)/N*1e3
s1,s2=make(0),make(1); out={}
torch.set_num_threads(1); run(s1,out,"1t")
torch.set_num_threads(2); run(s1,out,"2t")
torch.set_num_threads(1)
ts=[threading.Thread(target=run,args=(s,out,i)) for i,s in enumerate((s1,s2))]
[x.start() for x in ts]; [x.join() for x in ts]
print(f"satimage L={L} br={br} ms/step:", {k:round(v,2) for k,v in out.items()})
