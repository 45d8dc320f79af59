#!/usr/bin/python3
"""Side by side with the COCO caption scorers the authors' code evaluates with (issue 49,
"Scorers"): their copy of pycocoevalcap (eval/ in a checkout of their public repository
ExpansionNet_v2: BLEU 1-4, ROUGE-L, CIDEr-D, and the Stanford PTBTokenizer when its jar is
there) against `expnet score --json` on the same 5,000 images of 5 references and one
candidate each, alternated, best of --rounds on each side.

The texts are drawn with a fixed seed from a Zipf vocabulary of 3,000 words, 8 to 16 words
a sentence, capitalised and ending in a full stop, so both tokenizers give the same words;
or, with --dataset, a Karpathy JSON's first 5,000 images with 5 references (e.g. `expnet
dataset make-shapes`), each image's candidate being the next image's first reference.
Their scorers get the text as their tokenizer would hand it over (lower case, the full stop
removed); when the checkout has eval/tokenizer/stanford-corenlp-3.4.1.jar (a full clone of
their repository does; Java is needed), its time is measured too and added to theirs.

Ours: the sum of the `ms` values `expnet score --json` prints (tokenize, Bleu, ROUGE_L,
CIDEr), as the issue defines it. The scores of both sides are compared (1e-9).

usage: authors_scorers_side_by_side.py --authors DIR --expnet EXPNET --work DIR
                                       [--images 5000] [--rounds 3] [--json REPORT]"""
import itertools
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

from peer_arguments import side_by_side_parser


def draw_texts(images, seed):
    rng = random.Random(seed)
    words = ["w%d" % k for k in range(3000)]
    cumulative = list(itertools.accumulate(1.0 / (k + 1) for k in range(3000)))
    common = ["a", "the", "of", "on", "in", "with", "and", "is", "man", "woman", "dog", "cat", "table", "street"]

    def sentence():
        n = rng.randint(8, 16)
        chosen = [rng.choice(common) if rng.random() < 0.35 else rng.choices(words, cum_weights=cumulative)[0] for _ in range(n)]
        return chosen[0].capitalize() + " " + " ".join(chosen[1:]) + "."

    references = {str(i): [sentence() for _ in range(5)] for i in range(images)}
    candidates = {str(i): sentence() for i in range(images)}
    return references, candidates


def dataset_texts(path, images):
    with open(path) as f:
        entries = [e for e in json.load(f)["images"] if len(e["sentences"]) >= 5][:images]
    references = {str(e.get("cocoid", k)): [s["raw"] for s in e["sentences"][:5]] for k, e in enumerate(entries)}
    keys = list(references)
    candidates = {key: references[keys[(k + 1) % len(keys)]][0] for k, key in enumerate(keys)}
    return references, candidates


def as_their_tokenizer_gives(text):
    return " ".join(text.lower().replace(".", " ").replace(",", " ").split())


def time_theirs(authors, references, candidates, tokenizer_jar):
    sys.path.insert(0, authors)
    from eval.bleu.bleu import Bleu
    from eval.cider.cider import Cider
    from eval.rouge.rouge import Rouge

    ms = {}
    if tokenizer_jar:
        from eval.tokenizer.ptbtokenizer import PTBTokenizer
        start = time.perf_counter()
        gts = PTBTokenizer().tokenize({k: [{"caption": c} for c in v] for k, v in references.items()})
        res = PTBTokenizer().tokenize({k: [{"caption": c}] for k, c in candidates.items()})
        ms["tokenize"] = (time.perf_counter() - start) * 1000
    else:
        gts = {k: [as_their_tokenizer_gives(c) for c in v] for k, v in references.items()}
        res = {k: [as_their_tokenizer_gives(c)] for k, c in candidates.items()}
    scores = {}
    for name, scorer in (("Bleu", Bleu(4)), ("ROUGE_L", Rouge()), ("CIDEr", Cider())):
        start = time.perf_counter()
        score, per_image = scorer.compute_score(gts, res)
        ms[name] = (time.perf_counter() - start) * 1000
        if name == "Bleu":
            for n in range(4):
                scores["Bleu_%d" % (n + 1)] = score[n]
        else:
            scores[name] = score
    return ms, scores


def time_ours(expnet, work):
    out = subprocess.run([expnet, "score", "--references", os.path.join(work, "references.json"), "--candidates",
                          os.path.join(work, "candidates.json"), "--json"], check=True, capture_output=True, text=True)
    report = json.loads(out.stdout)
    return report["ms"], report["corpus"]


def main():
    parser = side_by_side_parser(__doc__)
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=49)
    parser.add_argument("--dataset", help="a Karpathy JSON whose captions to score instead of drawn texts")
    parser.add_argument("--json", help="write the report here too")
    args = parser.parse_args()

    os.makedirs(args.work, exist_ok=True)
    references, candidates = dataset_texts(args.dataset, args.images) if args.dataset else draw_texts(args.images, args.seed)
    with open(os.path.join(args.work, "references.json"), "w") as f:
        json.dump(references, f)
    with open(os.path.join(args.work, "candidates.json"), "w") as f:
        json.dump(candidates, f)
    jar = os.path.join(args.authors, "eval", "tokenizer", "stanford-corenlp-3.4.1.jar")
    tokenizer_jar = os.path.isfile(jar) and os.path.getsize(jar) > 1000000 and shutil.which("java")

    theirs, ours = [], []
    for _ in range(args.rounds):  # alternated, so both sides see the same machine state
        ms, their_scores = time_theirs(args.authors, references, candidates, tokenizer_jar)
        theirs.append(ms)
        ms, our_scores = time_ours(args.expnet, args.work)
        ours.append(ms)
    best_theirs = min(sum(ms.values()) for ms in theirs)
    best_ours = min(sum(ms.values()) for ms in ours)
    worst_gap = max(abs(their_scores[k] - our_scores[k]) for k in their_scores)
    report = {
        "images": len(references),
        "texts": args.dataset or "drawn (seed %d)" % args.seed,
        "their_tokenizer_timed": bool(tokenizer_jar),
        "theirs_ms": theirs,
        "ours_ms": ours,
        "best_theirs_ms": best_theirs,
        "best_ours_ms": best_ours,
        "ratio": best_ours / best_theirs,
        "median_ratio": statistics.median(sum(o.values()) for o in ours) / statistics.median(sum(t.values()) for t in theirs),
        "scores_theirs": their_scores,
        "scores_ours": our_scores,
        "largest_score_difference": worst_gap,
    }
    print(json.dumps(report, indent=1))
    print("ours %.1f ms, theirs %.1f ms%s: %.4fx; scores differ by at most %.2g" %
          (best_ours, best_theirs, "" if tokenizer_jar else " (their tokenizer not timed: no jar)", report["ratio"],
           worst_gap))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
