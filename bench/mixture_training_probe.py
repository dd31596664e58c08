#!/usr/bin/python3
"""Why MoS stalls at the cpu profile's size: the first batches of training, per variant, in the
PyTorch reference model of bench/wordlm_reference.py resized to trainers/configs/ptb_cpu.toml's
model (d = emsize = 100, 256 hidden units, 2 layers; batch 20, BPTT 35, clip 0.25, AR 2 / TAR 1,
locked dropout 0.2, SGD with weight decay 1.2e-6). For each variant: the mean training loss of
every 50 batches, the gradient norm before clipping (median and max over the run, and how often
clipping cut it), the largest per-parameter gradient norms and the mean prior of the mixtures.

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-openmp \\
        /usr/bin/python3 bench/mixture_training_probe.py [--batches 300] [--threads 1]

Variants (head, lr, latent bias): softmax 30; MoS K = 2 at lr 20 with and without the bias
b_h of its contexts tanh(W_h h + b_h); MoS at lr 10 with it; MoS at lr 30 without it. The same
seed and data order for all. Prints markdown.
"""

import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wordlm_reference as ref  # noqa: E402

VARIANTS = [("softmax", 30.0, True), ("mos", 20.0, True), ("mos", 20.0, False),
            ("mos", 10.0, True), ("mos", 30.0, False)]


def run(data, vocab_size, head, lr, latent_bias, batches, every=50):
    torch.manual_seed(0)
    model = ref.WordLm(vocab_size, head, experts=2)
    if head == "mos" and not latent_bias:
        model.latent.bias.data.zero_()
        model.latent.bias.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=lr, weight_decay=ref.WDECAY)
    state = model.zero_state(ref.BATCH)
    losses, norms, windows, top, prior = [], [], [], {}, []
    model.train()
    for b, x, y in ref.bptt_windows(data, batches):
        opt.zero_grad()
        output, raw, state = model(x, ref.detached(state))
        loss = model.loss(output, y.reshape(-1))
        ref.regularised(loss, output, raw).backward()
        for name, p in model.named_parameters():
            if p.grad is not None:
                top[name] = max(top.get(name, 0.0), p.grad.norm().item())
        norms.append(torch.nn.utils.clip_grad_norm_(params, ref.CLIP).item())
        opt.step()
        losses.append(loss.item())
        if head == "mos" and (b + 1) % every == 0:
            with torch.no_grad():
                h = output.reshape(-1, output.size(-1))
                prior.append(F.softmax(model.prior(h), dim=-1).mean(0)[0].item())
        if (b + 1) % every == 0:
            windows.append(statistics.mean(losses[-every:]))
    return windows, norms, top, prior


def main():
    args, ids, vocab = ref.training_probe(__doc__, batches=300, threads=1)
    data = ref.batchify(ids, ref.BATCH)
    every = 50
    print(f"PyTorch reference model at the cpu profile's size (d = 100, 256 units, 2 layers), "
          f"MoS K = 2; the first {args.batches} batches of PTB, {args.threads} thread(s), seed 0. "
          f"Loss = mean training NLL of each {every} batches; gradient norm before clipping at "
          f"{ref.CLIP}.\n")
    cols = " | ".join(f"loss {i * every + 1}-{(i + 1) * every}" for i in range(args.batches // every))
    print(f"| head | lr | latent bias | {cols} | grad norm median / max | clipped | largest "
          f"gradients (max norm) | MoS prior of expert 1, every {every} batches |")
    print("|---|---|---|" + "---|" * (args.batches // every) + "---|---|---|---|")
    for head, lr, bias in VARIANTS:
        windows, norms, top, prior = run(data, len(vocab), head, lr, bias, args.batches, every)
        big = sorted(top.items(), key=lambda kv: -kv[1])[:3]
        clipped = sum(n > ref.CLIP for n in norms) / len(norms)
        print(f"| {head} | {lr:g} | {'-' if head != 'mos' else ('yes' if bias else 'no')} | " +
              " | ".join(f"{w:.3f}" for w in windows) +
              f" | {statistics.median(norms):.2f} / {max(norms):.2f} | {clipped:.0%} | " +
              ", ".join(f"{k} {v:.2f}" for k, v in big) + " | " +
              (" ".join(f"{p:.2f}" for p in prior) if prior else "-") + " |", flush=True)


if __name__ == "__main__":
    main()
