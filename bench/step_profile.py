#!/usr/bin/python3
"""Where one training step of the word LM goes, per operator (issue 5/5): runs
`bench_wordlm --mode train --profile FILE` for each head on the cpu profile's model shapes
(trainers/configs/ptb_cpu.toml: emsize 100, 2 LSTM layers of 256, M = 10000, batch 20, BPTT 35;
the benchmark's dropout and no weight drop, bench/wordlm_bench_model.h) and prints markdown:

- the step by phase (data, zero_grad, forward, loss_item, backward, optimizer), profiled;
- the step by kind of operator (GEMM, elementwise, views, copies, allocation, autograd engine ...);
- the operators with the most self time, each with its FLOPs (GEMMs: 2 m n k) and achieved rate;
- the GEMM floor: every GEMM of the step at the rate the same BLAS reaches on that shape alone
  (timed by bench_wordlm in the same process after the profile), against the unprofiled step:
  the step's share of the sgemm rate measured on its own shapes (the issue's target: >= 70%).

    /usr/bin/python3 bench/step_profile.py [BUILD_DIR] [--heads softmax,sigsoftmax,mos]
        [--batches 40] [--profile-batches 10] [--threads 2] [--fused-lstm]
    /usr/bin/python3 bench/step_profile.py [BUILD_DIR] --compare-fused [--rounds 3] [--heads ...]

Self time = a range's time minus its children's (ranges nest per thread). The profiler adds a few
microseconds per operator; the profiled step beside the unprofiled one says how much.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402

GEMMS = {"aten::mm", "aten::addmm", "aten::bmm"}
VIEWS = {"aten::as_strided", "aten::transpose", "aten::t", "aten::slice", "aten::narrow",
         "aten::select", "aten::view", "aten::expand", "aten::resolve_conj", "aten::unsqueeze",
         "aten::squeeze", "aten::reshape", "aten::_reshape_alias", "aten::permute",
         "aten::unsafe_split", "aten::unsafe_chunk", "aten::split", "aten::chunk", "aten::detach",
         "detach", "aten::alias", "aten::unbind", "aten::expand_as", "aten::flatten"}
ALLOC = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::zeros",
         "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::new_empty",
         "aten::new_empty_strided", "aten::new_zeros", "aten::resize_", "aten::fill_",
         "aten::zero_", "aten::full"}
COPIES = {"aten::copy_", "aten::cat", "aten::clone", "aten::_to_copy", "aten::to",
          "aten::contiguous", "aten::stack", "aten::index_select", "aten::embedding",
          "aten::embedding_backward", "aten::embedding_dense_backward", "aten::index_add_",
          "aten::gather", "aten::scatter_add_"}
REDUCTIONS = {"aten::sum", "aten::mean", "aten::norm", "aten::logsumexp", "aten::max",
              "aten::linalg_vector_norm", "aten::_log_softmax", "aten::_log_softmax_backward_data",
              "aten::log_softmax", "aten::nll_loss_forward", "aten::nll_loss_backward",
              "aten::nll_loss", "aten::nll_loss_nd", "aten::pow", "aten::item",
              "aten::_local_scalar_dense"}


def kind_of(name: str) -> str:
    if name in GEMMS:
        return "GEMM (mm, addmm, bmm)"
    if name in VIEWS:
        return "views and splits (no data moved)"
    if name in ALLOC:
        return "allocation and fills"
    if name in COPIES:
        return "copies, cat, embedding"
    if name in REDUCTIONS:
        return "reductions, log-softmax, NLL"
    if name.startswith("autograd::engine") or name.endswith("Backward0") or \
            name.endswith("Backward1") or name == "torch::autograd::AccumulateGrad":
        return "autograd engine (node bookkeeping)"
    if name.startswith("aten::"):
        return "elementwise and other ATen"
    if name == "(in no operator)":
        return "in no operator (custom kernels' forward, glue)"
    return "other (our functions, scopes)"


def gemm_key(name, shapes):
    """(op, m, n, k, batch) as bench/step_profile.cpp keys it, or None."""
    try:
        if name == "aten::mm":
            return (name, shapes[0][0], shapes[1][1], shapes[0][1], 1)
        if name == "aten::addmm":
            return (name, shapes[1][0], shapes[2][1], shapes[1][1], 1)
        if name == "aten::bmm":
            return (name, shapes[0][1], shapes[1][2], shapes[0][2], shapes[0][0])
    except (IndexError, TypeError):
        return None
    return None


def analyse(path: str, steps: int) -> dict:
    """Self time per operator and phase, GEMM calls and time per shape, the shapes' rates."""
    ranges, rates, meta = [], {}, {}
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            if e["k"] == "range":
                ranges.append(e)
            elif e["k"] == "gemm":
                rates[(e["op"], e["m"], e["n"], e["k_dim"], e["batch"])] = e["gflops"]
            elif e["k"] == "meta":
                meta = e
    child_us = collections.Counter()
    for r in ranges:
        if r["p"] >= 0:
            child_us[r["p"]] += r["t1"] - r["t0"]

    def phase_of(r):
        while r["p"] >= 0:
            r = ranges[r["p"]]
            if r["n"].startswith("phase::"):
                return r["n"][7:]
        return "outside"

    self_us = collections.Counter()  # (phase, name) -> us
    calls = collections.Counter()    # (phase, name) -> count
    phase_us = collections.Counter()  # phase -> inclusive us
    gemm = collections.defaultdict(lambda: [0, 0.0])  # key -> [calls, self us]
    for r in ranges:
        incl = r["t1"] - r["t0"]
        if r["n"].startswith("phase::") and r["p"] < 0:
            phase_us[r["n"][7:]] += incl
            # What no operator covers: our kernels' own loops (a custom autograd function's
            # forward is no operator), the loop's glue.
            self_us[(r["n"][7:], "(in no operator)")] += incl - child_us[r["i"]]
            calls[(r["n"][7:], "(in no operator)")] += 1
            continue
        phase = phase_of(r)
        self_us[(phase, r["n"])] += incl - child_us[r["i"]]
        calls[(phase, r["n"])] += 1
        key = gemm_key(r["n"], r["s"])
        if key is not None:
            gemm[key][0] += 1
            gemm[key][1] += incl - child_us[r["i"]]
    return {"self_us": self_us, "calls": calls, "phase_us": phase_us, "gemm": gemm,
            "rates": rates, "steps": steps, "meta": meta}


def run_head(build, head, args, tmp):
    path = os.path.join(tmp, f"{head}.jsonl")
    cmd = [os.path.join(build, "bench", "bench_wordlm"), "--head", head, "--mode", "train",
           "--emsize", "100", "--nhid", "256", "--batches", str(args.batches), "--warmup", "10",
           "--threads", str(args.threads), "--profile", path,
           "--profile-batches", str(args.profile_batches)] + (["--fused-lstm"] if args.fused_lstm else [])
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    return report, analyse(path, args.profile_batches), " ".join(cmd[1:]).replace(path, "FILE")


def print_head(head, report, a, command):
    n = a["steps"]
    ms = lambda us: us / 1e3 / n  # noqa: E731 (per step)
    step_unprof = report["forward_ms"] + report["backward_ms"] + report["optimizer_ms"]
    step_prof = ms(sum(a["phase_us"].values()))
    print(f"### {head}\n\n`bench_wordlm {command}`: unprofiled step {step_unprof:.1f} ms "
          f"({report['tokens_per_s']:.0f} tokens/s over {report['batches']} batches); profiled "
          f"step {step_prof:.1f} ms ({step_prof / step_unprof:.2f}x: the profiler's cost), "
          f"{n} steps, {a['meta'].get('minor_faults', 0) / n:.0f} minor page faults a step.\n")
    print("| phase | ms / step (profiled) | share |")
    print("|---|---|---|")
    for phase, us in sorted(a["phase_us"].items(), key=lambda kv: -kv[1]):
        print(f"| {phase} | {ms(us):.2f} | {ms(us) / step_prof:.1%} |")
    kinds = collections.Counter()
    for (phase, name), us in a["self_us"].items():
        kinds[kind_of(name)] += us
    print("\n| kind of operator | self ms / step | share of the profiled step |\n|---|---|---|")
    for kind, us in kinds.most_common():
        print(f"| {kind} | {ms(us):.2f} | {ms(us) / step_prof:.1%} |")
    # The GEMM floor: each GEMM call at its shape's measured rate.
    flops = sum(2.0 * m * nn * k * b * c for (op, m, nn, k, b), (c, _) in a["gemm"].items())
    floor_s = sum(2.0 * m * nn * k * b * c / (a["rates"][key] * 1e9)
                  for key, (c, _) in a["gemm"].items() for (op, m, nn, k, b) in [key]
                  if key in a["rates"])
    gemm_us = sum(us for _, us in a["gemm"].values())
    print(f"\nGEMMs: {flops / n / 1e9:.3f} GFLOP / step in {sum(c for c, _ in a['gemm'].values()) / n:.0f} "
          f"calls, {ms(gemm_us):.2f} ms of self time ({flops / (gemm_us / 1e6) / 1e9:.1f} GFLOP/s); "
          f"at each shape's own measured rate they take {floor_s * 1e3 / n:.2f} ms. "
          f"**Share of the sgemm rate: {floor_s * 1e3 / n / step_unprof:.1%}** of the unprofiled "
          f"step (target >= 70%).\n")
    print("| GEMM op | m x k x n (batch) | calls / step | GFLOP / step | ms / step | achieved GFLOP/s "
          "| alone GFLOP/s | achieved / alone |")
    print("|---|---|---|---|---|---|---|---|")
    for key, (c, us) in sorted(a["gemm"].items(), key=lambda kv: -kv[1][1]):
        op, m, nn, k, b = key
        f = 2.0 * m * nn * k * b * c
        alone = a["rates"].get(key)
        rate = f / (us / 1e6) / 1e9
        print(f"| {op} | {m} x {k} x {nn} ({b}) | {c / n:.0f} | {f / n / 1e9:.4f} | {ms(us):.2f} | "
              f"{rate:.1f} | {alone:.1f} | {rate / alone:.2f} |" if alone else
              f"| {op} | {m} x {k} x {nn} ({b}) | {c / n:.0f} | {f / n / 1e9:.4f} | {ms(us):.2f} | "
              f"{rate:.1f} | - | - |")
    print("\n| operator (phase) | calls / step | self ms / step | share |\n|---|---|---|---|")
    for (phase, name), us in a["self_us"].most_common(15):
        print(f"| {name} ({phase}) | {a['calls'][(phase, name)] / n:.0f} | {ms(us):.2f} | "
              f"{ms(us) / step_prof:.1%} |")
    print()


def compare_fused(args) -> None:
    """Training tokens/s with fused_lstm against at::lstm, alternating, no profiler."""
    print(f"## fused_lstm against at::lstm, alternating\n\nbench_wordlm --mode train "
          f"--emsize 100 --nhid 256 --batches {args.batches} --warmup 10, {args.rounds} rounds, "
          f"the order reversed every other round; ratio = fused tokens/s / at::lstm tokens/s "
          f"within each round (same process settings, same seed and batches).\n")
    print("| head | median ratio | rounds | at::lstm ms / step (median) | fused ms / step (median) |")
    print("|---|---|---|---|---|")
    binary = os.path.join(args.build, "bench", "bench_wordlm")
    for head in args.heads.split(","):
        ratios, ms = [], {"aten": [], "fused": []}
        for rnd in range(args.rounds):
            rate = {}
            for kind in (["aten", "fused"] if rnd % 2 == 0 else ["fused", "aten"]):
                print(f"step_profile: compare {head} {kind} round {rnd + 1} ...", file=sys.stderr)
                cmd = [binary, "--head", head, "--mode", "train", "--emsize", "100", "--nhid",
                       "256", "--batches", str(args.batches), "--warmup", "10", "--threads",
                       str(args.threads)] + (["--fused-lstm"] if kind == "fused" else [])
                r = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                              text=True).stdout.strip().splitlines()[-1])
                rate[kind] = r["tokens_per_s"]
                ms[kind].append(r["forward_ms"] + r["backward_ms"] + r["optimizer_ms"])
            ratios.append(rate["fused"] / rate["aten"])
        med = statistics.median
        print(f"| {head} | **{med(ratios):.2f}x** | {', '.join(f'{x:.2f}x' for x in ratios)} | "
              f"{med(ms['aten']):.1f} | {med(ms['fused']):.1f} |")
    print()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("build", nargs="?", default="build")
    p.add_argument("--heads", default="softmax,sigsoftmax,mos")
    p.add_argument("--batches", type=int, default=40)
    p.add_argument("--profile-batches", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--compare-fused", action="store_true",
                   help="instead of profiles: fused_lstm vs at::lstm training tokens/s, alternating")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--fused-lstm", action="store_true",
                   help="the trainers' fused_lstm = true (trainers/lm/fused_lstm.h)")
    args = p.parse_args()
    binary = os.path.join(args.build, "bench", "bench_wordlm")
    if not os.path.exists(binary):
        print(f"step_profile.py: {binary} is missing (make bench-wordlm-binary)", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.compare_fused:
        compare_fused(args)
        return EXIT_OK
    with tempfile.TemporaryDirectory() as tmp:
        for head in args.heads.split(","):
            print(f"step_profile: {head} ...", file=sys.stderr)
            report, a, command = run_head(args.build, head, args, tmp)
            print_head(head, report, a, command)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
