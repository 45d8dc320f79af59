#!/usr/bin/python3
"""Side by side with the authors' code (training speed issue): the compute part of an XE
training step at `expnet bench train`'s configuration, in one run, alternated.

Their side: the authors' End_ExpansionNet_v2 (from a copy of their public repository
ExpansionNet_v2, passed by path; its code is not part of this project) at the training
issue's calibration configuration (image 96, Swin embed 32, depths 2/2/2, heads 1/2/4,
window 6, d_model 128, ff 256, 2+2 layers, expansion 8/16 and 4, max_seq_len 22),
dropout 0.1 everywhere, no drop path, every parameter trained; 32 (image, caption) pairs
per step drawn from the same shapes set, captions cut at 20 words; their
LabelSmoothingLoss (0.1; divided by the non-pad count here, because their division
casts to torch.cuda.FloatTensor), backward, gradient clipping at 1.0, their RAdam
(lr 1e-4), zero_grad. Images are decoded and resized before the timed steps (compute
only, like the compute part of ours: the step minus its data phase).

Our side: `expnet bench train --json` (same batch, dropout, clipping, RAdam, caption
cut), compute = median step - median data; once per precision asked for.

With --objective scst, an SCST step instead: their ExpansionNet_v2 (the same captioner
over backbone features, the frozen-backbone form of their SCST) on 16 images' features
(B x 36 x 128, as the calibration backbone gives), 5 captions sampled per image
(mode='sampling', at most 20 words), their ReinforceCiderReward over the shapes set's
training references (mean baseline), backward, clipping, RAdam; against `expnet bench
scst` (frozen backbone: compute = step - data - backbone forward).

With --device cuda, both sides run on the GPU: their model, batches and loss on it (the
features of an SCST step too; their CIDEr-D is computed in Python, as in their code), ours
as `expnet bench ... --device cuda`; each timing mark waits for the device first. Their
side is float32 (they train without mixed precision); `auto` is bf16 on a GPU with bf16.

Rounds alternate theirs and ours; each side's figure is its best round (median over the
timed steps of that round). Prints the ratios the issue sets: compute step <= 0.5x
theirs in the precision `auto` picks (XE and SCST), fp32 <= 0.7x (XE).

usage: authors_train_side_by_side.py --authors DIR --expnet EXPNET --work DIR
           [--objective xe|scst] [--device cpu|cuda] [--threads 2] [--steps 10] [--warmup 3] [--rounds 2]
           [--precisions auto,fp32] [--json REPORT]"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

from peer_arguments import side_by_side_parser


def shapes_set(args):
    folder = os.path.join(args.work, "shapes")
    if not os.path.exists(os.path.join(folder, "dataset_coco.json")):
        subprocess.run([args.expnet, "dataset", "make-shapes", "--out", folder, "--images", "300", "--seed", "1"],
                       check=True, stdout=subprocess.DEVNULL)
    return folder


def their_setup(args, folder, torch):
    """Their threads and seed; the shapes set's training images and a vocabulary of all their words."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    with open(os.path.join(folder, "dataset_coco.json")) as f:
        dataset = json.load(f)
    train = [image for image in dataset["images"] if image["split"] in ("train", "restval")]
    words = sorted({w for image in train for s in image["sentences"] for w in s["tokens"]})
    idx2word = ["PAD", "SOS", "EOS", "UNK"] + words
    return train, idx2word, {w: i for i, w in enumerate(idx2word)}


def clock(torch, device):
    """time.perf_counter once the device has finished what was queued (CUDA runs asynchronously)."""
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def their_update(torch, loss, params, optimizer, device):
    """Backward, clipping at 1.0 and their RAdam's step, as ours: the times after backward and after the update."""
    loss.backward()
    t3 = clock(torch, device)
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    optimizer.step()
    optimizer.zero_grad()
    return t3, clock(torch, device)


def keep(phases, names, marks, cpu_start):
    """A timed step: the whole, its CPU time, and each named phase between consecutive marks (ms)."""
    phases["step"].append((marks[-1] - marks[0]) * 1e3)
    phases["cpu_ms_per_step"].append((time.process_time() - cpu_start) * 1e3)
    for name, a, b in zip(names, marks, marks[1:]):
        phases[name].append((b - a) * 1e3)


def their_round(args, folder):
    sys.path.insert(0, args.authors)
    import numpy as np
    import torch
    from argparse import Namespace
    from PIL import Image
    from models.End_ExpansionNet_v2 import End_ExpansionNet_v2
    from losses.loss import LabelSmoothingLoss
    from optims.radam import RAdam

    train, idx2word, word2idx = their_setup(args, folder, torch)
    pad, sos, eos = 0, 1, 2
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    pixels = {}
    for image in train:
        path = os.path.join(folder, image["filepath"], image["filename"])
        rgb = Image.open(path).convert("RGB").resize((96, 96), Image.BILINEAR)
        x = torch.from_numpy(np.asarray(rgb, dtype=np.float32) / 255.0).permute(2, 0, 1)
        pixels[image["cocoid"]] = (x - mean) / std
    pairs = [(image["cocoid"], s["tokens"][:20]) for image in train for s in image["sentences"]]
    drop = Namespace(enc=0.1, dec=0.1, enc_input=0.1, dec_input=0.1, other=0.1)
    model = End_ExpansionNet_v2(
        swin_img_size=96, swin_patch_size=4, swin_in_chans=3, swin_embed_dim=32, swin_depths=[2, 2, 2],
        swin_num_heads=[1, 2, 4], swin_window_size=6, swin_mlp_ratio=4., swin_qkv_bias=True, swin_qk_scale=None,
        swin_drop_rate=0.0, swin_attn_drop_rate=0.0, swin_drop_path_rate=0.0, swin_norm_layer=torch.nn.LayerNorm,
        swin_ape=False, swin_patch_norm=True, swin_use_checkpoint=False, final_swin_dim=128, d_model=128, N_enc=2,
        N_dec=2, num_heads=4, ff=256, num_exp_enc_list=[8, 16], num_exp_dec=4, output_word2idx=word2idx,
        output_idx2word=idx2word, max_seq_len=22, drop_args=drop, rank=args.device)
    model.to(args.device)
    model.train()
    loss_function = LabelSmoothingLoss(smoothing_coeff=0.1, rank=args.device)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = RAdam(params, lr=1e-4)
    rng = random.Random(1)
    phases = {"step": [], "forward": [], "loss": [], "backward": [], "optimizer": [], "cpu_ms_per_step": []}
    for step in range(args.warmup + args.steps):
        chosen = [pairs[rng.randrange(len(pairs))] for _ in range(32)]
        x = torch.stack([pixels[cocoid] for cocoid, _ in chosen])
        length = max(len(tokens) for _, tokens in chosen) + 2
        y = torch.full((32, length), pad, dtype=torch.long)
        for row, (_, tokens) in enumerate(chosen):
            ids = [sos] + [word2idx.get(w, 3) for w in tokens] + [eos]
            y[row, :len(ids)] = torch.tensor(ids)
        pads = [int((row == pad).sum()) for row in y[:, :-1]]
        x, y = x.to(args.device), y.to(args.device)
        c0 = time.process_time()
        t0 = clock(torch, args.device)
        pred = model(enc_x=x, dec_x=y[:, :-1], enc_x_num_pads=[0] * 32, dec_x_num_pads=pads, apply_log_softmax=False)
        t1 = clock(torch, args.device)
        target = y[:, 1:]
        loss = loss_function(pred, target, pad, divide_by_non_zeros=False) / (target != pad).sum().float()
        t2 = clock(torch, args.device)
        t3, t4 = their_update(torch, loss, params, optimizer, args.device)
        if step >= args.warmup:
            keep(phases, ["forward", "loss", "backward", "optimizer"], [t0, t1, t2, t3, t4], c0)
    return {key: statistics.median(values) for key, values in phases.items()}


def their_scst_round(args, folder):
    sys.path.insert(0, args.authors)
    import torch
    from argparse import Namespace
    from models.ExpansionNet_v2 import ExpansionNet_v2
    from losses.reward import ReinforceCiderReward
    from optims.radam import RAdam
    from utils import language_utils

    train, idx2word, word2idx = their_setup(args, folder, torch)
    references = [[s["raw"] for s in image["sentences"]] for image in train]
    reward = ReinforceCiderReward(references, "EOS", 5, args.device)
    drop = Namespace(enc=0.1, dec=0.1, enc_input=0.1, dec_input=0.1, other=0.1)
    model = ExpansionNet_v2(d_model=128, N_enc=2, N_dec=2, ff=256, num_heads=4, num_exp_enc_list=[8, 16], num_exp_dec=4,
                            output_word2idx=word2idx, output_idx2word=idx2word, max_seq_len=22, drop_args=drop,
                            img_feature_dim=128, rank=args.device)
    model.to(args.device)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = RAdam(params, lr=1e-5)
    rng = random.Random(1)
    phases = {"step": [], "sample": [], "reward": [], "backward": [], "optimizer": [], "cpu_ms_per_step": [],
              "mean_sampled_words": []}
    for step in range(args.warmup + args.steps):
        chosen = [rng.randrange(len(train)) for _ in range(16)]
        features = torch.randn(16, 36, 128).to(args.device)
        c0 = time.process_time()
        t0 = clock(torch, args.device)
        pred_idx, logprobs = model(enc_x=features, enc_x_num_pads=[0] * 16, mode="sampling", sample_max_seq_len=20,
                                   how_many_outputs=5, sos_idx=1, eos_idx=2)
        captions = [language_utils.convert_allsentences_idx2word(one, idx2word) for one in pred_idx]
        t1 = clock(torch, args.device)
        loss, _, _ = reward.compute_reward(all_images_pred_caption=captions, all_images_logprob=logprobs,
                                           all_images_idx=chosen)
        t2 = clock(torch, args.device)
        t3, t4 = their_update(torch, loss, params, optimizer, args.device)
        if step >= args.warmup:
            keep(phases, ["sample", "reward", "backward", "optimizer"], [t0, t1, t2, t3, t4], c0)
            phases["mean_sampled_words"].append(statistics.mean(len(c) - 1 for one in captions for c in one))
    return {key: statistics.median(values) for key, values in phases.items()}


def their_round_in_child(args, folder):
    # A fresh interpreter per round, as ours is a fresh process.
    done = subprocess.run([sys.executable, __file__, "--their-round", "--authors", args.authors, "--expnet", args.expnet,
                           "--work", args.work, "--threads", str(args.threads), "--steps", str(args.steps),
                           "--warmup", str(args.warmup), "--objective", args.objective, "--device", args.device], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("the authors' side failed:\n" + done.stderr[-3000:])
    return json.loads(done.stdout.splitlines()[-1])


def our_round(args, folder, precision):
    done = subprocess.run([args.expnet, "bench", "train" if args.objective == "xe" else "scst", "--threads", str(args.threads),
                           "--steps", str(args.steps), "--warmup", str(args.warmup), "--data", folder, "--precision",
                           precision, "--device", args.device, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("expnet bench failed:\n" + done.stderr[-3000:])
    report = json.loads(done.stdout.splitlines()[-1])
    ms = report["median_ms"]
    if args.objective == "scst":
        return {"precision": report["precision"], "step": ms["step"] - ms["data"] - ms["backbone_fwd"],
                "sample": ms["sample"], "reward": ms["reward"] + ms["loss"], "backward": ms["backward"],
                "optimizer": ms["optimizer"], "cpu_ms_per_step": report["cpu_ms_per_step"],
                "mean_sampled_words": report["mean_sampled_words"]}
    return {"precision": report["precision"], "step": ms["step"] - ms["data"],
            "forward": ms["backbone_fwd"] + ms["encdec_fwd"], "loss": ms["loss"], "backward": ms["backward"],
            "optimizer": ms["optimizer"], "cpu_ms_per_step": report["cpu_ms_per_step"]}


def main():
    parser = side_by_side_parser(__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--precisions", default="auto,fp32")
    parser.add_argument("--json")
    parser.add_argument("--objective", choices=["xe", "scst"], default="xe")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--their-round", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    folder = shapes_set(args)
    if args.their_round:
        print(json.dumps(their_round(args, folder) if args.objective == "xe" else their_scst_round(args, folder)))
        return
    precisions = args.precisions.split(",")
    theirs, ours = [], {p: [] for p in precisions}
    for round_index in range(args.rounds):
        theirs.append(their_round_in_child(args, folder))
        print("round %d theirs: %s" % (round_index + 1, json.dumps({k: round(v, 1) for k, v in theirs[-1].items()})))
        for precision in precisions:
            ours[precision].append(our_round(args, folder, precision))
            print("round %d ours (%s): %s" % (round_index + 1, precision, json.dumps(ours[precision][-1])))
    best_theirs = min(theirs, key=lambda r: r["step"])
    report = {"theirs": theirs, "ours": ours, "their_best": best_theirs, "ratios": {}}
    def phases(r):
        return ", ".join("%s %.1f" % (k, v) for k, v in r.items() if k not in ("step", "precision"))
    print("theirs, best round: compute step %.0f ms (%s)" % (best_theirs["step"], phases(best_theirs)))
    for precision in precisions:
        best = min(ours[precision], key=lambda r: r["step"])
        ratio = best["step"] / best_theirs["step"]
        report["ratios"][precision] = ratio
        print("ours %s (ran %s), best round: compute step %.0f ms (%s): %.3fx theirs"
              % (precision, best["precision"], best["step"], phases(best), ratio))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
