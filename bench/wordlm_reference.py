#!/usr/bin/python3
"""PyTorch reference of bench/bench_wordlm.cpp: the same LM, data, settings and JSON-line output.

    /usr/bin/python3 bench/wordlm_reference.py --head softmax|sigsoftmax|mos|moss
        [--mode train|eval|both] [--batches 60] [--warmup 10] [--threads 2] [--experts 2]
        [--data DIR]

Model (as trainers/lm/model.h with the options of bench/wordlm_bench_model.h): PTB
(M = 10000), tied 200-dim embedding / decoder with bias, 2 LSTM layers of 200 units (one nn.LSTM
per layer, as the C++ side runs at::lstm per layer), locked dropout 0.2 on the word vectors,
between the layers and on the output (and on mixture contexts), no embedding dropout, no weight
drop. Heads, written as a PyTorch user would write them (composed ops, autograd backward), with
g(z) = log_softmax(z) (softmax, mos) or log_softmax(z + logsigmoid(z)) (sigsoftmax, moss):
  softmax, sigsoftmax  nll(g(W h + b))
  mos, moss            log P = logsumexp_k(g(W_pi h)_k + g(W c_k + b)), c = tanh(W_h h + b_h)
                       viewed as K contexts of 200; W_pi without bias (Yang et al. 2018; MoSS:
                       sigsoftmax for the experts and the prior, Kanai et al. 2018 eq. 19)
Training step (trainers/lm/train_step.h): zero_grad, forward, loss + AR (2) + TAR (1), backward,
clip_grad_norm_ 0.25, SGD lr 20 with weight decay 1.2e-6; batch 20, BPTT 35 fixed, the state
carried (detached) across batches. Evaluation: model.eval(), torch.no_grad(), forward + loss on
the validation split, batch 20. One JSON line per mode on stdout.
tests/trainers/lm/test_reference_parity.py imports this module: it loads the C++ model's initial parameters
(import_parameters) and checks that segment_loss + clipped_sgd_step give the C++ losses.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline"))
from pipeline_errors import refuse  # noqa: E402

# The settings shared with bench_wordlm.cpp (keep the two in step).
EMSIZE, NHID, LAYERS = 200, 200, 2
DROPOUT, LR, WDECAY, CLIP = 0.2, 20.0, 1.2e-6, 0.25
ALPHA, BETA = 2.0, 1.0
BATCH, BPTT = 20, 35
EXPERTS = 2  # K of mos/moss, as trainers/configs/ptb_cpu.toml (mos:K=2, moss:K=2)
HEADS = ("softmax", "sigsoftmax", "mos", "moss")
MIXTURES = ("mos", "moss")


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
    refuse("wordlm_reference.py: PTB not found (pass --data DIR or run make data)")


def cpu_profile_train_ids(threads):
    """The training probes' set-up (bench/*_training_probe.py): `threads` torch threads, the model
    resized to trainers/configs/ptb_cpu.toml's (emsize = d = 100, 256 hidden units), and PTB's
    training split: (token ids, vocabulary)."""
    global EMSIZE, NHID
    torch.set_num_threads(threads)
    EMSIZE, NHID = 100, 256
    vocab = {}
    ids = tokenize(os.path.join(find_ptb(None), "ptb.train.txt"), vocab, True)
    return ids, vocab


def training_probe(doc, batches, threads):
    """A training probe's command line (--batches, --threads with these defaults; its
    description the first paragraph of `doc`) and cpu_profile_train_ids: (args, ids, vocab)."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--batches", type=int, default=batches)
    ap.add_argument("--threads", type=int, default=threads)
    args = ap.parse_args()
    ids, vocab = cpu_profile_train_ids(args.threads)
    return args, ids, vocab


def tokenize(path, vocab, grow):
    """Whitespace tokens plus <eos> per line; the vocabulary in first-seen order."""
    ids = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            for word in line.split() + ["<eos>"]:
                if word not in vocab:
                    if not grow:
                        refuse(f"{path}: word '{word}' is not in the training vocabulary")
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


def log_output(head, z):
    """The head's log-output function over the last dim: log softmax or log sigsoftmax."""
    if head in ("sigsoftmax", "moss"):
        z = z + F.logsigmoid(z)
    return F.log_softmax(z, dim=-1)


class WordLm(nn.Module):
    def __init__(self, vocab_size, head, experts=EXPERTS, dropout=DROPOUT):
        super().__init__()
        self.head, self.experts, self.dropout = head, experts, dropout
        self.embedding = nn.Parameter(torch.empty(vocab_size, EMSIZE).uniform_(-0.1, 0.1))
        self.decoder_bias = nn.Parameter(torch.zeros(vocab_size))
        sizes = [EMSIZE] + [NHID] * (LAYERS - 1) + [EMSIZE]
        self.rnns = nn.ModuleList(nn.LSTM(sizes[l], sizes[l + 1]) for l in range(LAYERS))
        if head in MIXTURES:
            self.latent = nn.Linear(EMSIZE, experts * EMSIZE)
            self.prior = nn.Linear(EMSIZE, experts, bias=False)

    def zero_state(self, batch_size):
        """One (h, c) per layer, each (1, B, H_l), in the parameters' dtype."""
        zeros = lambda r: torch.zeros(1, batch_size, r.hidden_size, dtype=self.embedding.dtype)
        return [(zeros(r), zeros(r)) for r in self.rnns]

    def forward(self, ids, state):
        """ids (T, B) -> dropped output (T, B, E), raw last layer (T, B, E), new state."""
        x = locked_dropout(F.embedding(ids, self.embedding), self.dropout, self.training)
        new_state = []
        for l, rnn in enumerate(self.rnns):
            y, s = rnn(x, state[l])  # (T, B, H_l)
            new_state.append(s)
            x = locked_dropout(y, self.dropout, self.training)
        return x, y, new_state

    def loss(self, output, targets):
        """output (T, B, E), targets (T * B) -> mean NLL of the head."""
        t, b, e = output.shape
        h = output.reshape(t * b, e)  # (N, E)
        if self.head in MIXTURES:
            contexts = torch.tanh(self.latent(h))  # (N, K E)
            contexts = locked_dropout(contexts.view(t, b, -1), self.dropout, self.training)
            logits = F.linear(contexts.reshape(t * b * self.experts, e), self.embedding,
                              self.decoder_bias)  # (N K, M)
            log_f = log_output(self.head, logits).view(t * b, self.experts, -1)  # (N, K, M)
            log_pi = log_output(self.head, self.prior(h))  # (N, K)
            return F.nll_loss(torch.logsumexp(log_f + log_pi.unsqueeze(-1), dim=1), targets)
        logits = F.linear(h, self.embedding, self.decoder_bias)  # (N, M)
        return F.nll_loss(log_output(self.head, logits), targets)


def cpp_name(name):
    """This model's parameter name -> the C++ AwdLstm's (trainers/lm/model.cpp)."""
    if name.startswith("rnns."):
        _, layer, tensor = name.split(".")
        tensor = tensor.removesuffix("_l0")
        return f"rnn{layer}.{'weight_hh_raw' if tensor == 'weight_hh' else tensor}"
    if name.startswith(("latent.", "prior.")):
        return "head.mixture." + name
    return name


def import_parameters(model, tensors, source):
    """Copies {C++ name: array} (e.g. the initial parameters tests/fixtures/wordlm_parity.cpp writes) into
    the model; every parameter on both sides must be matched, with equal shapes."""
    wanted = {cpp_name(n): p for n, p in model.named_parameters()}
    missing, extra = sorted(wanted.keys() - tensors.keys()), sorted(tensors.keys() - wanted.keys())
    if missing or extra:
        raise ValueError(f"{source}: parameters missing {missing}, unexpected {extra}")
    with torch.no_grad():
        for name, p in wanted.items():
            value = torch.as_tensor(tensors[name])
            if tuple(value.shape) != tuple(p.shape):
                raise ValueError(f"{source}: parameter '{name}' has shape {tuple(value.shape)}, "
                                 f"expected {tuple(p.shape)}")
            p.copy_(value)


def make_optimizer(model):
    """SGD without momentum, weight decay added to the gradient (as sb::lm::sgd_step)."""
    return torch.optim.SGD(model.parameters(), lr=LR, weight_decay=WDECAY)


def detached(state):
    """The LSTM state carried into the next window without its graph (truncated BPTT)."""
    return [(h.detach(), c.detach()) for h, c in state]


def regularised(raw_loss, output, raw):
    """AWD-LSTM's training objective: the head loss + AR (ALPHA, on the dropped last-layer
    output) + TAR (BETA, on the undropped one), as trainers/lm/train_step.h."""
    return raw_loss + ALPHA * output.pow(2).mean() + BETA * (raw[1:] - raw[:-1]).pow(2).mean()


def segment_loss(model, x, y, state):
    """x, y (T, B), state carried (detached here) -> head loss, head loss + AR + TAR, new state."""
    output, raw, state = model(x, detached(state))
    raw_loss = model.loss(output, y.reshape(-1))
    return raw_loss, regularised(raw_loss, output, raw), state


def clipped_sgd_step(model, opt):
    """After backward: clip the global gradient norm to CLIP, then SGD; returns the norm before
    clipping."""
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
    opt.step()
    return float(norm)


def bptt_windows(data, count):
    """(b, x, y) for `count` BPTT windows (T, B) of data from row 0, y = x one token on, back to
    row 0 when the data runs out (as the C++ bench does)."""
    row = 0
    for b in range(count):
        if row + BPTT + 1 > data.size(0):
            row = 0
        yield b, data[row : row + BPTT], data[row + 1 : row + 1 + BPTT]
        row += BPTT


def segments(data, args):
    """bptt_windows over the warmup + timed batches."""
    return bptt_windows(data, args.warmup + args.batches)


def train(model, data, args, split):
    model.train()
    opt = make_optimizer(model)
    state = model.zero_state(data.size(1))
    total, loss_sum = 0.0, 0.0
    for b, x, y in segments(data, args):
        start = time.perf_counter()
        opt.zero_grad()
        raw_loss, loss, state = segment_loss(model, x, y, state)
        value = raw_loss.item()  # the trainer reads it every batch too
        after_forward = time.perf_counter()
        loss.backward()
        after_backward = time.perf_counter()
        clipped_sgd_step(model, opt)
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
    total, loss_sum = 0.0, 0.0
    for b, x, y in segments(data, args):
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
        "experts": args.experts if args.head in MIXTURES else 0, "blas": loaded_blas(),
    }), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--head", choices=HEADS, default="softmax")
    p.add_argument("--mode", choices=["train", "eval", "both"], default="both")
    p.add_argument("--batches", type=int, default=60, help="timed batches per mode")
    p.add_argument("--warmup", type=int, default=10, help="untimed batches before them")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--experts", type=int, default=EXPERTS, help="K of the mos/moss heads")
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
