#!/usr/bin/python3
"""Side by side with the authors' code (decoding issue, "Performance"): one image,
the official configuration with the same random weights (seed 1234), the released
vocabulary, beam 5, max length 21, 2 threads.

1. Builds the authors' End_ExpansionNet_v2 from a copy of their public repository
   (ExpansionNet_v2; its code is not part of this project: pass its folder), saves its
   random weights as a checkpoint and times their encoder (forward_enc) and their whole
   beam search (mode='beam_search'), repeated; decoding = the two medians' difference.
2. Captions the same image with the same weights through `expnet caption --json`,
   repeated, and reads ms.encode and ms.decode.
3. Prints both captions, whether the best ones are identical, the medians and the
   ratios the issue sets (decode <= 0.15x, encode + decode <= 0.6x).

Preprocessing on their side is the demo's (PIL bilinear resize to 384, /255, ImageNet
mean and std), written out here so torchvision is not needed.

usage: authors_side_by_side.py --authors DIR --expnet EXPNET --vocab demo_coco_tokens.pickle
                               --image IMAGE --work DIR [--repeats N] [--json REPORT]"""
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import time

from peer_arguments import side_by_side_parser


def authors_side(args, weights):
    sys.path.insert(0, args.authors)
    import numpy as np
    import torch
    from argparse import Namespace
    from PIL import Image
    from models.End_ExpansionNet_v2 import End_ExpansionNet_v2

    torch.set_num_threads(args.threads)
    torch.manual_seed(1234)
    with open(args.vocab, "rb") as f:
        tokens = pickle.load(f)
    drop = Namespace(enc=0.0, dec=0.0, enc_input=0.0, dec_input=0.0, other=0.0)
    model = End_ExpansionNet_v2(
        swin_img_size=384, swin_patch_size=4, swin_in_chans=3, swin_embed_dim=192, swin_depths=[2, 2, 18, 2],
        swin_num_heads=[6, 12, 24, 48], swin_window_size=12, swin_mlp_ratio=4., swin_qkv_bias=True,
        swin_qk_scale=None, swin_drop_rate=0.0, swin_attn_drop_rate=0.0, swin_drop_path_rate=0.0,
        swin_norm_layer=torch.nn.LayerNorm, swin_ape=False, swin_patch_norm=True, swin_use_checkpoint=False,
        final_swin_dim=1536, d_model=512, N_enc=3, N_dec=3, num_heads=8, ff=2048,
        num_exp_enc_list=[32, 64, 128, 256, 512], num_exp_dec=16, output_word2idx=tokens["word2idx_dict"],
        output_idx2word=tokens["idx2word_list"], max_seq_len=74, drop_args=drop, rank="cpu")
    model.eval()
    torch.save({"model_state_dict": model.state_dict()}, weights)
    image = Image.open(args.image).convert("RGB").resize((384, 384), Image.BILINEAR)
    x = torch.from_numpy(np.asarray(image, dtype=np.float32) / 255.0).permute(2, 0, 1)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    x = ((x - mean) / std).unsqueeze(0)
    search = dict(beam_size=5, beam_max_seq_len=21, sample_or_max="max", how_many_outputs=1,
                  sos_idx=tokens["word2idx_dict"][tokens["sos_str"]], eos_idx=tokens["word2idx_dict"][tokens["eos_str"]])
    encode, caption = [], []
    with torch.no_grad():
        for repeat in range(args.repeats + 1):  # the first is a warm-up
            t0 = time.perf_counter()
            model.forward_enc(x, [0])
            t1 = time.perf_counter()
            pred, _ = model(enc_x=x, enc_x_num_pads=[0], mode="beam_search", **search)
            t2 = time.perf_counter()
            if repeat > 0:
                encode.append((t1 - t0) * 1e3)
                caption.append((t2 - t1) * 1e3)
    best = [int(t) for t in pred[0][0]]
    return {"tokens": best, "text": " ".join(tokens["idx2word_list"][t] for t in best[1:] if t != search["eos_idx"]),
            "encode_ms": encode, "caption_ms": caption}


def our_side(args, weights):
    # One process, the image repeated: the first is a warm-up like theirs.
    folder = os.path.join(args.work, "ours")
    os.makedirs(folder, exist_ok=True)
    paths = []
    for k in range(args.repeats + 1):
        path = os.path.join(folder, "image%02d%s" % (k, os.path.splitext(args.image)[1]))
        shutil.copyfile(args.image, path)
        paths.append(path)
    done = subprocess.run([args.expnet, "caption", "--model", "official", "--checkpoint", weights, "--vocab", args.vocab,
                           "--beam", "5", "--max-len", "21", "--threads", str(args.threads), "--json"] + paths,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("expnet caption failed:\n" + done.stderr[-3000:])
    items = [json.loads(line) for line in done.stdout.splitlines()][1:]
    return {"tokens": items[0]["captions"][0]["tokens"], "text": items[0]["captions"][0]["text"],
            "encode_ms": [i["ms"]["encode"] for i in items], "decode_ms": [i["ms"]["decode"] for i in items]}


def main():
    parser = side_by_side_parser(__doc__)
    parser.add_argument("--vocab", required=True, help="the released demo_coco_tokens.pickle")
    parser.add_argument("--image", required=True)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    weights = os.path.join(args.work, "official_random_seed1234.pth")
    theirs = authors_side(args, weights)
    ours = our_side(args, weights)
    median = statistics.median
    their_encode, their_caption = median(theirs["encode_ms"]), median(theirs["caption_ms"])
    their_decode = their_caption - their_encode
    our_encode, our_decode = median(ours["encode_ms"]), median(ours["decode_ms"])
    report = {"theirs": theirs, "ours": ours, "identical_best_caption": theirs["tokens"] == ours["tokens"],
              "their_median_ms": {"encode": their_encode, "decode": their_decode, "caption": their_caption},
              "our_median_ms": {"encode": our_encode, "decode": our_decode, "caption": our_encode + our_decode},
              "decode_ratio": our_decode / their_decode,
              "caption_ratio": (our_encode + our_decode) / their_caption}
    print("theirs: %s" % theirs["text"])
    print("ours:   %s" % ours["text"])
    print("best caption identical (tokens): %s" % report["identical_best_caption"])
    print("medians of %d: theirs encode %.0f ms, decode %.0f ms, caption %.0f ms; ours encode %.0f ms, decode %.1f ms"
          % (args.repeats, their_encode, their_decode, their_caption, our_encode, our_decode))
    print("ratios: decode %.3fx (target <= 0.15x), encode + decode %.3fx (target <= 0.6x)"
          % (report["decode_ratio"], report["caption_ratio"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    ok = report["identical_best_caption"] and report["decode_ratio"] <= 0.15 and report["caption_ratio"] <= 0.6
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
