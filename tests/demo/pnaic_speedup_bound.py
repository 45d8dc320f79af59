# Upper bound on PNAIC's decode speed-up over AIC greedy from step counts alone:
# a K-group model writing each image's AIC greedy caption (L words) needs at
# least ceil(L / K) + 1 steps (the longest group, then its EOS), and a step of
# K rows costs at least a step of one row, so speedup <= AIC steps / those steps.
import json, math, sys
d = json.load(open(sys.argv[1]))
imgs = d["per_image"]
aic = [c["captions"]["aic-greedy"] for c in imgs]
steps_aic = sum(a["steps"] for a in aic) / len(aic)
lengths = [len(a["text"].split()) for a in aic]
print(f"images {len(imgs)}, AIC greedy steps/image {steps_aic:.3f}, words/caption {sum(lengths)/len(lengths):.2f}")
for m in d["modes"]:
    if not m["name"].startswith("pnaic-k"): continue
    K = m["groups"]
    ideal = sum(math.ceil(L / K) + 1 for L in lengths) / len(lengths)
    print(f"{m['name']}: steps/image {m['steps_mean']:.3f} (ideal split of AIC's captions {ideal:.3f}); "
          f"speed-up bound from steps: shipped {steps_aic / m['steps_mean']:.2f}x, ideal {steps_aic / ideal:.2f}x; "
          f"measured {m['speedup']:.2f}x")
