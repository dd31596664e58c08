#!/usr/bin/python3
"""Rank analysis at current vocabulary sizes (the sketch, analysis/sketch.h), ratios measured in
one run, printed as Markdown on stdout (progress on stderr):

  gpt2   GPT-2's shape: M = 50257, d = 768 with a bias (bound 770), T = 4000 and 20000; softmax
         log-probabilities, the logits they came from, sigsoftmax log-probabilities
         (synthetic_logprobs). T = 4000: the sketch against auto (the row Gram), the exact path
         (sgesdd) and numpy.linalg.svd in float32; T = 20000: against the row Gram (rank-only).
         --estimate-d on the logits.
  wt2    WikiText-2's test size: T = 245570, M = 33278, d = 400 with a bias (32.7 GB of float32,
         more than RAM; deleted afterwards): the verdict alone (--verdict-only: the verdict
         start), the count (sparse start) and the Gaussian start (--sketch-start-nonzeros 0),
         beside the time to read the file once; the
         rank-only Gram run is results/bench/rank_wt2_rank_only.md (2258 s; not rerun: 38
         minutes).
  tail   A count with a long tail just below tol: T = 30000, M = 6000 float32 .npy
         (bench/make_spectrum_npy.py: 1200 values from sigma_1 down to 3 tol, 3000 over
         [0.2, 0.9] tol; rank 1200): the sketch with and without power steps
         (--sketch-power-steps 0), the Gram path and auto, beside the time to read the file once.
  wt2count
         A count of rank 1000 at WikiText-2's test size: T = 245570, M = 33278 float32 .npy
         (32.7 GB, bench/make_spectrum_npy.py: 1000 values from sigma_1 down to 3 tol, 2000 over
         [0.2, 0.9] tol; deleted afterwards), the sketch stopped at SB_BENCH_TIMEOUT seconds
         (default 1800, the 30-minute target), beside the time to read the file once.
  trained:FILE[:RANK_JSON]
         A trained head's dump (e.g. a wt2-proxy run's logprobs.h5, kept by a hard link before the
         pipeline removes it): the sketch, beside the time to read the file once and, given the
         pipeline's rank.json of the same file, that run's Gram path (its own timings and peak
         RSS, not re-run). The sketch stops at SB_BENCH_TIMEOUT seconds (default 1800, the
         30-minute target): a run past it is a row saying so.
  llama  Llama 3's vocabulary: M = 128256, T = 100000, d = 512, no bias (51.3 GB float32 .npy
         from bench/make_lowrank_npy.py, deleted afterwards): the sketch under --budget-gb 8.

  bench/bench_rank_sketch.py BUILD_DIR WORK_DIR gpt2|wt2|llama...

Each command runs alone; wall time and peak RSS come from wait4 on its process."""
import json
import os
import subprocess
import sys
import threading
import time

from sketch_model import describe, sketch_flops

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

build, work, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
rank_analysis = os.path.join(build, "analysis", "rank_analysis")
synthetic = os.path.join(build, "trainers", "synthetic_logprobs")
here = os.path.dirname(os.path.abspath(__file__))
os.makedirs(work, exist_ok=True)


def log(text):
    print("bench_rank_sketch: " + text, file=sys.stderr, flush=True)


def measure(cmd, timeout=None, passes=None):
    """(wall seconds, peak RSS MiB, last stdout line) of one command run alone; with a timeout
    in seconds, the command is killed there and the line is None. With a list `passes`, the
    command's progress lines pass through and each finished pass's line is appended to it (what
    a stopped sketch had reached)."""
    log(" ".join(cmd))
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.PIPE if passes is not None else None)
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()))
    reader.start()
    if passes is not None:
        threading.Thread(target=follow_passes, args=(proc.stderr, passes), daemon=True).start()
    while True:  # wait4 (not communicate, which reaps the process first) for its peak RSS
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if timeout is not None and time.perf_counter() - start > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            reader.join()
            return time.perf_counter() - start, float("nan"), None
        time.sleep(0.05)
    reader.join()
    out = chunks[0] if chunks else ""
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        refuse(f"bench_rank_sketch: {' '.join(cmd)} exited {proc.returncode}")
    lines = out.strip().splitlines()
    return wall, usage.ru_maxrss / 1024, lines[-1] if lines else ""


def follow_passes(stream, passes):
    """Echoes a rank_analysis's stderr and keeps each finished sketch pass's line ("sketch: pass
    3 (k = 248) in 0s: rank 195, window [195, 1000], ...")."""
    for line in stream:
        sys.stderr.write(line)
        if ": sketch: pass " in line and ") in " in line:
            passes.append(line.split(": sketch: ", 1)[1].strip())


def make_input(path, cmd):
    """Write an input file by cmd unless it is there from an earlier run."""
    if not os.path.exists(path):
        wall, _, _ = measure(cmd)
        log(f"wrote {path} in {wall:.0f} s")


def synth(path, head, t, m, d, logits=False):
    make_input(path, [synthetic, "--head", head, "--T", str(t), "--M", str(m), "--d", str(d),
                      "--seed", "0", "--out", path] + (["--logits"] if logits else []))


def rank_analysis_core():
    """The OpenBLAS kernel core rank_analysis runs (`rank_analysis --blas`: it restarts on the
    CPU's own core where Debian's OpenBLAS picks a generic one), so that the dgemm rate of the
    FLOP model is measured on the kernels the products run on."""
    out = subprocess.run([rank_analysis, "--blas"], check=True, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    return out.rsplit("core ", 1)[-1].split(",")[0].strip()


def gemm_gflops(dtype):
    code = ("import numpy as np, time\n"
            f"a = np.random.rand(4000, 4096).astype(np.{dtype}); "
            f"b = np.random.rand(4096, 4000).astype(np.{dtype})\n"
            "a @ b\nt = time.perf_counter(); a @ b; t = time.perf_counter() - t\n"
            "print(2 * 4000 * 4096 * 4000 / t / 1e9)")
    env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count()),
               OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", rank_analysis_core()),
               LD_PRELOAD="/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3")
    return float(subprocess.run(["/usr/bin/python3", "-c", code], env=env, check=True,
                                stdout=subprocess.PIPE, text=True).stdout)


rows = []  # (shape, input, method, wall, rss, result json)


def analyse(shape, name, path, method_args):
    wall, rss, line = measure([rank_analysis, "--quiet", "--json"] + method_args + [path])
    j = json.loads(line)
    # no --method: auto, shown with the path it took (the row Gram at GPT-2's T = 4000)
    rows.append((shape, name, " ".join(method_args) or f"(auto: {j['method']})", wall, rss, j))
    return rows[-1]


def table(shape, *references):
    """The shape's runs; each reference (title, f(name, args, wall)) adds a column."""
    print("| input | options | wall s | peak RSS MiB | rank (NR) | bound | verdict | certificate "
          "| k, passes | " + " | ".join(r[0] for r in references) + " |")
    print("|---|---|---|---|---|---|---|---|---|" + "---|" * max(len(references), 1))
    for s, name, args, wall, rss, j in rows:
        if s != shape:
            continue
        cert = ("certified" if j.get("certified") else
                f"{j.get('rank_min')}..{j.get('rank_max')}" if j.get("certified") is False else "-")
        settled = j.get("certified") is False and j.get("bound") is not None and (
            j["rank_max"] <= j["bound"] or j["rank_min"] > j["bound"])
        if settled:  # a window on one side of the bound: the verdict certified, not the count
            cert = f"verdict certified, count in {cert}"
        if j.get("sketch_k") and (j.get("certified") or settled):
            cert += f" (p <= {j['failure_probability']:.1e})"
        starts = j.get("sketch_starts", 1 if j.get("sketch_start_nonzeros") else 0)
        start = ("range start, " if j.get("sketch_range_start") else
                 f"{starts} sparse start(s), " if starts else "")
        kp = (f"{j['sketch_k']}, {j['sketch_passes']} ({start}{j.get('sketch_check_passes', 0)} "
              f"check, {j.get('sketch_power_passes', 0)} power)" if j.get("sketch_k") else "-")
        cells = " | ".join(r[1](name, args, wall) for r in references)
        print(f"| {name} | `{args}` | {wall:.1f} | {rss:.0f} | {j['rank']} | {j['bound']} | "
              f"{j['verdict']} | {cert} | {kp} | {cells} |")
    print()


def flop_lines(shape, gflops):
    """The FLOP model of each sketch run at the measured dgemm rate (bench/sketch_model.py)."""
    for s, name, args, wall, _, j in rows:
        if s == shape and j.get("sketch_k"):
            flops, kinds = sketch_flops(j)
            model_s = flops / gflops / 1e9
            print(f"- FLOP model, {name} `{args}`: {describe(kinds)}: "
                  f"<= {flops / 1e12:.2f} TFLOP at the measured dgemm rate {gflops:.0f} GFLOP/s "
                  f"= {model_s:.1f} s; measured {j['seconds_accumulate']:.1f} s in the products "
                  f"({j['seconds_accumulate'] / model_s:.2f}x the model), "
                  f"{j['seconds_read']:.1f} s waiting for reads, {j['seconds']:.1f} s in all")
    print()


def read_once(path):
    """Seconds to read the file once, `cat FILE > /dev/null`, in this run."""
    start = time.perf_counter()
    subprocess.run(["sh", "-c", 'cat "$1" > /dev/null', "sh", path], check=True)
    return time.perf_counter() - start


def gpt2(shape):
    m, d = 50257, 768
    numpy_default = None
    for t in (4000, 20000):
        run = f"{shape}-{t}"
        lp = os.path.join(work, f"gpt2_softmax_{t}.h5")
        z = os.path.join(work, f"gpt2_logits_{t}.h5")
        sig = os.path.join(work, f"gpt2_sigsoftmax_{t}.h5")
        synth(lp, "softmax", t, m, d)
        synth(z, "softmax", t, m, d, logits=True)
        synth(sig, "sigsoftmax", t, m, d)
        analyse(run, "softmax log-probs", lp, ["--method", "sketch"])
        if t == 4000:  # the Gaussian start (a full first pass), the default before the sparse one
            analyse(run, "softmax log-probs", lp,
                    ["--method", "sketch", "--sketch-start-nonzeros", "0"])
        analyse(run, "softmax log-probs", lp, ["--method", "sketch", "--verdict-only"])
        # the row Gram: what auto takes at T = 4000 (run as auto there, the target's command)
        analyse(run, "softmax log-probs", lp, [] if t == 4000 else ["--method", "gram"])
        if t == 4000:
            analyse(run, "softmax log-probs", lp, ["--method", "exact", "--precision", "float32"])
            wall, rss, line = measure(["/usr/bin/python3", os.path.join(here, "numpy_svd.py"), lp])
            j = json.loads(line)
            rows.append((run, "softmax log-probs", "numpy.linalg.svd (float32)", wall, rss,
                         {"rank": j["rank"], "bound": d + 2, "verdict": "-"}))
            numpy_default = j["rank_numpy"]
        analyse(run, "softmax logits", z, ["--method", "sketch"])
        analyse(run, "sigsoftmax log-probs", sig, ["--method", "sketch", "--verdict-only"])
        analyse(run, "sigsoftmax log-probs", sig, [] if t == 4000 else ["--method", "gram"])
        est = {}
        for name, path in (("logits", z), ("log-probs", lp)):
            wall, _, line = measure([rank_analysis, "--quiet", "--json", "--method", "sketch",
                                     "--estimate-d", path])
            est[name] = (json.loads(line), wall)
        sketch = next(w for s, n, a, w, _, _ in rows
                      if s == run and n == "softmax log-probs" and a == "--method sketch")

        def ratio(name, args, wall):
            return f"{wall / sketch:.1f}x" if name == "softmax log-probs" else ""

        print(f"### GPT-2 shape: T = {t}, M = {m}, d = {d}, bias (bound {d + 2} for log-probs, "
              f"{d + 1} for logits); {t * m * 4 / 1e9:.2f} GB of float32 per file\n")
        table(run, ("time / sketch's", ratio))
        if t == 4000:
            print(f"- numpy's default tolerance (sigma_max max(M, T) eps, what "
                  f"`numpy.linalg.matrix_rank` uses) gives rank {numpy_default} on the softmax "
                  f"log-probs: sigma_max is the direction of the rows' mean, so the NR threshold "
                  f"is the meaningful one (docs/rank-analysis.md).")
        for name, (j, wall) in est.items():
            print(f"- `--method sketch --estimate-d` on the {name}: d = {j['d']} (largest gap "
                  f"{j['gap']:.3g} at i = {j['gap_index']}, minus {j['minus_normaliser']} for "
                  f"the normaliser and {j['minus_bias']} for the bias), {wall:.1f} s")
        flop_lines(run, GFLOPS)


def wt2(shape):
    t, m, d = 245570, 33278, 400
    path = os.path.join(work, f"synthetic_softmax_{t}x{m}_d{d}.h5")
    synth(path, "softmax", t, m, d)
    # The second of two reads: the file is larger than RAM, so the first may still find the
    # page cache warm from the write, the second is what every sketch pass meets.
    read_s = [read_once(path) for _ in range(2)][-1]
    # The verdict alone (the verdict start, analysis/sketch.h): the range start (a sparse start
    # keeping A Omega, then one pass of probes on its range); no pass forms A Q.
    analyse(shape, "softmax log-probs", path, ["--method", "sketch", "--verdict-only"])
    # The same verdict from the start's next basis and power steps (the earlier verdict start).
    analyse(shape, "softmax log-probs", path,
            ["--method", "sketch", "--verdict-only", "--sketch-no-range-start"])
    analyse(shape, "softmax log-probs", path, ["--method", "sketch"])
    analyse(shape, "softmax log-probs", path,
            ["--method", "sketch", "--sketch-start-nonzeros", "0"])
    os.remove(path)  # 32.7 GB; llama's 51 GB file follows
    print(f"### WikiText-2 test size: T = {t}, M = {m}, d = {d}, bias (bound {d + 2}); "
          f"{t * m * 4 / 1e9:.1f} GB of float32, streamed from disk\n")
    gaussian = next(w for s, n, a, w, _, _ in rows if s == shape and "--sketch-start-nonzeros" in a)
    table(shape, ("the Gaussian start's time / this one's",
                  lambda name, args, wall: f"{gaussian / wall:.2f}x"),
          ("time / reading the file once", lambda name, args, wall: f"{wall / read_s:.1f}x"))
    print(f"- Reading the file once (`cat FILE > /dev/null`, same run, the second of two reads: "
          f"the file is larger than RAM): {read_s:.1f} s")
    flop_lines(shape, GFLOPS)


def stopped_line(limit, passes):
    """The line for a sketch stopped at `limit` seconds: its last finished pass."""
    return (f"- `--method sketch` did not finish within {limit:.0f} s (stopped there); its last "
            f"finished pass: {passes[-1] if passes else 'none'} ({len(passes)} pass(es) finished).")


def trained(shape, path, rank_json=None):
    limit = float(os.environ.get("SB_BENCH_TIMEOUT", "1800"))
    read_s = [read_once(path) for _ in range(2)][-1]  # the second: what every pass meets
    passes = []
    wall, rss, line = measure([rank_analysis, "--json", "--method", "sketch", path],
                              timeout=limit, passes=passes)
    if line is None:
        sketch = None
        log(f"the sketch ran past {limit:.0f} s and was stopped")
    else:
        sketch = json.loads(line)
        rows.append((shape, "trained dump", "--method sketch", wall, rss, sketch))
    if rank_json:
        with open(rank_json) as f:
            j = json.load(f)
        rows.append((shape, "trained dump", f"--method {j['method']} (the pipeline's run, "
                     "not re-run)", j["seconds"], j.get("peak_rss_mib", float("nan")), j))
    j0 = sketch or (rows[-1][5] if rows and rows[-1][0] == shape else {})
    t, m = j0.get("T", "?"), j0.get("M", "?")
    print(f"### A trained head's dump: {os.path.basename(os.path.dirname(path)) or path}, "
          f"head {j0.get('head', '?')}, T = {t}, M = {m}, d = {j0.get('d', '?')}; "
          f"{os.path.getsize(path) / 1e9:.1f} GB, streamed from disk\n")
    table(shape, ("time / reading the file once", lambda name, args, w: f"{w / read_s:.1f}x"))
    if sketch is None:
        print(stopped_line(limit, passes))
    print(f"- Reading the file once (`cat FILE > /dev/null`, same run, the second of two reads): "
          f"{read_s:.1f} s")
    grams = [row[5] for row in rows if row[0] == shape and row[5].get("method") == "gram"]
    if grams:
        print("\n".join(gram_model_line(j) for j in grams))
    flop_lines(shape, GFLOPS)


def gram_model_line(j):
    """The Gram path's M^2 T model of dsyrk beside what a rank.json measured."""
    tflop = j["M"] ** 2 * j["T"] / 1e12
    return (f"- Gram path model: M^2 T = {tflop:.0f} TFLOP of dsyrk at {GFLOPS:.0f} GFLOP/s = "
            f"{tflop * 1e3 / GFLOPS:.0f} s; measured {j['seconds_accumulate']:.0f} s "
            f"accumulating, {j['seconds_solve']:.0f} s solving, {j['seconds_read']:.0f} s "
            f"waiting for reads; peak RSS {j.get('peak_rss_mib', float('nan')):.0f} MiB "
            f"(8 M^2 = {8 * j['M'] ** 2 / 2 ** 20:.0f} MiB for G)")


def llama(shape):
    t, m, d = 100000, 128256, 512
    path = os.path.join(work, f"lowrank_softmax_{t}x{m}_d{d}.npy")
    make_input(path, ["/usr/bin/python3", os.path.join(here, "make_lowrank_npy.py"), path,
                      "--T", str(t), "--M", str(m), "--d", str(d), "--no-bias"])
    facts = ["--head", "softmax", "--d", str(d), "--bias", "0", "--budget-gb", "8"]
    analyse(shape, "softmax log-probs (.npy)", path, facts + ["--method", "sketch"])
    analyse(shape, "softmax log-probs (.npy)", path, facts + ["--verdict-only"])
    os.remove(path)
    print(f"### Llama 3 vocabulary: T = {t}, M = {m}, d = {d}, no bias (bound {d + 1}); "
          f"{t * m * 4 / 1e9:.1f} GB float32 .npy (deleted after the run)\n")
    table(shape)
    flop_lines(shape, GFLOPS)


def tail(shape):
    t, m, count, tail_n = 30000, 6000, 1200, 3000
    path = os.path.join(work, f"tail_{t}x{m}.npy")
    make_input(path, ["/usr/bin/python3", os.path.join(here, "make_spectrum_npy.py"), path,
                      "--T", str(t), "--M", str(m), "--count", str(count), "--tail", str(tail_n)])
    read_s = read_once(path)
    # Facts for the bound: a sigsoftmax-like head, d = 100 with a bias (bound 101 for logits).
    facts = ["--head", "sigsoftmax", "--d", "100", "--bias", "1"]
    analyse(shape, "tail (.npy)", path, facts + ["--method", "sketch"])
    analyse(shape, "tail (.npy)", path, facts + ["--method", "sketch", "--sketch-power-steps", "0"])
    analyse(shape, "tail (.npy)", path, facts + ["--method", "gram"])
    analyse(shape, "tail (.npy)", path, facts)  # auto
    print(f"### A count with a long tail just below tol: T = {t}, M = {m}, float32 .npy "
          f"({t * m * 4 / 1e9:.2f} GB), rank {count} (1200 values from sigma_1 down to 3 tol, "
          f"then {tail_n} over [0.2, 0.9] tol)\n")
    table(shape, ("time / reading the file once",
                  lambda name, args, wall: f"{wall / read_s:.0f}x"))
    print(f"- Reading the file once (`cat FILE > /dev/null`, same run; the file fits the page "
          f"cache, as it does for every run above): {read_s:.2f} s")
    core = next(j for s_, _, _, _, _, j in rows if s_ == shape).get("blas_core", "?")
    print(f"- BLAS core: {core}; dgemm {GFLOPS:.0f} GFLOP/s")
    flop_lines(shape, GFLOPS)


def wt2count(shape):
    t, m, count, tail_n = 245570, 33278, 1000, 2000
    limit = float(os.environ.get("SB_BENCH_TIMEOUT", "1800"))
    path = os.path.join(work, f"count_{t}x{m}_r{count}.npy")
    make_input(path, ["/usr/bin/python3", os.path.join(here, "make_spectrum_npy.py"), path,
                      "--T", str(t), "--M", str(m), "--count", str(count), "--tail", str(tail_n)])
    read_s = [read_once(path) for _ in range(2)][-1]  # the second: what every pass meets
    facts = ["--head", "sigsoftmax", "--d", "400", "--bias", "1"]
    passes = []
    wall, rss, line = measure([rank_analysis, "--json", "--method", "sketch"] + facts + [path],
                              timeout=limit, passes=passes)
    if line is not None:
        rows.append((shape, "rank-1000 spectrum (.npy)", " ".join(facts + ["--method", "sketch"]),
                     wall, rss, json.loads(line)))
    os.remove(path)
    print(f"### A count of rank {count} at WikiText-2's test size: T = {t}, M = {m}, float32 .npy "
          f"({t * m * 4 / 1e9:.1f} GB, streamed from disk; {count} values from sigma_1 down to "
          f"3 tol, then {tail_n} over [0.2, 0.9] tol; deleted after the run)\n")
    table(shape, ("time / reading the file once", lambda name, args, w: f"{w / read_s:.1f}x"))
    if line is None:
        print(stopped_line(limit, passes))
    print(f"- Reading the file once (`cat FILE > /dev/null`, same run, the second of two reads): "
          f"{read_s:.1f} s")
    print(f"- BLAS core: {rank_analysis_core()}; dgemm {GFLOPS:.0f} GFLOP/s")
    flop_lines(shape, GFLOPS)
    print("Its finished passes, as the same run printed them (stderr):\n\n```")
    print("\n".join("sketch: " + p for p in passes) + "\n```\n")


GFLOPS = gemm_gflops("float64")
log(f"dgemm {GFLOPS:.0f} GFLOP/s on {rank_analysis_core()} kernels")
for shape in shapes:
    if shape.startswith("trained:"):
        trained("trained", *shape.split(":")[1:])
    else:
        {"gpt2": gpt2, "wt2": wt2, "llama": llama, "tail": tail,
         "wt2count": wt2count}[shape](shape)
