#!/usr/bin/python3
"""Why g:sigmoid lags softmax at the cpu profile's size: the first batches of training, per
variant, in the PyTorch reference model of bench/wordlm_reference.py resized to
trainers/configs/ptb_cpu.toml's model (d = emsize = 100, 256 hidden units, 2 layers; batch 20,
BPTT 35, clip 0.25, AR 2 / TAR 1, locked dropout 0.2, SGD with weight decay 1.2e-6). g:sigmoid:
p_i = sigmoid(z_i) / sum_j sigmoid(z_j) (K18-S B.2). For each variant: the mean training loss of
every window of batches, the gradient norm before clipping (median, max) and how often clipping
cut it, the decoder bias' gradient norm, and the head's saturation at the end: the mean
sigmoid(z) of the targets and of all logits, the share of targets with sigmoid(z_t) > 0.9 (whose
gradient 1 - sigmoid(z_t) has vanished), and sum_j sigmoid(z_j) (the normaliser, which starts at
M / 2 = 5000 when every logit is near 0).

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \\
        /usr/bin/python3 bench/sigmoid_training_probe.py [--batches 600] [--threads 2]

Variants (head, lr, decoder bias at start): softmax 30 / zero (the cpu profile); g:sigmoid 30 /
zero (the cpu profile, and the paper's code: AWD-LSTM's decoder bias starts at 0); g:sigmoid 30 /
the unigram bias (b_i = logit(p_i / (2 max p)): sigmoid(b) proportional to the training unigram,
as train_nplm starts every head, trainers/nplm/unigram.cpp); g:sigmoid 30 / -log M (every
sigmoid(b) about 1 / M: a uniform start with the normaliser near 1); g:sigmoid 60 / zero. The same
seed and data order for all. Prints markdown.
"""

import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_cli  # noqa: E402
import wordlm_reference as ref  # noqa: E402

VARIANTS = [("softmax", 30.0, "zero"), ("sigmoid", 30.0, "zero"), ("sigmoid", 30.0, "unigram"),
            ("sigmoid", 30.0, "-log M"), ("sigmoid", 60.0, "zero")]


def log_g(head, z):
    if head == "sigmoid":  # log sigmoid(z) - logsumexp(log sigmoid(z))
        return F.log_softmax(F.logsigmoid(z), dim=-1)
    return F.log_softmax(z, dim=-1)


def start_bias(kind, unigram):
    if kind == "unigram":
        q = unigram / (2 * unigram.max())
        return torch.log(q) - torch.log1p(-q)
    if kind == "-log M":
        return torch.full_like(unigram, -math.log(unigram.numel()))
    return torch.zeros_like(unigram)


def run(data, unigram, head, lr, bias, batches, every):
    torch.manual_seed(0)
    model = ref.WordLm(unigram.numel(), "softmax")
    with torch.no_grad():
        model.decoder_bias.copy_(start_bias(bias, unigram))
    params = list(model.parameters())
    opt = torch.optim.SGD(params, lr=lr, weight_decay=ref.WDECAY)
    state = model.zero_state(ref.BATCH)
    losses, norms, bias_norms, windows = [], [], [], []
    model_out = None
    model.train()
    for b, x, y in ref.bptt_windows(data, batches):
        opt.zero_grad()
        output, raw, state = model(x, ref.detached(state))
        h = output.reshape(-1, output.size(-1))
        logits = F.linear(h, model.embedding, model.decoder_bias)  # (N, M)
        loss = F.nll_loss(log_g(head, logits), y.reshape(-1))
        ref.regularised(loss, output, raw).backward()
        bias_norms.append(model.decoder_bias.grad.norm().item())
        norms.append(torch.nn.utils.clip_grad_norm_(params, ref.CLIP).item())
        opt.step()
        losses.append(loss.item())
        model_out = (logits.detach(), y.reshape(-1))
        if (b + 1) % every == 0:
            windows.append(statistics.mean(losses[-every:]))
    z, t = model_out
    s = torch.sigmoid(z)
    target = s.gather(1, t.unsqueeze(1)).squeeze(1)
    sat = {"target": target.mean().item(), "all": s.mean().item(),
           "saturated": (target > 0.9).float().mean().item(), "normaliser": s.sum(1).mean().item(),
           "bias_mean": model.decoder_bias.mean().item()}
    return windows, norms, bias_norms, sat


def main():
    args, ids, vocab = ref.training_probe(__doc__, batches=600, threads=2)
    unigram = torch.bincount(torch.tensor(ids), minlength=len(vocab)).double() + 1  # add-one, as train_nplm
    unigram = (unigram / unigram.sum()).float()
    data = ref.batchify(ids, ref.BATCH)
    every = max(1, args.batches // 6)
    print(probe_cli.made_at() + "\n")
    print(f"PyTorch reference model at the cpu profile's size (d = 100, 256 units, 2 layers); "
          f"the first {args.batches} batches of PTB, {args.threads} thread(s), seed 0. Loss = "
          f"mean training NLL of each {every} batches; gradient norm before clipping at "
          f"{ref.CLIP}; saturation measured on the last batch.\n")
    cols = " | ".join(f"loss {i * every + 1}-{(i + 1) * every}"
                      for i in range(args.batches // every))
    print(f"| head | lr | decoder bias at start | {cols} | grad norm median / max | clipped | "
          "bias grad norm median | mean sigmoid(z_target) | share sigmoid(z_t) > 0.9 | "
          "mean sigmoid(z) | sum_j sigmoid(z_j) | mean bias at end |")
    print("|---|---|---|" + "---|" * (args.batches // every) + "---|---|---|---|---|---|---|---|")
    for head, lr, bias in VARIANTS:
        windows, norms, bias_norms, sat = run(data, unigram, head, lr, bias, args.batches, every)
        clipped = sum(n > ref.CLIP for n in norms) / len(norms)
        name = "g:sigmoid" if head == "sigmoid" else head
        saturation = (f"{sat['target']:.3f} | {sat['saturated']:.1%} | {sat['all']:.4f} | "
                      f"{sat['normaliser']:.1f}") if head == "sigmoid" else "- | - | - | -"
        print(f"| {name} | {lr:g} | {bias} | " + " | ".join(f"{w:.3f}" for w in windows) +
              f" | {statistics.median(norms):.2f} / {max(norms):.2f} | {clipped:.0%} | "
              f"{statistics.median(bias_norms):.3f} | {saturation} | {sat['bias_mean']:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
