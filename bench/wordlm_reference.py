#!/usr/bin/python3
"""PyTorch reference of bench/bench_wordlm.cpp: the same LM, data, settings and JSON-line output.

    /usr/bin/python3 bench/wordlm_reference.py --head softmax|sigsoftmax|mos [--mode train|eval|both]
        [--batches 60] [--warmup 10] [--threads 2] [--experts 3] [--data DIR]

Model (as trainers/lm/awd_lstm.h with the bench's options): PTB (M = 10000), tied 200-dim
embedding / decoder with bias, 2 LSTM layers of 200 units (one nn.LSTM per layer, as the C++ side
runs at::lstm per layer), locked dropout 0.2 on the word vectors, between the layers and on the
output (and on MoS contexts), no embedding dropout, no weight drop. Heads, written as a PyTorch
user would write them (composed ops, autograd backward):
  softmax     nll(log_softmax(z))
  sigsoftmax  nll(log_softmax(z + logsigmoid(z)))
  mos         log P = logsumexp_k(log_softmax(W_pi h)_k + log_softmax(W c_k + b)),
              c = tanh(W_h h + b_h) viewed as K contexts of 200; W_pi without bias
Training step (trainers/lm/trainer.cpp): zero_grad, forward, loss + AR (2) + TAR (1), backward,
clip_grad_norm_ 0.25, SGD lr 20 with weight decay 1.2e-6; batch 20, BPTT 35 fixed, the state
carried (detached) across batches. Evaluation: model.eval(), torch.no_grad(), forward + loss on
the validation split, batch 20. One JSON line per mode on stdout.
"""

import argparse
import json
import os
import time

import torch
import torch.nn.functional as F
from torch import nn

# The settings shared with bench_wordlm.cpp (keep the two in step).
EMSIZE, NHID, LAYERS = 200, 200, 2
DROPOUT, LR, WDECAY, CLIP = 0.2, 20.0, 1.2e-6, 0.25
ALPHA, BETA = 2.0, 1.0
BATCH, BPTT = 20, 35


def find_ptb(explicit):
    """The trainer's search order: --data, datasets/ptb, ../shared/datasets/ptb (cwd, source)."""
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(__file__))
    for root in (os.getcwd(), os.path.dirname(here)):
        for rel in ("datasets/ptb", "../shared/datasets/ptb"):
            path = os.path.join(root, rel)
            if os.path.exists(os.path.join(path, "ptb.valid.txt")):
                return path
    raise SystemExit("wordlm_reference.py: PTB not found (pass --data DIR or run make data)")


def tokenize(path, vocab, grow):
    """Whitespace tokens plus <eos> per line; the vocabulary in first-seen order."""
    ids = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            for word in line.split() + ["<eos>"]:
                if word not in vocab:
                    if not grow:
                        raise SystemExit(f"{path}: word '{word}' is not in the training vocabulary")
                    vocab[word] = len(vocab)
                ids.append(vocab[word])
    return ids


def batchify(ids, batch_size):
    """ids -> (N / B, B): column b is the b-th contiguous stream (datasets/batchify.h)."""
    n = len(ids) // batch_size
    return torch.tensor(ids[: n * batch_size], dtype=torch.long).view(batch_size, n).t().contiguous()


def locked_dropout(x, p, training):
    """x (T, B, H) * one Bernoulli mask (1, B, H) / (1 - p), shared by every time step."""
    if not training or p == 0:
        return x
    mask = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p).div_(1 - p)
    return x * mask


class WordLm(nn.Module):
    def __init__(self, vocab_size, head, experts):
        super().__init__()
        self.head, self.experts = head, experts
        self.embedding = nn.Parameter(torch.empty(vocab_size, EMSIZE).uniform_(-0.1, 0.1))
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))
        sizes = [EMSIZE] + [NHID] * (LAYERS - 1) + [EMSIZE]
        self.rnns = nn.ModuleList(nn.LSTM(sizes[l], sizes[l + 1]) for l in range(LAYERS))
        if head == "mos":
            self.latent = nn.Linear(EMSIZE, experts * EMSIZE)
            self.prior = nn.Linear(EMSIZE, experts, bias=False)

    def zero_state(self, batch_size):
        return [
            (torch.zeros(1, batch_size, r.hidden_size), torch.zeros(1, batch_size, r.hidden_size))
            for r in self.rnns
        ]

    def forward(self, ids, state):
        """ids (T, B) -> dropped output (T, B, E), raw last layer (T, B, E), new state."""
        x = locked_dropout(F.embedding(ids, self.embedding), DROPOUT, self.training)
        new_state = []
        for l, rnn in enumerate(self.rnns):
            y, s = rnn(x, state[l])  # (T, B, H_l)
            new_state.append(s)
            x = locked_dropout(y, DROPOUT, self.training)
        return x, y, new_state

    def loss(self, output, targets):
        """output (T, B, E), targets (T * B) -> mean NLL of the head."""
        t, b, e = output.shape
        h = output.reshape(t * b, e)  # (N, E)
        if self.head == "mos":
            contexts = torch.tanh(self.latent(h))  # (N, K E)
            contexts = locked_dropout(contexts.view(t, b, -1), DROPOUT, self.training)
            logits = F.linear(contexts.reshape(t * b * self.experts, e), self.embedding,
                              self.decoder_bias)  # (N K, M)
            log_f = F.log_softmax(logits, dim=-1).view(t * b, self.experts, -1)  # (N, K, M)
            log_pi = F.log_softmax(self.prior(h), dim=-1)  # (N, K)
            return F.nll_loss(torch.logsumexp(log_f + log_pi.unsqueeze(-1), dim=1), targets)
        logits = F.linear(h, self.embedding, self.decoder_bias)  # (N, M)
        if self.head == "sigsoftmax":
            logits = logits + F.logsigmoid(logits)
        return F.nll_loss(F.log_softmax(logits, dim=-1), targets)


def train(model, data, args, split):
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, weight_decay=WDECAY)
    state = model.zero_state(data.size(1))
    row, total, loss_sum = 0, 0.0, 0.0
    for b in range(args.warmup + args.batches):
        if row + BPTT + 1 > data.size(0):
            row = 0
        x, y = data[row : row + BPTT], data[row + 1 : row + 1 + BPTT]  # (T, B)
        row += BPTT
        start = time.perf_counter()
        state = [(h.detach(), c.detach()) for h, c in state]
        opt.zero_grad()
        output, raw, state = model(x, state)
        raw_loss = model.loss(output, y.reshape(-1))
        loss = (raw_loss + ALPHA * output.pow(2).mean()
                + BETA * (raw[1:] - raw[:-1]).pow(2).mean())
        value = raw_loss.item()  # the trainer reads it every batch too
        after_forward = time.perf_counter()
        loss.backward()
        after_backward = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        end = time.perf_counter()
        if b >= args.warmup:
            split["forward"] += after_forward - start
            split["backward"] += after_backward - after_forward
            split["optimizer"] += end - after_backward
            total += end - start
            loss_sum += value
    return total, loss_sum


@torch.no_grad()
def evaluate(model, data, args, split):
    model.eval()
    state = model.zero_state(data.size(1))
    row, total, loss_sum = 0, 0.0, 0.0
    for b in range(args.warmup + args.batches):
        if row + BPTT + 1 > data.size(0):
            row = 0
        x, y = data[row : row + BPTT], data[row + 1 : row + 1 + BPTT]  # (T, B)
        row += BPTT
        start = time.perf_counter()
        output, _, state = model(x, state)
        value = model.loss(output, y.reshape(-1)).item()
        if b >= args.warmup:
            total += time.perf_counter() - start
            loss_sum += value
    split["forward"] = total
    return total, loss_sum


def loaded_blas():
    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libopenblas" in line:
                return line[line.index("/") :].strip()
    return "(none)"


def report(args, mode, seconds, loss_sum, split):
    per_batch_ms = 1e3 / args.batches
    print(json.dumps({
        "impl": "python", "head": args.head, "mode": mode,
        "tokens_per_s": args.batches * BPTT * BATCH / seconds, "batches": args.batches,
        "forward_ms": split["forward"] * per_batch_ms,
        "backward_ms": split["backward"] * per_batch_ms,
        "optimizer_ms": split["optimizer"] * per_batch_ms,
        "mean_loss": loss_sum / args.batches, "threads": torch.get_num_threads(),
        "experts": args.experts if args.head == "mos" else 0, "blas": loaded_blas(),
    }), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--head", choices=["softmax", "sigsoftmax", "mos"], default="softmax")
    p.add_argument("--mode", choices=["train", "eval", "both"], default="both")
    p.add_argument("--batches", type=int, default=60, help="timed batches per mode")
    p.add_argument("--warmup", type=int, default=10, help="untimed batches before them")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--experts", type=int, default=3, help="K of the mos head")
    p.add_argument("--data", default="", help="PTB directory")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    ptb = find_ptb(args.data)
    vocab = {}
    train_ids = tokenize(os.path.join(ptb, "ptb.train.txt"), vocab, grow=True)
    valid_ids = tokenize(os.path.join(ptb, "ptb.valid.txt"), vocab, grow=False)
    model = WordLm(len(vocab), args.head, args.experts)
    if args.mode != "eval":
        split = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
        seconds, loss_sum = train(model, batchify(train_ids, BATCH), args, split)
        report(args, "train", seconds, loss_sum, split)
    if args.mode != "train":
        split = {"forward": 0.0, "backward": 0.0, "optimizer": 0.0}
        seconds, loss_sum = evaluate(model, batchify(valid_ids, BATCH), args, split)
        report(args, "eval", seconds, loss_sum, split)


if __name__ == "__main__":
    main()
