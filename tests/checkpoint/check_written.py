# Checks a .pth written by test_checkpoint_python.cpp (PthWriter) with torch.load.
import collections
import sys

import torch

d = torch.load(sys.argv[1])
assert isinstance(d, collections.OrderedDict), type(d)
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
expect = {
    "base": base, "row": base[2], "slice": base[1:3, 2:5], "transposed": base.t(),
    "bf16": torch.arange(6).to(torch.bfloat16) / 3, "half": torch.arange(6).to(torch.float16) / 3,
    "double": torch.arange(6, dtype=torch.float64) / 3, "int64": torch.arange(5) - 2,
    "int32": (torch.arange(5) - 2).int(), "int16": (torch.arange(5) - 2).short(), "int8": (torch.arange(5) - 2).char(),
    "uint8": torch.arange(5).byte(), "bool": torch.arange(6) % 2 == 0, "scalar": torch.tensor(3.25),
    "empty": torch.zeros(0, 3),
}
for name, e in expect.items():
    t = d[name]
    assert t.dtype == e.dtype and t.shape == e.shape and torch.equal(t, e), (name, t, e)
assert d["row"].storage_offset() == 12 and d["row"].storage().data_ptr() == d["base"].storage().data_ptr()
assert d["slice"].stride() == (6, 1) and d["slice"].storage_offset() == 8
assert d["transposed"].stride() == (1, 6) and d["transposed"].storage().data_ptr() == d["base"].storage().data_ptr()
assert d["int"] == -5 and d["big"] == -2**63 and d["float"] == 0.1 and d["str"] == "h\u00e9llo"
assert d["bytes"] == b"\x00\xff" and d["list"] == [1, [None, True]] and d["tuple"] == (1, 2, 3, 4)
print("OK")
