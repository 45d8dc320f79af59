# Checks `expnet checkpoint export` output with torch.load: every tensor
# bit-identical to the reference checkpoint's, metadata as given, and
# load_state_dict(strict=True) into a module with the same names.
import json
import pickle
import sys

import torch

exported, original, config_path, vocab_path = sys.argv[1:5]
ours = torch.load(exported)
ref = torch.load(original)["model_state_dict"]
sd = ours["model_state_dict"]
assert list(sd.keys()) == list(ref.keys()), "names or order differ"
for k, r in ref.items():
    t = sd[k]
    assert t.dtype == r.dtype and t.shape == r.shape, k
    assert torch.equal(t.reshape(-1).view(torch.uint8), r.reshape(-1).contiguous().view(torch.uint8)), k
assert json.loads(ours["expnet_config"]) == json.load(open(config_path))
vocab = json.loads(ours["expnet_vocabulary"])
assert vocab["words"] == pickle.load(open(vocab_path, "rb"))["idx2word_list"]


def module_for(state):
    root = torch.nn.Module()
    for name, t in state.items():
        *path, leaf = name.split(".")
        node = root
        for part in path:
            if not hasattr(node, part):
                node.add_module(part, torch.nn.Module())
            node = getattr(node, part)
        if t.is_floating_point():
            node.register_parameter(leaf, torch.nn.Parameter(torch.zeros_like(t)))
        else:
            node.register_buffer(leaf, torch.zeros_like(t))
    return root


m = module_for(ref)
m.load_state_dict(sd, strict=True)
for k, v in m.state_dict().items():
    assert torch.equal(v, ref[k]), k
print("OK")
