#!/usr/bin/python3
"""Why MoS (K = 2) collapses in the transformer profile: a look inside a trained run's best model.

For each run directory given, loads best.pt (LibTorch's archive reads as a TorchScript module) into
the PyTorch reference of bench/transformer_reference.py plus the mixture head of
trainers/heads/mixture.h (Yang et al. 2018: contexts tanh(W_h h + b_h), prior softmax(W_pi h),
experts softmax(W c_k + b), mixed in probability), re-reads the dump's first rows of the PTB test
set in the trainer's windows (non-overlapping windows of `context` tokens; the targets are checked
against the dump's) and prints, per run:

  - sat: the fraction of the latent pre-activations W_h h + b_h with |.| > 3 (tanh' < 0.01);
  - ctx spread: the standard deviation over rows of the contexts tanh(.), averaged over units
    (0: every row has the same context: the expert's output is the same distribution everywhere);
  - prior: the mean and the spread over rows of the first expert's weight pi_1;
  - h spread: the standard deviation over rows of the final LayerNorm's output, averaged over units;
  - |e|: the norm of the tied embedding, and the largest context-dependent part of a logit;
  - dump spread: the standard deviation over rows of the centred log-probabilities in the dump;
  - the reference's log-probabilities against the dump's (max |difference|: the load is right).

    /usr/bin/python3 bench/transformer_mos_probe.py results/transformer/mos_d_model32_s141 ...
        [--rows 2000] [--data DIR] [--json results/transformer/mos_probe.json]
"""
import argparse
import json
import os
import sys

import h5py
import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformer_reference as ref  # noqa: E402


def read_config(run):
    """The run's config.toml as a dict of its flat `key = value` lines."""
    out = {}
    with open(os.path.join(run, "config.toml")) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                k, v = (s.strip() for s in line.split("=", 1))
                out[k] = v.strip('"')
    return out


def test_ids(data_dir, vocab, tokens):
    """The PTB test stream as the trainer reads it (with_eos: an <eos> first, then each line's
    words and its <eos>) as ids of the dump's vocabulary."""
    index = {w: i for i, w in enumerate(vocab)}
    ids = [index["<eos>"]]
    with open(os.path.join(data_dir, "ptb.test.txt")) as f:
        for line in f:
            ids.extend(index[w] for w in line.split() + ["<eos>"])
            if len(ids) > tokens:
                break
    return torch.tensor(ids[: tokens + 1])


def load_model(run, cfg, vocab_size):
    d = int(cfg["d_model"])
    model = ref.TransformerLm(vocab_size, d, int(cfg["layers"]), int(cfg["heads"]),
                              int(cfg["context"]), int(cfg.get("d_ff", 0)), 0.0,
                              cfg["final_norm"], cfg["decoder_bias"] == "true", "softmax")
    params = dict(torch.jit.load(os.path.join(run, "best.pt")).named_parameters())
    own = dict(model.named_parameters())
    for name, p in own.items():
        p.data.copy_(params[name].to(p.dtype))
    return model, {k: v.detach().double() for k, v in params.items() if k.startswith("head.")}


def probe(run, rows, data_dir):
    cfg = read_config(run)
    with h5py.File(os.path.join(run, "logprobs.h5"), "r") as f:
        vocab = [w.decode() if isinstance(w, bytes) else w for w in f["vocab"][:]]
        dump = f["log_probs"][:rows].astype(np.float64)
        targets = f["targets"][:rows]
    ids = test_ids(data_dir, vocab, rows)
    if not np.array_equal(ids[1:].numpy(), targets):
        refuse(f"{run}: the test stream's ids differ from the dump's targets")
    model, head = load_model(run, cfg, len(vocab))
    model.eval().double()
    c = int(cfg["context"])
    hs = []
    with torch.no_grad():
        for s in range(0, rows, c):
            x = ids[s: min(s + c, rows)].unsqueeze(0)
            hs.append(model(x))
    h = torch.cat(hs)  # (rows, d)
    d = h.size(1)
    if not head:  # softmax or sigsoftmax: the body's numbers only, the reference's own head
        model.head = cfg["head"]
        mixed = model.log_probs(h).detach().numpy()
        return {"run": os.path.basename(run.rstrip("/")), "h_spread": float(h.std(0).mean()),
                "emb_norm": float(model.tokens.weight.norm()),
                "dump_spread": float((dump - dump.mean(0)).std()),
                "max_abs_vs_dump": float(np.abs(mixed - dump).max())}
    pre = h @ head["head.mixture.latent.weight"].t()  # (rows, K*d)
    if "head.mixture.latent.bias" in head:
        pre = pre + head["head.mixture.latent.bias"]
    ctx = torch.tanh(pre)
    prior = torch.softmax(h @ head["head.mixture.prior.weight"].t(), dim=-1)  # (rows, K)
    k = prior.size(1)
    e = model.tokens.weight.detach().double()
    logits = ctx.reshape(-1, d) @ e.t()  # (rows*K, M)
    if model.decoder_bias is not None:
        logits = logits + model.decoder_bias.detach().double()
    log_f = F.log_softmax(logits, dim=-1).view(-1, k, len(vocab))
    mixed = (log_f + prior.log().unsqueeze(-1)).logsumexp(dim=1).numpy()
    varying = (ctx - ctx.mean(0)).reshape(-1, d) @ e.t()
    return {
        "run": os.path.basename(run.rstrip("/")),
        "sat": float((pre.abs() > 3).double().mean()),
        "ctx_spread": float(ctx.std(0).mean()),
        "prior_mean": float(prior[:, 0].mean()),
        "prior_spread": float(prior[:, 0].std()),
        "h_spread": float(h.std(0).mean()),
        "emb_norm": float(e.norm()),
        "max_varying_logit": float(varying.abs().max()),
        "dump_spread": float((dump - dump.mean(0)).std()),
        "max_abs_vs_dump": float(np.abs(mixed - dump).max()),
    }


def default_data():
    """Where the trainers look (datasets/data_location.h): datasets/ptb, then ../shared."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for d in (os.path.join(root, "datasets", "ptb"),
              os.path.join(root, "..", "shared", "datasets", "ptb")):
        if os.path.isfile(os.path.join(d, "ptb.test.txt")):
            return d
    return os.path.join(root, "datasets", "ptb")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--data", default=default_data())
    ap.add_argument("--json", help="also write the rows here as a JSON list (atomically)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    cols = ["run", "sat", "ctx_spread", "prior_mean", "prior_spread", "h_spread", "emb_norm",
            "max_varying_logit", "dump_spread", "max_abs_vs_dump"]
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    rows = []
    for run in a.runs:
        r = probe(run, a.rows, a.data)
        rows.append(r)
        cells = (r[c] if c == "run" else f"{r[c]:.3g}" if c in r else "" for c in cols)
        print("| " + " | ".join(cells) + " |")
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rows": a.rows, "runs": rows}, f, indent=1)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
