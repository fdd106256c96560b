import time, sys, threading, torch
from autogluon_maya.maya.network import MayaNetwork
from autogluon_maya.maya.trainer import make_loss
mode=sys.argv[1]; F_,C,B=(16,26,128) if len(sys.argv)<3 else (36,6,128)
torch.set_num_threads(1)
def make(seed):
    torch.manual_seed(seed)
    net=MayaNetwork(F_,[],C,"class",num_classes=C,num_layers=1)
    opt=torch.optim.AdamW(net.parameters(),lr=1e-3,fused=True)
    x=torch.randn(B,F_); xc=torch.zeros(B,0,dtype=torch.long); y=torch.randint(0,C,(B,))
    loss_fn=make_loss("class")
    def step():
        out,br=net.forward_train(x,xc,y,return_branches=True)
        loss=loss_fn(out,y).mean(); opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
        net.update_branch_weights(br, lambda q: loss_fn(q,y).mean(), 0.9)
    return step
N=300
def run(step, out, i):
    for _ in range(20): step()
    t=time.perf_counter()
    for _ in range(N): step()
    out[i]=(time.perf_counter()-t)/N*1e3
s1,s2=make(0),make(1); out={}
if mode=="seq":
    run(s1,out,0)
    print("one alone, 1 thread: ms/step", round(out[0],2))
    torch.set_num_threads(2); run(s2,out,1); print("one alone, 2 threads: ms/step", round(out[1],2))
else:
    ts=[threading.Thread(target=run,args=(s,out,i)) for i,s in enumerate((s1,s2))]
    t=time.perf_counter(); [x.start() for x in ts]; [x.join() for x in ts]
    print("two python threads, 1 intra-op each: ms/step", {k:round(v,2) for k,v in out.items()}, "wall per pair-step", round((time.perf_counter()-t)/(N+20)*1e3,2))
