# Test helper (run with Debian's /usr/bin/python3, which has torch): writes the
# model_state_dict of a torch.save'd checkpoint as raw little-endian tensors
# plus an index, so the C++ tests can load reference weights without depending
# on the project's own .pth reader.
#   export_state_dict.py CHECKPOINT.pth VOCAB.pickle OUT_DIR
import json
import pickle
import sys

import torch

assert sys.byteorder == "little", "raw tensors are written in native (little-endian) order"
checkpoint_path, vocab_path, out_dir = sys.argv[1:4]
checkpoint = torch.load(checkpoint_path, map_location="cpu")
state = checkpoint["model_state_dict"] if "model_state_dict" in checkpoint else checkpoint
entries = []
offset = 0
with open(out_dir + "/weights.bin", "wb") as blob:
    for name, tensor in state.items():
        data = tensor.detach().contiguous().cpu().numpy().tobytes()  # native order, checked little-endian above
        entries.append({"name": name, "shape": list(tensor.shape), "dtype": str(tensor.dtype).replace("torch.", ""),
                        "offset": offset, "nbytes": len(data)})
        blob.write(data)
        offset += len(data)
with open(vocab_path, "rb") as f:
    vocab = pickle.load(f)
words = vocab["idx2word_list"]
with open(out_dir + "/index.json", "w") as f:
    json.dump({"entries": entries, "pad_id": words.index("PAD"), "sos_id": words.index(vocab["sos_str"]),
               "eos_id": words.index(vocab["eos_str"]), "vocab_size": len(words)}, f)
