"""The bottleneck re-asked of a decoder-only Transformer LM (issue 5/5) as rows of
pipeline/claims.py: not a claim of the three papers (they trained LSTMs and a feed-forward LM)
but their question where today's models live, over results/transformer
(pipeline/profiles/transformer.toml: softmax, sigsoftmax and MoS (K = 2) at d = d_model in
{32, 64, 128}, a final LayerNorm before the tied decoder; the prediction is in the profile).

Rows, each with the test its wording asks for (claim_tests.py):
- per d: "sigsoftmax has lower test perplexity than softmax", "MoS has lower ...": directional,
  paired by seed, in test cross-entropy (nats per token; ln ppl);
- "softmax's rank is at most the final-LayerNorm bound d + 1" and "sigsoftmax's / MoS's rank
  exceeds it": counts over every analysed run (all runs must agree; one the tool could not decide
  makes the row undecided);
- "the gain is largest where the bound is tightest": the mechanism test with gain(32) against
  gain(128), as the char LM's control.
"""
from __future__ import annotations

import json
import os

import claim_tests as ct
from claims import Row, fmt, judged, mean, metric_by_seed, not_attempted, pairs, shown
from report_tables import rank_text, rank_window

D_VALUES = (32, 64, 128)
PAPER = "no figure: the papers trained LSTMs; the question asked of a Transformer here"
NAMES = {"softmax": "softmax", "sigsoftmax": "sigsoftmax", "mos": "MoS (K = 2)"}


def _label(head: str, d: int) -> str:
    return f"{head}_d_model{d}"


def _ce(directory: str, head: str, d: int) -> dict[int, float]:
    return metric_by_seed(directory, _label(head, d), "transformer", "test_loss")


def gain_row(directory: str, head: str, d: int) -> Row:
    claim = f"Transformer LM, d = {d}: {NAMES[head]} has lower test perplexity than softmax"
    seeds, soft, other = pairs(_ce(directory, "softmax", d), _ce(directory, head, d))
    if len(seeds) < 2:
        return not_attempted(claim, PAPER, "fewer than 2 paired seeds in results/transformer "
                             "(`make reproduce PROFILE=transformer`)")
    ppl = lambda xs: sum(2.718281828459045 ** x for x in xs) / len(xs)  # noqa: E731
    ours = (f"PTB, 2 blocks, final LayerNorm, d = {d}: test ppl softmax {ppl(soft):.1f}, "
            f"{NAMES[head]} {ppl(other):.1f} (means); effect in nats per token")
    return judged(claim, PAPER, ours, ct.directional(soft, other), shown(directory))


def _rank_jsons(directory: str, label: str) -> list[dict]:
    out = []
    if not os.path.isdir(directory):
        return out
    for name in sorted(os.listdir(directory)):
        if name.startswith(label + "_s"):
            try:
                with open(os.path.join(directory, name, "rank.json")) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                pass
    return out


def bound_row(directory: str, head: str, d: int) -> Row:
    """Every analysed run of `head` at d against the final-LayerNorm bound d + 1 (softmax: at
    most; the others: above)."""
    above = head != "softmax"
    claim = (f"Transformer LM, d = {d}: {NAMES[head]}'s log-output rank "
             + ("exceeds" if above else "is at most") + " the final-LayerNorm bound d + 1")
    runs = _rank_jsons(directory, _label(head, d))
    if not runs:
        return not_attempted(claim, PAPER, f"no {_label(head, d)}_s*/rank.json in "
                             "results/transformer")
    verdicts = [ct.count(*rank_window(r), int(r["bound"]), above, r.get("verdict")) for r in runs]
    names = [v.verdict for v in verdicts]
    verdict = ("contradicted" if "contradicted" in names else
               "undecided" if "undecided" in names else "reproduced")
    bounds = sorted({int(r["bound"]) for r in runs})
    ours = (f"ranks {', '.join(rank_text(r) for r in runs)} over {len(runs)} seeds, bound "
            f"{', '.join(map(str, bounds))} (final_norm {runs[0].get('final_norm', '?')}; "
            "5000 test rows)")
    v = ct.Verdict("count (certified window), every seed", verdict, len(runs),
                   float(min(rank_window(r)[0] - int(r["bound"]) for r in runs)))
    return judged(claim, PAPER, ours, v, shown(directory))


def tightest_row(directory: str) -> Row:
    lo, hi = D_VALUES[0], D_VALUES[-1]
    claim = (f"Transformer LM: sigsoftmax's gain is larger where the bound is tightest (d = {lo}) "
             f"than at d = {hi}")
    gains = {}
    for d in (lo, hi):
        seeds, soft, sig = pairs(_ce(directory, "softmax", d), _ce(directory, "sigsoftmax", d))
        gains[d] = {s: a - b for s, a, b in zip(seeds, soft, sig)}
    seeds, g_lo, g_hi = pairs(gains[lo], gains[hi])
    if len(seeds) < 2:
        return not_attempted(claim, PAPER, "fewer than 2 seeds with both d in results/transformer")
    ours = (f"gain {mean(g_lo):.3g} nats/token at d = {lo}, {mean(g_hi):.3g} at d = {hi} "
            f"(softmax - sigsoftmax, test cross-entropy)")
    return judged(claim, PAPER, ours, ct.mechanism(g_lo, g_hi), shown(directory))


def rows(results: str) -> list[Row]:
    directory = os.path.join(results, "transformer")
    out = []
    for d in D_VALUES:
        out += [gain_row(directory, "sigsoftmax", d), gain_row(directory, "mos", d)]
    for d in D_VALUES:
        out += [bound_row(directory, h, d) for h in ("softmax", "sigsoftmax", "mos")]
    out.append(tightest_row(directory))
    return out


def finding(results: str) -> str:
    """The README's paragraph on the Transformer, from the rows' verdicts."""
    table = rows(results)
    judged_rows = [r for r in table if not r.verdict.startswith("not attempted")]
    if not judged_rows:
        return ("**The Transformer.** Not yet run here: `make reproduce PROFILE=transformer` "
                "trains softmax, sigsoftmax and MoS at d = 32, 64, 128 and tests the rows of the "
                "claims table's Transformer section.")
    def tally(kind: str, name: str) -> str:
        """How many of the rows of one head and kind (gain: "has lower test perplexity"; bound:
        "'s log-output rank") hold, of those judged."""
        key = f": {NAMES[name]} has lower test perplexity" if kind == "gain" else \
            f": {NAMES[name]}'s log-output rank"
        mine = [r for r in judged_rows if key in r.claim]
        return f"{sum(1 for r in mine if r.verdict == 'reproduced')} of {len(mine)}"
    gains = [r for r in judged_rows if "lower test perplexity" in r.claim]
    bounds = [r for r in judged_rows if "final-LayerNorm bound" in r.claim]
    tight = [r for r in judged_rows if "tightest" in r.claim]
    text = (f"**The Transformer.** Against softmax, sigsoftmax has the lower test perplexity at "
            f"{tally('gain', 'sigsoftmax')} widths d and MoS (K = 2) at "
            f"{tally('gain', 'mos')}; softmax's rank stays within the "
            f"final-LayerNorm bound d + 1 at {tally('bound', 'softmax')}, sigsoftmax's exceeds "
            f"it at {tally('bound', 'sigsoftmax')} and MoS's at {tally('bound', 'mos')} "
            f"({len(gains)} perplexity and {len(bounds)} rank rows in the claims table's "
            "Transformer section).")
    if tight:
        t = tight[0]
        ci = "" if t.ci is None else f" [{fmt(t.ci[0])}, {fmt(t.ci[1])}]"
        text += (" Whether sigsoftmax's gain is largest where the bound is tightest: "
                 f"{t.verdict} (gain at d = {D_VALUES[0]} minus gain at d = {D_VALUES[-1]}: "
                 f"{fmt(t.effect)}{ci} nats, {t.n} seeds).")
    return text + _mos_probe_text(results)


def _mos_probe_text(results: str) -> str:
    """What bench/transformer_mos_probe.py found inside the runs (results/transformer/
    mos_probe.json), as one sentence per d: how much the final normalisation's output varies
    over test rows under MoS and under softmax, and the prior's weight on its first expert."""
    try:
        with open(os.path.join(results, "transformer", "mos_probe.json")) as f:
            runs = json.load(f)["runs"]
    except (OSError, ValueError, KeyError):
        return ""
    parts, collapsed, one_expert = [], [], []
    for d in D_VALUES:
        mos = [r for r in runs if r["run"].startswith(_label("mos", d) + "_s")]
        soft = [r for r in runs if r["run"].startswith(_label("softmax", d) + "_s")]
        if not mos or not soft:
            continue
        top = [max(r["prior_mean"], 1 - r["prior_mean"]) for r in mos]
        h_mos, h_soft = mean([r["h_spread"] for r in mos]), mean([r["h_spread"] for r in soft])
        collapsed.append(h_mos < 0.5 * h_soft)
        one_expert.append(mean(top) >= 0.9)
        parts.append(f"d = {d}: {h_mos:.2g} against {h_soft:.2g}, the prior's larger weight "
                     f"{mean(top):.2f}")
    if not parts:
        return ""
    text = (" Inside the runs (bench/transformer_mos_probe.py, results/transformer/mos_probe.md),"
            " the final LayerNorm's output varies over the test rows (its standard deviation, "
            "mean over units) under MoS against softmax, " + "; ".join(parts) + ".")
    if all(one_expert):  # the mixture ran as one softmax
        text += (" One expert took at least 0.9 of the prior at every d: MoS ran as a single "
                 "softmax over tanh-bounded contexts, whose rank Theorem 2 bounds as softmax's, so"
                 " its rank and perplexity rows test its training, not a mixture.")
    if all(collapsed):  # under half of softmax's spread at every d
        text += (" MoS's body collapsed toward one output for every context at this budget (under"
                 " half of softmax's spread at every d), so its rows test its training, not the "
                 "bottleneck.")
    return text
