#!/usr/bin/python3
"""The demo model checked as a user would (issue: "The demo model").

1. `expnet caption --model demo --beam 3` on 60 images of a make-shapes seed
   never used in training, scored by `expnet score` against their references
   (CIDEr-D document frequencies from those 60 images): CIDEr-D >= 1.8.
2. Plain scenes drawn by Pillow (foreign_scenes.py): every object's colour and
   shape word named in >= 80% of cases, and no colour or shape word that is
   not in the scene.

The issue's targets are the defaults (test_demo_model passes them as they
are); --min-cider, --min-named and --max-hallucinated move the bar that makes
the exit status non-zero, while the report still prints the issue's targets
and whether they are met. --foreign-seed draws other Pillow scenes than
the issue's (seed 2026), for checking a candidate model on scenes it was not
chosen on.

usage: check_demo_model.py EXPNET WORKDIR [--json REPORT] [--min-cider X] [--min-named Y] [--max-hallucinated N]
                           [--foreign-seed S]"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
UNSEEN_SEED = 90210  # the demo recipe trains on shapes seed 1
COLOURS = ["red", "green", "blue", "yellow", "orange", "purple"]
SHAPES = ["circle", "square", "triangle", "star", "diamond"]


def run(args):
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (done.returncode, " ".join(args), done.stderr[-3000:]))
    return done.stdout


def caption(expnet, folder):
    out = run([expnet, "caption", "--model", "demo", "--beam", "3", "--threads", "2", "--json", folder])
    result = {}
    for line in out.splitlines():
        item = json.loads(line)
        result[os.path.basename(item["image"])] = item["captions"][0]["text"]
    return result


def words_of(text):
    words = set()
    for w in text.lower().replace(",", " ").replace(".", " ").split():
        words.add(w[:-1] if w.endswith("s") and w[:-1] in SHAPES else w)
    return words


def unseen_shapes(expnet, work):
    folder = os.path.join(work, "unseen")
    run([expnet, "dataset", "make-shapes", "--out", folder, "--images", "60", "--seed", str(UNSEEN_SEED),
         "--val-fraction", "0", "--test-fraction", "0", "--threads", "2"])
    with open(os.path.join(folder, "dataset_coco.json")) as f:
        images = json.load(f)["images"]
    captions = caption(expnet, os.path.join(folder, "images"))
    refs = {im["filename"]: [s["raw"] for s in im["sentences"]] for im in images}
    cands = {name: captions[name] for name in refs}
    for name, data in (("refs.json", refs), ("cands.json", cands)):
        with open(os.path.join(work, name), "w") as f:
            json.dump(data, f)
    scores = json.loads(run([expnet, "score", "--threads", "1", "--json", "--references", os.path.join(work, "refs.json"),
                             "--candidates", os.path.join(work, "cands.json")]))
    return scores["corpus"]["CIDEr"], cands


def foreign(expnet, work, seed):
    folder = os.path.join(work, "foreign")
    run(["/usr/bin/python3", os.path.join(HERE, "foreign_scenes.py"), folder, "--count", "40", "--seed", str(seed)])
    with open(os.path.join(folder, "truth.json")) as f:
        truth = json.load(f)
    captions = caption(expnet, folder)
    objects = named = 0
    hallucinated = []
    for name, scene in sorted(truth.items()):
        words = words_of(captions[name])
        for o in scene:
            objects += 1
            named += o["color"] in words and o["shape"] in words
        present = {o["color"] for o in scene} | {o["shape"] for o in scene}
        extra = sorted((words & (set(COLOURS) | set(SHAPES))) - present)
        if extra:
            hallucinated.append({"image": name, "caption": captions[name], "not_there": extra, "scene": scene})
    return named / objects, hallucinated, {n: captions[n] for n in sorted(truth)}


TARGET_CIDER, TARGET_NAMED = 1.8, 0.8
FOREIGN_SEED = 2026  # foreign_scenes.py's default: the scenes the check uses


def option(name, default):
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    min_cider, min_named = option("--min-cider", TARGET_CIDER), option("--min-named", TARGET_NAMED)
    max_hallucinated = int(option("--max-hallucinated", 0))
    expnet, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    cider, unseen_captions = unseen_shapes(expnet, work)
    foreign_seed = int(option("--foreign-seed", FOREIGN_SEED))
    named_rate, hallucinated, foreign_captions = foreign(expnet, work, foreign_seed)
    report = {"unseen_cider_d": cider, "foreign_seed": foreign_seed, "foreign_named_rate": named_rate, "foreign_hallucinations": hallucinated,
              "unseen_captions": unseen_captions, "foreign_captions": foreign_captions}
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(report, f, indent=1)
    met = lambda ok: "met" if ok else "NOT met"
    print("unseen make-shapes seed %d, 60 images, beam 3: CIDEr-D %.3f (issue target >= %.1f: %s; this check's floor %.2f)"
          % (UNSEEN_SEED, cider, TARGET_CIDER, met(cider >= TARGET_CIDER), min_cider))
    print("foreign scenes (Pillow, seed %d): colour and shape named for %.1f%% of objects (issue target >= %d%%: %s; this check's floor %d%%), "
          "%d of %d captions name something not there (issue target 0: %s; this check's ceiling %d)"
          % (foreign_seed, 100 * named_rate, 100 * TARGET_NAMED, met(named_rate >= TARGET_NAMED), 100 * min_named, len(hallucinated),
             len(foreign_captions), met(not hallucinated), max_hallucinated))
    for h in hallucinated:
        print("  %s: '%s' names %s" % (h["image"], h["caption"], ", ".join(h["not_there"])))
    ok = cider >= min_cider and named_rate >= min_named and len(hallucinated) <= max_hallucinated
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
