#!/usr/bin/env python3
"""Time to a validation CIDEr-D (issue 49's "time to validation CIDEr-D 2.0" on a GPU):
trains a recipe (a preset or a config file) in one precision with `expnet train`, reads
the run store as it grows, and stops the run (SIGINT: it ends `interrupted`, its last
checkpoint kept) once a validation reaches --target, or after --limit seconds.

Prints one JSON object: the precision and device, whether the target was reached, the
seconds from launch to the validation that reached it (`seconds_to_target`, data
generation and start-up included), the trainer's own clock at the step of that
validation (`trainer_wall_s`), and every validation's (stage, epoch, step, CIDEr-D).

usage: time_to_cider.py --expnet EXPNET --out DIR [--preset shapes-demo | --config F]
                        [--precision fp32|bf16] [--device cuda] [--target 2.0] [--limit 300]
Uses only Python's standard library (runs on the GPU machines' images as they are)."""
import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time


def validations(store):
    """(stage, epoch, step, CIDEr-D, trainer wall seconds at that step) of every validation so far."""
    if not os.path.exists(store):
        return []
    try:
        with sqlite3.connect("file:%s?mode=ro" % store, uri=True, timeout=1) as db:
            return db.execute(
                "SELECT v.stage, v.epoch, v.step, v.cider_d, (SELECT s.wall_s FROM steps s WHERE s.run = v.run AND "
                "s.step <= v.step ORDER BY s.step DESC LIMIT 1) FROM validation v ORDER BY v.step").fetchall()
    except sqlite3.Error:
        return []  # the trainer is creating or writing it: read again at the next poll


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--expnet", required=True)
    parser.add_argument("--out", required=True, help="a new folder for the config, the run and its log")
    recipe = parser.add_mutually_exclusive_group()
    recipe.add_argument("--preset", default="shapes-demo")
    recipe.add_argument("--config")
    parser.add_argument("--precision", choices=["fp32", "bf16", "auto"], default="fp32")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--target", type=float, default=2.0)
    parser.add_argument("--limit", type=float, default=300.0, help="seconds before the run is stopped anyway")
    args = parser.parse_args()
    if os.path.exists(args.out):
        sys.exit("%s exists: give a new folder (the run must start from scratch)" % args.out)
    os.makedirs(args.out)

    if args.config:
        with open(args.config) as f:
            config = json.load(f)
    else:
        printed = subprocess.run([args.expnet, "train", "--preset", args.preset, "--print-config"],
                                 stdout=subprocess.PIPE, check=True, text=True)
        config = json.loads(printed.stdout)
    config["precision"] = args.precision
    config_path = os.path.join(args.out, "config.json")
    with open(config_path, "w") as f:
        json.dump(config, f, indent=1)

    run = os.path.join(args.out, "run")
    store = os.path.join(run, "runs.sqlite")
    with open(os.path.join(args.out, "train.log"), "w") as log:
        start = time.monotonic()
        trainer = subprocess.Popen([args.expnet, "train", "--config", config_path, "--out", run, "--device", args.device,
                                    "--no-progress"], stdout=log, stderr=subprocess.STDOUT)
        reached = None
        while trainer.poll() is None and time.monotonic() - start < args.limit:
            time.sleep(1.0)
            reached = next((v for v in validations(store) if v[3] is not None and v[3] >= args.target), None)
            if reached:
                break
        elapsed = time.monotonic() - start
        if trainer.poll() is None:
            trainer.send_signal(signal.SIGINT)
            try:
                trainer.wait(timeout=60)
            except subprocess.TimeoutExpired:
                trainer.kill()
                trainer.wait()
    rows = validations(store)
    report = {"recipe": args.config or args.preset, "precision": args.precision, "device": args.device,
              "target": args.target, "reached": reached is not None,
              "seconds_to_target": round(elapsed, 1) if reached else None,
              "trainer_wall_s": round(reached[4], 1) if reached and reached[4] is not None else None,
              "seconds_run": round(elapsed, 1), "trainer_exit": trainer.returncode,
              "validations": [{"stage": r[0], "epoch": r[1], "step": r[2], "cider_d": r[3]} for r in rows]}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
