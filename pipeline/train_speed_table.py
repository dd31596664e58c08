"""The training speed of a word-LM profile's runs, read from each run's metrics.jsonl.

A run's speed in a phase is the median tokens/s of the trainer's progress lines in that phase
(event "train", every `log_interval` batches; the median keeps one slow interval, e.g. a
checkpoint write or a neighbour's dump, out of it). A head's speed beside softmax's is the ratio
of the two runs of the same seed (same config, same build, same machine), one ratio per seed and
their median. The runs of a profile run `jobs` at a time, so the run beside each one differs
between seeds: the spread of the per-seed ratios shows how much that moves the figure.
"""

import json
import os
import statistics


def phase_speeds(run_dir: str) -> dict[str, float]:
    """{phase: median tokens/s} over the run's progress lines; {} without metrics.jsonl."""
    speeds: dict[str, list[float]] = {}
    try:
        with open(os.path.join(run_dir, "metrics.jsonl"), encoding="utf-8") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except json.JSONDecodeError:  # a line cut by an interrupted write
                    continue
                if e.get("event") == "train" and "tokens_per_s" in e:
                    speeds.setdefault(e.get("phase", "main"), []).append(float(e["tokens_per_s"]))
    except OSError:
        return {}
    return {phase: statistics.median(v) for phase, v in speeds.items()}


def _cell(value: float | None, fmt: str = "{:.0f}") -> str:
    return "-" if value is None else fmt.format(value)


def speed_section(heads: list[str], by_head: dict) -> list[str]:
    """The '## Training speed' section: one row per head, [] when no run has progress lines or
    the profile has no softmax runs to compare with."""
    speeds = {r.dir: phase_speeds(r.dir) for rs in by_head.values() for r in rs}
    base = {r.seed: speeds[r.dir] for r in by_head.get("softmax", [])}
    if not base or not any(speeds.values()):
        return []
    out = ["## Training speed\n",
           "Median tokens/s of each run's progress lines (metrics.jsonl), mean over seeds; the "
           "ratio to softmax is paired by seed (each seed's ratio, then their median). The runs "
           "ran side by side, so each ratio also carries the load of the run beside it.\n",
           "| head | seeds | main tokens/s | finetune tokens/s | main / softmax (median) "
           "| main / softmax per seed |",
           "|---|---|---|---|---|---|"]
    for h in heads:
        runs = by_head[h]
        main = [speeds[r.dir]["main"] for r in runs if "main" in speeds[r.dir]]
        ft = [speeds[r.dir]["finetune"] for r in runs if "finetune" in speeds[r.dir]]
        ratios = [(r.seed, speeds[r.dir]["main"] / base[r.seed]["main"]) for r in runs
                  if "main" in speeds[r.dir] and "main" in base.get(r.seed, {})]
        median = statistics.median(x for _, x in ratios) if ratios else None
        out.append(f"| {h} | {len(runs)} | {_cell(statistics.mean(main) if main else None)} | "
                   f"{_cell(statistics.mean(ft) if ft else None)} | "
                   f"{_cell(median, '**{:.2f}x**')} | "
                   + (", ".join(f"{s}: {x:.2f}x" for s, x in ratios) or "-") + " |")
    out.append("")
    return out
