import time, sys, importlib.util, torch
from autogluon_maya.maya import network as new
from autogluon_maya.maya.trainer import make_loss
spec=importlib.util.spec_from_file_location("network_old",sys.argv[2] if len(sys.argv) > 2 else "/tmp/s11/old/network_old.py"); old=importlib.util.module_from_spec(spec); spec.loader.exec_module(old)
threads=int(sys.argv[1]); torch.set_num_threads(threads)
shapes={"letter":(16,26,128),"satimage":(36,6,128),"california":(8,0,256)}
for name,(F_,C,B) in shapes.items():
    res={}
    for tag,mod in (("old",old),("new",new),("old",old),("new",new)):
        torch.manual_seed(0)
        kind="class" if C else "real"
        net=mod.MayaNetwork(F_,[],C or 1,kind,num_classes=C,num_layers=1)
        opt=torch.optim.AdamW(net.parameters(),lr=1e-3,fused=True)
        loss_fn=make_loss(kind)
        x=torch.randn(B,F_); xc=torch.zeros(B,0,dtype=torch.long); y=torch.randint(0,C,(B,)) if C else torch.randn(B)
        def step():
            out,br=net.forward_train(x,xc,y,return_branches=True)
            loss=loss_fn(out,y).mean(); opt.zero_grad(set_to_none=True); loss.backward(); opt.step()
            net.update_branch_weights(br, lambda q: loss_fn(q,y).mean(), 0.9)
        for _ in range(20): step()
        t=time.perf_counter()
        for _ in range(150): step()
        res.setdefault(tag,[]).append((time.perf_counter()-t)/150*1e3)
        with torch.no_grad():
            net.eval(); xe=torch.randn(1024,F_); xce=torch.zeros(1024,0,dtype=torch.long)
            t=time.perf_counter()
            for _ in range(10): net.encode(xe,xce)
            res.setdefault(tag+"_enc",[]).append((time.perf_counter()-t)/10*1e3)
    o=min(res["old"]); n=min(res["new"]); oe=min(res["old_enc"]); ne=min(res["new_enc"])
    print(f"{name} threads={threads} B={B}: step old {o:.2f} ms new {n:.2f} ms ratio {o/n:.2f}; encode 1024 rows old {oe:.2f} new {ne:.2f} ratio {oe/ne:.2f}")
