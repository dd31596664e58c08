"""The PyTorch reference of train_transformer's model (trainers/transformer/model.h), written
from the same description (GPT-2's shape: pre-LayerNorm blocks, causal self-attention, GELU MLP,
learned positions, a final normalisation, the decoder tied to the embedding), with the C++ side's
parameter names so that its parameters load by name. Used by the parity test
(tests/trainers/transformer/test_reference_parity.py) and the speed bench
(bench/bench_transformer_speed.py).

Heads: softmax and sigsoftmax (Kanai et al. 2018, Definition 1:
log sigsoftmax(z) = z + log sigmoid(z) - logsumexp(z + log sigmoid(z))).
"""
import math

import torch
from torch import nn
import torch.nn.functional as F

NORM_EPS = 1e-5


class Block(nn.Module):
    def __init__(self, d, heads, d_ff, dropout):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, eps=NORM_EPS)
        self.qkv = nn.Linear(d, 3 * d)
        self.attn_out = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=NORM_EPS)
        self.fc = nn.Linear(d, d_ff)
        self.fc_out = nn.Linear(d_ff, d)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask):
        B, T, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        att = self.drop(torch.softmax(att.masked_fill(mask, float("-inf")), dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, d)
        x = x + self.drop(self.attn_out(y))
        return x + self.drop(self.fc_out(F.gelu(self.fc(self.ln2(x)))))


class TransformerLm(nn.Module):
    def __init__(self, vocab, d, layers, heads, context, d_ff=0, dropout=0.0,
                 final_norm="layernorm", bias=True, head="softmax"):
        super().__init__()
        self.head = head
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(context, d)
        self.embed_drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(d, heads, d_ff or 4 * d, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d, eps=NORM_EPS) if final_norm == "layernorm" else None
        self.rms_gain = nn.Parameter(torch.ones(d)) if final_norm == "rmsnorm" else None
        self.decoder_bias = nn.Parameter(torch.zeros(vocab)) if bias else None

    def forward(self, x):
        B, T = x.shape
        h = self.embed_drop(self.tokens(x) + self.positions(torch.arange(T)))
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        for block in self.blocks:
            h = block(h, mask)
        if self.ln_f is not None:
            h = self.ln_f(h)
        if self.rms_gain is not None:
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + NORM_EPS) * self.rms_gain
        return h.reshape(B * T, -1)

    def log_probs(self, h):
        z = h @ self.tokens.weight.t()
        if self.decoder_bias is not None:
            z = z + self.decoder_bias
        if self.head == "sigsoftmax":
            z = z + F.logsigmoid(z)
        return F.log_softmax(z, dim=-1)  # PyTorch's own kernel, as a user would write it

    def loss(self, x, y):
        return F.nll_loss(self.log_probs(self.forward(x)), y.reshape(-1))


def make_optimizer(model, lr, weight_decay):
    """AdamW with GPT-2's two groups: decay on parameters of >= 2 dimensions, none on the rest."""
    params = list(model.parameters())
    return torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
         {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.95), eps=1e-8)


def lr_at(step, total, warmup, lr, final_ratio):
    """Linear warmup, then a cosine to final_ratio x lr at the last step (trainer.h, lr_at)."""
    if step < warmup:
        return lr * (step + 1) / warmup
    span = max(1, total - 1 - warmup)
    progress = min(1.0, (step - warmup) / span)
    floor = final_ratio * lr
    return floor + 0.5 * (lr - floor) * (1 + math.cos(math.pi * progress))


def train_step(model, optimizer, x, y, clip, lr):
    """The trainer's step: loss, backward, clip (returns the norm before clipping), lr, AdamW."""
    optimizer.zero_grad()
    loss = model.loss(x, y)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip if clip > 0 else float("inf"))
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    return loss.item(), float(norm)
