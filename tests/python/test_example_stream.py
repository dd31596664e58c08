#!/usr/bin/python3
"""python/examples/lstm_stream.py, the worked example of docs/python.md: a PyTorch LSTM LM
trained for 200 steps, its log-probs over 20000 tokens analysed by the streaming call in two
passes, give the rank, verdict and certificate of the dumped array analysed the ordinary way,
and sigma_max to 1e-12 relative (the same float32 rows, accumulated in the same blocks: any
difference would be the order of a float64 sum, below 1e-12 at this size).

  test_example_stream.py BUILD_DIR"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "fixtures"))
from checks import ROOT, check, finish  # noqa: E402

build = os.path.abspath(sys.argv[1])
env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "python", "examples", "lstm_stream.py"),
                    "--steps", "200", "--json"], capture_output=True, text=True, env=env)
check(r.returncode == 0, f"the example runs ({r.returncode}: {r.stderr[-500:]})")
if r.returncode == 0:
    out = json.loads(r.stdout)
    s, d = out["streamed"], out["stored"]
    check(all(s[k] == d[k] for k in ("rank", "verdict", "certified", "bound")),
          f"streamed = stored: rank {s['rank']} / {d['rank']}, {s['verdict']}, certified "
          f"{s['certified']}")
    check(abs(s["sigma_max"] - d["sigma_max"]) <= 1e-12 * d["sigma_max"],
          f"sigma_max {s['sigma_max']!r} vs {d['sigma_max']!r} (1e-12 relative)")
    check(s["passes"] == 2 and s["rank"] <= s["bound"],
          f"two passes over the model's outputs, rank within softmax's bound ({s['passes']})")
    check(out["stored_bytes"] == 20000 * 2000 * 4, "the stored comparison held 160 MB; the stream "
          "held one block")
sys.exit(finish())
