# Files for test_checkpoint_python: a Swin ImageNet-style checkpoint, and
# malicious pickles that would run a command if unpickled by Python.
import collections
import os
import pickle
import subprocess
import sys
import zipfile

import torch

out, marker = sys.argv[1], sys.argv[2]
torch.manual_seed(3)
swin = collections.OrderedDict()
swin["patch_embed.proj.weight"] = torch.randn(4, 3, 2, 2)
swin["layers.0.blocks.0.attn.relative_position_bias_table"] = torch.randn(9, 2)
swin["layers.0.blocks.0.attn.relative_position_index"] = torch.arange(16).reshape(4, 4)
swin["head.weight"] = torch.randn(10, 8)
swin["head.bias"] = torch.randn(10)
torch.save({"model": swin, "epoch": 300}, f"{out}/swin.pth")


class Evil:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


torch.save({"x": Evil(os.system, (f"touch {marker}",))}, f"{out}/evil_system.pth")
torch.save({"x": Evil(eval, (f"__import__('os').system('touch {marker}')",))}, f"{out}/evil_eval.pth",
           pickle_protocol=4)
torch.save({"x": Evil(subprocess.Popen, (["touch", marker],))}, f"{out}/evil_popen.pth")
torch.save({"x": Evil(os.system, (f"touch {marker}",))}, f"{out}/evil_legacy.pth", _use_new_zipfile_serialization=False)
with open(f"{out}/evil_vocab.pickle", "wb") as f:
    pickle.dump({"idx2word_list": Evil(os.system, (f"touch {marker}",))}, f, protocol=5)
with zipfile.ZipFile(f"{out}/nodata.pth", "w") as z:
    z.writestr("archive/version", "3\n")
    z.writestr("archive/other", "x")
