#!/usr/bin/python3
"""A worked example: the rank of a PyTorch language model's log-output matrix, computed as the
model produces it, never stored. A small LSTM LM (random initialisation, or --steps of training
on the tokens first) reads T tokens in batches; sbrank.analyse streams its log-probabilities
block by block (the gram path: memory O(M^2), never O(T M)). For comparison it also dumps the
whole T x M array and analyses it the ordinary way; the two results agree.

    /usr/bin/python3 python/examples/lstm_stream.py [--tokens 20000] [--vocab 2000] [--d 32]

The same loop serves any model that returns logits (a transformers model included):

    def blocks():
        with torch.no_grad():
            for batch in batches:                      # (B, L) token ids
                logits = model(batch)                   # (B, L, M)
                yield torch.log_softmax(logits.float(), -1).reshape(-1, M)
    r = sbrank.analyse(blocks, M=M, head="softmax", d=d, bias=1, method="gram")
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

try:
    import sbrank
except ImportError:  # run from a checkout without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
    import sbrank


class LstmLM(torch.nn.Module):
    """Embedding (M, d) -> one LSTM layer of d units -> decoder (d -> M) with a bias: softmax's
    log-output rank is at most d + 2 (Theorem 2)."""

    def __init__(self, vocab: int, d: int):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, d, batch_first=True)
        self.decoder = torch.nn.Linear(d, vocab)

    def forward(self, ids):  # (B, L) -> logits (B, L, M)
        h, _ = self.lstm(self.embed(ids))
        return self.decoder(h)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=20000)
    ap.add_argument("--vocab", type=int, default=2000)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--steps", type=int, default=0, help="training steps before the analysis")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print both results as JSON")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # the same float32 blocks in both analyses
    g = torch.Generator().manual_seed(args.seed)
    tokens = torch.randint(0, args.vocab, (args.tokens + 1,), generator=g)  # a token stream
    model = LstmLM(args.vocab, args.d)
    if args.steps:
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        for _ in range(args.steps):
            i = int(torch.randint(0, args.tokens - 64, (1,), generator=g))
            x, y = tokens[i:i + 64].unsqueeze(0), tokens[i + 1:i + 65].unsqueeze(0)
            loss = torch.nn.functional.cross_entropy(model(x).reshape(-1, args.vocab), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    rows_per_batch = 500  # 20 sequences of 25 tokens

    def blocks():  # the model's log-probabilities, one batch at a time
        with torch.no_grad():
            for i in range(0, args.tokens, rows_per_batch):
                ids = tokens[i:i + rows_per_batch].reshape(20, -1)
                yield torch.log_softmax(model(ids), -1).reshape(-1, args.vocab)

    facts = dict(head="softmax", d=args.d, bias=1, method="gram", threads=1)
    streamed = sbrank.analyse(blocks, M=args.vocab, T=args.tokens, **facts)
    dumped = torch.cat(list(blocks())).numpy()  # T x M: what the stream never stores
    stored = sbrank.analyse(dumped, **facts)
    keys = ("rank", "verdict", "certified", "sigma_max", "tol", "bound", "passes")
    if args.json:
        print(json.dumps({"streamed": {k: streamed.get(k) for k in keys},
                          "stored": {k: stored.get(k) for k in keys},
                          "stored_bytes": int(dumped.nbytes)}))
    else:
        print(f"streamed: rank {streamed['rank']} (bound {streamed['bound']}), "
              f"{streamed['verdict']}, certified {streamed['certified']}, "
              f"sigma_max {streamed['sigma_max']:.6g}, {streamed['passes']} passes")
        print(f"stored:   rank {stored['rank']}, {stored['verdict']}, "
              f"sigma_max {stored['sigma_max']:.6g} ({dumped.nbytes / 1e6:.0f} MB held)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
