#!/usr/bin/python3
"""Training speed against the public peer: pytorch/examples' word_language_model (main.py) at its
own settings, one PTB epoch with validation, beside train_wordlm at the same settings, in one run.

The peer's code is not ours to commit: pass a checkout's word_language_model folder. Debian 12's
torch is 1.13: the peer's last commit that runs on it is 47ac714 (ac7e960, "Support torch>=2.6",
reloads the best model through torch.serialization.safe_globals, which 1.13 lacks; the epoch
still finishes and is timed, then the script exits 1: noted in the output). Both sides
get 2 threads (OMP_NUM_THREADS for the peer, --threads for ours), PTB from datasets/ptb (or
../shared/datasets/ptb) and the peer's defaults: a tied 2 x 200 LSTM (emsize 200), dropout 0.2,
plain SGD lr 20, clip 0.25, bptt 35, batch 20, validation with batch 10. Ours takes them as
dropouti = dropouth = dropout = 0.2 (the peer's three dropout sites: embedding output, between the
layers, LSTM output) with no embedding dropout, weight drop, AR/TAR or weight decay; its BPTT
length is drawn around 35 (AWD-LSTM's schedule: the same tokens per epoch, in windows of mean
34.1, with the lr scaled by the window), which the peer does not do.

Times compared: each side's own "epoch" clock (the peer's `end of epoch | time:`, ours the
metrics.jsonl `valid` record's seconds), i.e. training plus validation, without start-up, corpus
loading and the final test pass. Runs, in this order:
  ours (fused_lstm = true), peer (the system's default BLAS, as a user runs it),
  peer on the same OpenMP OpenBLAS as ours (LD_LIBRARY_PATH) and the same kernels (OPENBLAS_CORETYPE
  = the core our first run reports in its final.json: on a CPU newer than Debian's OpenBLAS, the
  library picks its generic Prescott kernels and our trainers restart with better ones,
  common/blas_core.h), ours (fused_lstm = false).
Beside them, the GEMM FLOP model of the epoch (bench/train_flop_model.py's counts) and the float32
GEMM rate of the decoder's shape measured in this run: the epoch's floor if every GEMM ran at it.

  bench/bench_vs_examples.py PEER/word_language_model [--build build] [--out FILE.md]

Exit status 2 on a bad argument (no main.py in the folder, no corpus, no trainer built).
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "pipeline"))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402
OMP_BLAS = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
THREADS = 2
PEER_NOTES: list[str] = []  # what went wrong on the peer's side after its timed epoch
# The peer's defaults (main.py's argparse), which ours is given too.
EMSIZE, NHID, LAYERS, LR, CLIP, BPTT, BATCH, EVAL_BATCH, DROPOUT = 200, 200, 2, 20, 0.25, 35, 20, \
    10, 0.2


def refuse(message: str) -> None:
    print(f"bench_vs_examples.py: {message}", file=sys.stderr)
    sys.exit(EXIT_BAD_INPUT)


def find_ptb() -> str:
    """PTB in the trainers' search order (bench/wordlm_reference.py's find_ptb)."""
    sys.path.insert(0, HERE)
    from wordlm_reference import find_ptb as reference_find_ptb
    try:
        return os.path.abspath(reference_find_ptb(None))
    except SystemExit:
        refuse("datasets/ptb/ptb.valid.txt: not found; expected PTB there (run make data)")
    return ""


def peer_data(ptb: str, tmp: str) -> str:
    """The peer reads <dir>/train.txt, valid.txt, test.txt: links to PTB's files."""
    d = os.path.join(tmp, "ptb")
    os.makedirs(d)
    for split in ("train", "valid", "test"):
        os.symlink(os.path.join(ptb, f"ptb.{split}.txt"), os.path.join(d, f"{split}.txt"))
    return d


def commit_of(folder: str) -> str:
    r = subprocess.run(["git", "-C", folder, "rev-parse", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "not a git checkout"


def same_blas_env(core: str) -> dict:
    """The environment of a Python process on our BLAS: the OpenMP OpenBLAS and our core."""
    return dict(os.environ, LD_LIBRARY_PATH=OMP_BLAS, OPENBLAS_CORETYPE=core)


def run_peer(peer: str, data: str, tmp: str, core: str | None) -> float:
    """One epoch of main.py; core None: the system's default BLAS as installed, else ours."""
    env = same_blas_env(core) if core else dict(os.environ)
    env["OMP_NUM_THREADS"] = str(THREADS)
    cmd = ["/usr/bin/python3", "main.py", "--data", data, "--emsize", str(EMSIZE), "--nhid",
           str(NHID), "--nlayers", str(LAYERS), "--lr", str(LR), "--clip", str(CLIP),
           "--epochs", "1", "--batch_size", str(BATCH), "--bptt", str(BPTT), "--dropout",
           str(DROPOUT), "--tied", "--save", os.path.join(tmp, "peer.pt")]
    r = subprocess.run(cmd, cwd=peer, env=env, capture_output=True, text=True)
    m = re.search(r"end of epoch\s+1 \| time:\s*([0-9.]+)s", r.stdout)
    if not m:
        refuse(f"{peer}/main.py: no epoch finished (exit {r.returncode}): "
               f"{(r.stderr or r.stdout)[-300:]}")
    if r.returncode != 0:  # after the epoch: its final test pass; the epoch's time stands
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        PEER_NOTES.append(f"main.py exited {r.returncode} after the epoch ({last})")
    return float(m.group(1))


def run_ours(build: str, tmp: str, fused: bool) -> tuple[float, str]:
    """One epoch of train_wordlm: (its epoch seconds, the OpenBLAS core it ran)."""
    out = os.path.join(tmp, f"ours_{int(fused)}")
    cmd = [os.path.join(build, "trainers", "train_wordlm"), "--config",
           os.path.join(ROOT, "trainers", "configs", "ptb_cpu.toml"), "--emsize", str(EMSIZE),
           "--nhid", str(NHID), "--nhidlast", "0", "--nlayers", str(LAYERS), "--dropouti",
           str(DROPOUT), "--dropouth", str(DROPOUT), "--dropout", str(DROPOUT), "--dropoute", "0",
           "--wdrop", "0", "--alpha", "0", "--beta", "0", "--wdecay", "0", "--lr", str(LR),
           "--clip", str(CLIP), "--bptt", str(BPTT), "--batch_size", str(BATCH),
           "--eval_batch_size", str(EVAL_BATCH), "--epochs", "1", "--finetune_epochs", "0",
           "--dump_test", "false", "--epoch_dump_rows", "0", "--threads", str(THREADS),
           "--fused_lstm", "true" if fused else "false", "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        refuse(f"train_wordlm failed (exit {r.returncode}): {r.stderr[-300:]}")
    with open(os.path.join(out, "final.json")) as f:
        core = json.load(f)["blas"]["core"]
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("event") == "valid":
                return float(rec["seconds"]), core
    refuse(f"{out}/metrics.jsonl: no 'valid' record")
    return 0.0, core


def gemm_rate(core: str) -> float:
    """GFLOP/s of float32 (700 x 200) @ (200 x 10000), the decoder's forward GEMM of one batch
    (batch 20 x bptt 35 rows), on our BLAS (same_blas_env) with 2 threads: best of 20 after
    warm-up."""
    code = ("import time, torch; torch.set_num_threads(%d); a = torch.randn(700, 200); "
            "b = torch.randn(200, 10000)\n"
            "for _ in range(5): a @ b\n"
            "best = 1e9\n"
            "for _ in range(20):\n t = time.perf_counter(); a @ b; best = min(best, "
            "time.perf_counter() - t)\n"
            "print(2 * 700 * 200 * 10000 / best / 1e9)") % THREADS
    r = subprocess.run(["/usr/bin/python3", "-c", code], env=same_blas_env(core),
                       capture_output=True, text=True)
    return float(r.stdout.strip())


def epoch_gflop(train_tokens: int, valid_tokens: int) -> float:
    sys.path.insert(0, HERE)
    from train_flop_model import forward_flops_per_token
    f = sum(forward_flops_per_token(EMSIZE, [NHID] * LAYERS, 10000, 0).values())
    return (3 * f * train_tokens + f * valid_tokens) / 1e9  # training: forward + 2 backward GEMMs


def tokens(path: str) -> int:
    with open(path) as f:
        return sum(len(line.split()) + 1 for line in f)  # + <eos> per line, as both read it


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Example:\n  bench/bench_vs_examples.py "
                                        "/tmp/examples/word_language_model --out "
                                        "results/bench/train_vs_examples.md")
    ap.add_argument("peer", help="a checkout's word_language_model folder (main.py, data.py)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", help="also write the markdown here")
    args = ap.parse_args(argv)
    if not os.path.exists(os.path.join(args.peer, "main.py")):
        refuse(f"{args.peer}: no main.py; expected pytorch/examples' word_language_model folder")
    if not os.access(os.path.join(args.build, "trainers", "train_wordlm"), os.X_OK):
        refuse(f"{args.build}/trainers/train_wordlm: not built (make build)")
    ptb = find_ptb()
    with tempfile.TemporaryDirectory() as tmp:
        data = peer_data(ptb, tmp)
        load0 = open("/proc/loadavg").read().split()[:3]
        t0 = time.time()
        times = {}
        times["ours, fused_lstm"], core = run_ours(args.build, tmp, True)
        times["peer, default BLAS"] = run_peer(args.peer, data, tmp, None)
        times["peer, OpenMP OpenBLAS"] = run_peer(args.peer, data, tmp, core)
        times["ours, at::lstm"], _ = run_ours(args.build, tmp, False)
        rate = gemm_rate(core)
        load1 = open("/proc/loadavg").read().split()[:3]
        wall = time.time() - t0
    gflop = epoch_gflop(tokens(os.path.join(ptb, "ptb.train.txt")),
                        tokens(os.path.join(ptb, "ptb.valid.txt")))
    peer = times["peer, default BLAS"]
    lines = [
        "# Training speed against pytorch/examples' word_language_model",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} by `bench/bench_vs_examples.py PEER` "
        f"(peer commit {commit_of(args.peer)}), {THREADS} threads on both sides, OpenBLAS core "
        f"{core} for ours, the peer on the OpenMP OpenBLAS and the GEMM rate, one PTB epoch "
        f"with validation at the peer's defaults (2 x {NHID} tied LSTM, dropout {DROPOUT}, SGD "
        f"lr {LR}, clip {CLIP}, bptt {BPTT}, batch {BATCH}); {wall / 60:.0f} min in all; load "
        f"average {' '.join(load0)} at start, {' '.join(load1)} at end.",
        "",
        "| run | epoch (s) | peer (default BLAS) / run | epoch at the GEMM rate below / run |",
        "|---|---|---|---|",
    ]
    floor = gflop / rate
    for name, t in times.items():
        lines.append(f"| {name} | {t:.1f} | {peer / t:.2f}x | {floor / t:.2f} |")
    lines += ["", f"The peer's side: {'; '.join(dict.fromkeys(PEER_NOTES))}."] if PEER_NOTES else []
    lines += [
        "",
        f"FLOP model (bench/train_flop_model.py's GEMM counts; training 3x forward): "
        f"{gflop:,.0f} GFLOP per epoch with validation. The float32 GEMM of the decoder's shape "
        f"(700 x 200 by 200 x 10000) ran at {rate:.0f} GFLOP/s on {THREADS} threads in this run, "
        f"so the epoch takes at least {floor:.0f} s if every GEMM ran at that rate and nothing "
        f"else took time; 2x the peer is {peer / 2:.0f} s.",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        tmp_out = args.out + ".tmp"
        with open(tmp_out, "w") as f:
            f.write(text)
        os.replace(tmp_out, args.out)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
