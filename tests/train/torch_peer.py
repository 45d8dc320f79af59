"""PyTorch side of tests/train/test_training.cpp: reads a JSON request, prints JSON.

radam: one torch.optim.RAdam update from a given state (step, exp_avg, exp_avg_sq).
xe:    the spec's label-smoothed cross-entropy built from an explicit target
       distribution and torch.nn.KLDivLoss (independent of our closed form).
"""
import json
import sys

import torch


def radam(req):
    p = torch.tensor(req["param"], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.RAdam([p], lr=req["lr"], betas=(0.9, 0.98), eps=1e-9)
    opt.state[p] = {
        "step": torch.tensor(float(req["step"])),
        "exp_avg": torch.tensor(req["exp_avg"], dtype=torch.float64),
        "exp_avg_sq": torch.tensor(req["exp_avg_sq"], dtype=torch.float64),
    }
    p.grad = torch.tensor(req["grad"], dtype=torch.float64)
    opt.step()
    st = opt.state[p]
    return {"param": p.detach().tolist(), "exp_avg": st["exp_avg"].tolist(),
            "exp_avg_sq": st["exp_avg_sq"].tolist()}


def xe(req):
    lp = torch.tensor(req["log_probs"], dtype=torch.float64)  # B x T x V
    tgt = torch.tensor(req["targets"], dtype=torch.long)       # B x T
    pad, s = req["pad"], req["smoothing"]
    V = lp.size(-1)
    lp2, t2 = lp.reshape(-1, V), tgt.reshape(-1)
    true_dist = torch.full_like(lp2, s / (V - 1))
    true_dist.scatter_(1, t2.unsqueeze(1), 1.0 - s)
    keep = t2 != pad
    kl = torch.nn.KLDivLoss(reduction="sum")(lp2[keep], true_dist[keep])
    return {"loss": (kl / keep.sum()).item()}


if __name__ == "__main__":
    request = json.load(open(sys.argv[2]))
    print(json.dumps({"radam": radam, "xe": xe}[sys.argv[1]](request)))
