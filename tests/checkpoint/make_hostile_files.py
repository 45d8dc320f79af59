# Small .pth files that cost gigabytes or never end without the readers'
# budgets (docs/checkpoints.md, "Limits against hostile input"), and a valid
# but unusual one; test_checkpoint_budget runs the CLI on them.
#   make_hostile_files.py OUT [ZEROS_MIB]
import collections
import json
import pickle
import sys
import zipfile

import torch

out = sys.argv[1]
zeros_mib = int(sys.argv[2]) if len(sys.argv) > 2 else 400


def torch_zip(name, data_pkl, records=(), deflate_pkl=False, zeros=0):
    """A torch.save-shaped archive: archive/data.pkl (optionally deflated and
    followed by `zeros` bytes of zeros), archive/data/<key> records, version."""
    with zipfile.ZipFile(f"{out}/{name}", "w") as z:
        info = zipfile.ZipInfo("archive/data.pkl")
        info.compress_type = zipfile.ZIP_DEFLATED if deflate_pkl else zipfile.ZIP_STORED
        with z.open(info, "w", force_zip64=zeros > (1 << 31)) as f:
            f.write(data_pkl)
            block = bytes(1 << 20)
            left = zeros
            while left > 0:
                f.write(block[: min(left, len(block))])
                left -= min(left, len(block))
        for key, data in records:
            z.writestr(f"archive/data/{key}", data)
        z.writestr("archive/version", "3\n")


# {"x": L60} with L0 = [tensor], L(i+1) = [Li, Li]: 2^60 paths to one tensor.
# torch.save memoises the shared lists, so the file is small.
t = torch.zeros(1)
nested = [t]
for _ in range(60):
    nested = [nested, nested]
torch.save({"x": nested, "w": t}, f"{out}/shared_lists.pth")

# A list that holds itself next to a tensor.
cycle = [t]
cycle.append(cycle)
torch.save({"x": cycle}, f"{out}/cycle.pth")

# A dict key of 2^40 leaves (a tuple sharing its halves): Python cannot even
# hash it to write it, so the program is written by hand.
torch_zip("shared_key.pth", b"\x80\x02}N" + b"2\x86" * 40 + b"Ns.")

# torch.Size of a 20000-int tuple, 4000 times: 80M ints from 48 KB.
ints = b"(K\x01" + b"2" * 19999 + b"tq\x00" + b"0"
sizes = ints + b"ctorch\nSize\nq\x01" + b"0" + b"h\x01h\x00\x85R0" * 4000
torch_zip("size_copies.pth", b"\x80\x02" + sizes + b"}.")

# The same in the legacy format (magic, protocol version, sys_info, data).
with open(f"{out}/legacy_size_copies.pth", "wb") as f:
    for head in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}):
        f.write(pickle.dumps(head, protocol=2))
    f.write(b"\x80\x02" + sizes + b"}.")

# 8M empty lists, each popped, deflated to a few kilobytes.
torch_zip("small_values.pth", b"\x80\x02" + b"]0" * 8_000_000 + b"}.", deflate_pkl=True)

# A valid pickle, then `zeros_mib` MiB of zeros, deflated (a 400 KB to 3 MB file).
torch_zip("deflate_bomb.pth", b"\x80\x02}.", deflate_pkl=True, zeros=zeros_mib << 20)

# Our layout with a stored model configuration of 10^9 heads.
config = {
    "swin_img_size": 32, "swin_patch_size": 4, "swin_in_chans": 3, "swin_embed_dim": 8, "swin_depths": [2, 2],
    "swin_num_heads": [1, 2], "swin_window_size": 4, "swin_mlp_ratio": 2.0, "swin_qkv_bias": True, "swin_ape": False,
    "swin_patch_norm": True, "final_swin_dim": 16, "d_model": 10**9, "N_enc": 1, "N_dec": 1, "ff": 32,
    "num_heads": 10**9, "num_exp_enc_list": [4], "num_exp_dec": 4, "max_seq_len": 10,
}
torch.save({"model_state_dict": collections.OrderedDict(), "expnet_config": json.dumps(config)},
           f"{out}/huge_config.pth")

# A valid tiny configuration whose projection claims 10^9 words (an empty [10^9, 0] tensor):
# export sizes the vocabulary from its rows.
small = dict(config, d_model=16, num_heads=2)
torch.save({"model_state_dict": collections.OrderedDict([("vocab_linear.weight", torch.empty(10**9, 0))]),
            "expnet_config": json.dumps(small)}, f"{out}/huge_vocabulary.pth")

# Valid but unusual: a tensor shared by two keys and a small shared tuple key.
torch.save({"a": t, "b": {"c": t}, (1, (2, 3)): "k"}, f"{out}/unusual.pth")
