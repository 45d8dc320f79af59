# Writes .pth files with torch.save (Debian's python3-torch) for the reader
# tests, and a manifest of what torch.load gives back:
#   OUT/<case>.pth, OUT/<case>.json: {"value": canonical tree, "tensors": [...]}
#   OUT/<case>.bin: the raw little-endian bytes of every tensor (contiguous), back to back.
# The canonical tree is what test_checkpoint_python.cpp rebuilds from our reader.
import collections
import json
import math
import sys

import torch

out_dir = sys.argv[1]


def canonical(obj, tensors, index):
    if obj is None:
        return {"none": True}
    if isinstance(obj, bool):
        return {"bool": obj}
    if isinstance(obj, int):
        return {"int": str(obj)}
    if isinstance(obj, float):
        return {"float": repr(obj) if not math.isnan(obj) else "nan"}
    if isinstance(obj, str):
        return {"str": obj}
    if isinstance(obj, bytes):
        return {"bytes": obj.hex()}
    if isinstance(obj, torch.Tensor):
        key = id(obj)
        if key not in index:
            index[key] = len(tensors)
            tensors.append(obj)
        return {"tensor": index[key]}
    if isinstance(obj, tuple):
        return {"tuple": [canonical(x, tensors, index) for x in obj]}
    if isinstance(obj, list):
        return {"list": [canonical(x, tensors, index) for x in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"set": sorted(json.dumps(canonical(x, tensors, index), sort_keys=True) for x in obj)}
    if isinstance(obj, dict):
        return {"dict": [[canonical(k, tensors, index), canonical(v, tensors, index)] for k, v in obj.items()],
                "ordered": isinstance(obj, collections.OrderedDict)}
    raise TypeError(type(obj))


def write_case(name, obj, **save_args):
    path = f"{out_dir}/{name}.pth"
    torch.save(obj, path, **save_args)
    loaded = torch.load(path)
    tensors, index = [], {}
    tree = canonical(loaded, tensors, index)
    described, blob = [], bytearray()
    storages = {}
    for t in tensors:
        flat = t.detach().reshape(-1).contiguous()
        raw = flat.view(torch.uint8) if flat.numel() else torch.empty(0, dtype=torch.uint8)
        data = bytes(raw.numpy().tobytes())
        sid = t.storage().data_ptr()
        storages.setdefault(sid, len(storages))
        described.append({"offset": len(blob), "nbytes": len(data), "dtype": str(t.dtype).replace("torch.", ""),
                          "shape": list(t.shape), "stride": list(t.stride()), "storage_offset": t.storage_offset(),
                          "storage": storages[sid], "requires_grad": t.requires_grad})
        blob += data
    with open(f"{out_dir}/{name}.json", "w") as f:
        json.dump({"value": tree, "tensors": described}, f)
    with open(f"{out_dir}/{name}.bin", "wb") as f:
        f.write(blob)


torch.manual_seed(7)
plain = collections.OrderedDict()
plain["none"] = None
plain["bools"] = [True, False]
plain["ints"] = [0, 1, -1, 255, 256, 65535, 65536, 2**31 - 1, -2**31, 2**31, -2**31 - 1, 2**63 - 1, -2**63]
plain["floats"] = [0.0, -0.0, -1.5, 1e300, 5e-324, float("inf"), float("-inf"), 0.1]
plain["str"] = "h\u00e9llo \u2603 \U0001F600"
plain["empty"] = ["", b"", (), [], {}]
plain["bytes"] = bytes(range(256))
plain["tuples"] = (1, (2, 3), (4, 5, 6), (7, 8, 9, 10))
plain["nested"] = {"a": [{"b": None, 3: "int key", (1, 2): "tuple key", 2.5: "float key"}]}
plain["set"] = {1, 2, 3}
plain["frozenset"] = frozenset(["x"])
shared = [1, 2]
plain["shared_list"] = [shared, shared]

base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
tensors = collections.OrderedDict()
for dtype in [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
              torch.int16, torch.int8, torch.uint8, torch.bool]:
    if dtype == torch.bool:
        t = torch.rand(3, 5) > 0.5
    elif dtype.is_floating_point:
        t = torch.randn(3, 5).to(dtype)
    else:
        t = torch.randint(-100 if dtype != torch.uint8 else 0, 100, (3, 5)).to(dtype)
    tensors[str(dtype)] = t
tensors["special"] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 1e-40])
tensors["scalar"] = torch.tensor(3.25)
tensors["empty"] = torch.empty(0, 3)
tensors["base"] = base
tensors["row_view"] = base[2]                 # storage offset 12
tensors["slice_view"] = base[1:3, 2:5]        # offset and strides
tensors["transposed"] = base.t()              # non-contiguous
tensors["stepped"] = base[:, ::2]             # stride 2
tensors["expanded"] = torch.ones(3, 1).expand(3, 4)  # stride 0
tensors["parameter"] = torch.nn.Parameter(torch.randn(2, 2))
tensors["requires_grad"] = torch.randn(3, requires_grad=True)

# Real optimizer / scheduler state, as a training script saves them.
model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98))
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
model(torch.randn(5, 4)).sum().backward()
opt.step()
sched.step()
training = {"model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "scheduler_state_dict": sched.state_dict(),
            "data_loader_state_dict": {"batch_it": [3, 0], "epoch_it": 1, "array_of_init_seed": [11, 22]}}

write_case("plain_p2", plain)
write_case("plain_p4", plain, pickle_protocol=4)
write_case("plain_p5", plain, pickle_protocol=5)
write_case("tensors_p2", tensors)
write_case("tensors_p5", tensors, pickle_protocol=5)
write_case("training", training)
write_case("tensors_legacy", tensors, _use_new_zipfile_serialization=False)
write_case("training_legacy", training, _use_new_zipfile_serialization=False)
