#!/usr/bin/python3
"""The GEMM FLOP model of one training step of the word LM, per head: how fast MoS can be beside
softmax when both run their GEMMs at the same rate.

Per token, forward (a GEMM of an (n x k) by a (k x m) matrix is 2 n k m FLOPs):
  LSTM layer l (input i_l, hidden h_l): 2 * 4 h_l (i_l + h_l)   (four gates over [x, h])
  decoder, softmax-family heads:        2 d M
  decoder, MoS / MoSS with K experts:   2 d M K                   (one per expert context)
  MoS latent projection and prior:      2 h_L K d + 2 h_L K      (h_L: the last layer's width)
Training = 3 x forward (the backward of each GEMM is two GEMMs of the same size). Elementwise work
(the K log-softmaxes over M, dropout, the gates' nonlinearities) is left out. FLOPs_softmax /
FLOPs_mos is the speed ratio MoS / softmax of two steps that reach the same FLOP rate; a measured
ratio r asks MoS's step for r / (FLOPs_softmax / FLOPs_mos) times softmax's FLOP rate.

  /usr/bin/python3 bench/train_flop_model.py              # both shapes, markdown
  /usr/bin/python3 bench/train_flop_model.py --experts 4
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402

# (name, emsize = d, hidden widths of the layers (the last = d: tied decoder), M)
SHAPES = [
    ("bench_wordlm (bench/wordlm_bench_model.h)", 200, [200, 200], 10000),
    ("cpu profile (trainers/configs/ptb_cpu.toml)", 100, [256, 100], 10000),
]


def forward_flops_per_token(d: int, hidden: list[int], m: int, experts: int) -> dict:
    """The forward GEMM FLOPs per token, by part; experts = 0 for a softmax-family head."""
    lstm, width = 0, d
    for h in hidden:
        lstm += 2 * 4 * h * (width + h)
        width = h
    if experts == 0:
        return {"lstm": lstm, "decoder": 2 * d * m, "latent": 0}
    return {"lstm": lstm, "decoder": 2 * d * m * experts,
            "latent": 2 * width * experts * d + 2 * width * experts}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="Examples:\n  bench/train_flop_model.py\n"
                                        "  bench/train_flop_model.py --experts 4")
    ap.add_argument("--experts", type=int, default=2, help="MoS K (default 2)")
    args = ap.parse_args(argv)
    if args.experts < 1:
        print(f"train_flop_model.py: --experts: expected an integer >= 1, got {args.experts}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    k = args.experts
    print(f"| model | softmax MFLOP / token (LSTM + decoder) | MoS (K = {k}) MFLOP / token "
          f"(LSTM + decoder + latent) | FLOPs softmax / MoS: MoS / softmax speed at equal FLOP "
          f"rates |")
    print("|---|---|---|---|")
    for name, d, hidden, m in SHAPES:
        s = forward_flops_per_token(d, hidden, m, 0)
        x = forward_flops_per_token(d, hidden, m, k)
        fs, fx = 3 * sum(s.values()), 3 * sum(x.values())
        print(f"| {name} | {fs / 1e6:.2f} ({3 * s['lstm'] / 1e6:.2f} + "
              f"{3 * s['decoder'] / 1e6:.2f}) | {fx / 1e6:.2f} ({3 * x['lstm'] / 1e6:.2f} + "
              f"{3 * x['decoder'] / 1e6:.2f} + {3 * x['latent'] / 1e6:.2f}) | "
              f"**{fs / fx:.2f}x** |")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
