#!/usr/bin/python3
"""Training tokens/s of every head in a finished profile run, from the trainers' own progress
records (metrics.jsonl: event "train", every 100 batches, main phase and finetuning), and each
head's ratio to softmax's. A whole profile runs its heads one after another on the same machine,
so on an idle machine this is the cleanest speed comparison there is; it is only as fair as the
machine was quiet during the run (bench/bench_mixture_speed.sh alternates heads within one run).

    /usr/bin/python3 bench/profile_train_speed.py results/cpu
"""

import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402


def main() -> int:
    out = sys.argv[1] if len(sys.argv) > 1 else "results/cpu"
    rates: dict[str, list[float]] = {}
    for path in sorted(glob.glob(os.path.join(out, "*_s*", "metrics.jsonl"))):
        head = os.path.basename(os.path.dirname(path)).rsplit("_s", 1)[0]
        with open(path) as f:
            for line in f:
                e = json.loads(line)
                if e.get("event") == "train" and "tokens_per_s" in e:
                    rates.setdefault(head, []).append(e["tokens_per_s"])
    if "softmax" not in rates:
        print(f"profile_train_speed: no softmax training records under {out}", file=sys.stderr)
        return EXIT_BAD_INPUT
    base = statistics.median(rates["softmax"])
    print(f"Training tokens/s from `{out}/*/metrics.jsonl` (every 100 batches of both phases, all "
          "seeds; median), ratio to softmax's median:\n")
    print("| head | records | tokens/s (median) | ratio to softmax |")
    print("|---|---|---|---|")
    for head, xs in rates.items():
        m = statistics.median(xs)
        print(f"| {head} | {len(xs)} | {m:.0f} | {m / base:.2f}x |")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
