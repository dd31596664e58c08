"""results/<profile>/summary.md: our perplexities and ranks beside the paper's, the setting, the
machine and the wall time of every stage. Reads only what the runs wrote (final.json, score.json,
dyneval.json, rank.json, stages.json, config.toml, metrics.jsonl) and the paper's figures in
results/paper/.
"""

from __future__ import annotations

import os
import statistics

import head_facts
from final_json import read_final, section
from report_tables import (fmt, machine_line, mean_and_interval, mean_std, only_lower_bound,
                           rank_text, rank_window, window_order,
                           paper_csv, plus_minus, profile_header,
                           wall_time_rows, write_markdown)
from run_outputs import plotted_runs, read_json
from run_config import run_config
from train_speed_table import speed_section

STAGES = [("train", "valid"), ("train", "test"), ("finetune", "valid"), ("finetune", "test"),
          ("dyneval", "valid"), ("dyneval", "test")]


def run_results(run, trainer: str) -> dict:
    """Perplexities of one run by (stage, split), its rank result and stage timings. `trainer`:
    the profile's trainer kind, for a final.json in an old layout (final_json.py)."""
    d = run.dir
    score, dyn = ((read_json(os.path.join(d, n)) or {}) for n in ("score.json", "dyneval.json"))
    final = read_final(os.path.join(d, "final.json"), trainer)
    ppl = {}
    if score.get("static"):
        ppl[("train", "valid")] = score["static"]["valid_ppl"]
        ppl[("train", "test")] = score["static"]["test_ppl"]
    if final:
        ppl[("finetune", "valid")] = section(final)["valid_ppl"]
        ppl[("finetune", "test")] = section(final)["test_ppl"]
    if dyn.get("dynamic"):
        ppl[("dyneval", "valid")] = dyn["dynamic"]["valid_ppl"]
        ppl[("dyneval", "test")] = dyn["dynamic"]["test_ppl"]
        # the same weights read the same way without updates: what the gain is measured from
        ppl[("dyneval static", "test")] = dyn["static"]["test_ppl"]
    return {"ppl": ppl, "rank": read_json(os.path.join(d, "rank.json")) or {},
            "stages": read_json(os.path.join(d, "stages.json")) or {}}


def paired_t_test(a: list[float], b: list[float]) -> tuple[float, tuple[float, float], float,
                                                             float]:
    """Two-sided paired t-test (scipy.stats.ttest_rel) of a - b: (mean difference, its 95% t
    interval, t, p)."""
    from scipy import stats
    res = stats.ttest_rel(a, b)
    mean, ci = mean_and_interval([x - y for x, y in zip(a, b)])
    return mean, ci, float(res.statistic), float(res.pvalue)


PAPER_DATASET = {"wikitext-2": "wt2"}  # our corpus name -> the paper CSVs' dataset column


def _setting(profile, runs) -> str:
    c = run_config(runs[0].dir)
    if c is None:
        return "(no config.toml yet)"
    mixtures = sorted({r.head for r in runs if r.is_mixture})
    threads = profile.threads or os.cpu_count()
    return (f"{c.get('dataset', '?')}: {c.get('nlayers')}-layer AWD-LSTM, {c.get('nhid')} hidden "
            f"units, d = emsize = {c.get('emsize')}, {c.get('epochs')} + "
            f"{c.get('finetune_epochs')} epochs (train + finetune), batch {c.get('batch_size')}, "
            f"BPTT {c.get('bptt')}, "
            + ("trained on the proxy (valid's first nine tenths), vocabulary padded to "
               f"{c.get('vocab_size')}, " if c.get("train_split") == "valid" else "")
            + f"train tokens {c.get('train_tokens') or 'all'}, test tokens "
            f"{c.get('test_tokens') or 'all'}, {threads} thread{'s' if threads != 1 else ''} "
            "per run" + (", fused_lstm" if c.get("fused_lstm") else "")
            + (f"; mixtures: {', '.join(mixtures)}" if mixtures else "") + ".")


def rank_vs_epoch_section(profile, runs) -> list[str]:
    """The rank of every run's epoch dumps by epoch, and the mixtures' prior and expert statistics
    by epoch (rank_vs_epoch.json, epoch_ranks.py); nothing when no run has them."""
    data = [(r, read_json(os.path.join(r.dir, "rank_vs_epoch.json")) or {}) for r in runs]
    data = [(r, j) for r, j in data if j.get("epochs")]
    if not data:
        return []
    label = {"main": "main", "finetune": "ft"}
    steps = []  # (phase, epoch) in training order, over every run
    for _, j in data:
        for e in j["epochs"]:
            if (e["phase"], e["epoch"]) not in steps:
                steps.append((e["phase"], e["epoch"]))
    steps.sort(key=lambda k: (0 if k[0] == "main" else 1, k[1]))
    rows = sorted({j.get("rows") for _, j in data if j.get("rows")})
    out = ["## Rank during training\n",
           f"Numerical rank (the same NR tolerance, eps float32) of the first "
           f"{', '.join(map(str, rows))} test rows, dumped after every epoch of the main phase "
           "(main k) and of finetuning (ft k) with the weights just validated (averaged once ASGD "
           "runs); bound = d + 2. A rank above the bound is a head leaving softmax's subspace. "
           "Plot: `rank_vs_epoch.png`, `rank_vs_epoch.svg`.\n",
           "| head | seed | bound | " + " | ".join(f"{label[p]} {e}" for p, e in steps) + " |",
           "|---|---|---|" + "---|" * len(steps)]
    for r, j in data:
        by = {(e["phase"], e["epoch"]): e["rank"] for e in j["epochs"]}
        out.append(f"| {r.head} | {r.seed} | {j.get('bound', '-')} | " +
                   " | ".join(str(by.get(k, "-")) for k in steps) + " |")
    out.append("")
    out.append("![rank vs epoch](rank_vs_epoch.png)\n")
    mixtures = [(r, j) for r, j in data if any("mixture" in e for e in j["epochs"])]
    if mixtures:
        out += ["Mixture diagnostics after every epoch (metrics.jsonl; trainers/heads/"
                "mixture_stats.h), in nats, over the first validation tokens: H(pi) = mean "
                "entropy of the prior (0: each context uses one expert), H(mean pi) = entropy of "
                "the mean prior (0: every context uses the same expert, a collapse), both at most "
                "log K; disagreement = mean over contexts of sum_k pi_k KL(f_k || P) (0: the "
                "experts agree and the mixture is one softmax; at most H(pi)).\n",
                "| head | seed | epoch | rank | subset ppl | H(pi) | H(mean pi) | log K | "
                "disagreement |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r, j in mixtures:
            for e in j["epochs"]:
                m = e.get("mixture")
                if not m:
                    continue
                ppl = e.get("subset_ppl")
                out.append(f"| {r.head} | {r.seed} | {label[e['phase']]} {e['epoch']} | "
                           f"{e['rank']} | {'-' if ppl is None else fmt(ppl)} | "
                           f"{m['prior_entropy']:.3f} | {m['mean_prior_entropy']:.3f} | "
                           f"{m['max_prior_entropy']:.3f} | {m['disagreement']:.4f} |")
        out.append("")
    return out


def yes(ok: bool) -> str:
    """A finding's answer as the summary prints it."""
    return "yes" if ok else "**NO**"


def dyneval_findings(runs, res: dict, predicted_gain: float) -> list[str]:
    """Dynamic evaluation against the same weights read statically, run by run: every run's test
    ppl lowered, sigsoftmax still below softmax in every seed after it, and (where the profile
    predicts one: dyneval.predicted_gain) every run's relative gain at least that."""
    gain = {}  # (name, seed) -> (static, dynamic) test ppl
    for r in runs:
        p = res[r.dir]["ppl"]
        if ("dyneval", "test") in p:
            gain[(r.name, r.seed)] = (p[("dyneval static", "test")], p[("dyneval", "test")])
    if not gain:
        return []
    rel = {k: 1 - b / a for k, (a, b) in gain.items()}
    each = "; ".join(f"{n} seed {s} {fmt(a)} -> {fmt(b)} ({-100 * rel[(n, s)]:+.2f}%)"
                     for (n, s), (a, b) in gain.items())
    out = [f"- dynamic evaluation lowers every run's test perplexity: "
           f"{yes(all(v > 0 for v in rel.values()))} ({each})"]
    if predicted_gain > 0:
        low = min(rel, key=rel.get)
        out.append(f"- every run's relative test gain is at least {100 * predicted_gain:g}% (the "
                   f"profile's prediction): {yes(rel[low] >= predicted_gain)} (smallest: "
                   f"{low[0]} seed {low[1]}, {100 * rel[low]:.2f}%)")
    seeds = sorted({s for n, s in gain if n == "softmax"} &
                   {s for n, s in gain if n == "sigsoftmax"})
    if seeds:
        after = "; ".join(f"seed {s}: {fmt(gain[('sigsoftmax', s)][1])} vs "
                          f"{fmt(gain[('softmax', s)][1])}" for s in seeds)
        below = all(gain[("sigsoftmax", s)][1] < gain[("softmax", s)][1] for s in seeds)
        out.append(f"- sigsoftmax stays below softmax after dynamic evaluation in every seed: "
                   f"{yes(below)} ({after})")
    return out


def _adaptive_findings(runs, res, rank, text, ppl) -> list[str]:
    """The adaptive profile's findings: the adaptive softmax within and at its bound d + 1 +
    (tail clusters) + 1, adaptive sigsoftmax above it, and the perplexity direction."""
    out = []
    if "adaptive" not in rank:
        return out
    # The adaptive softmax's bound d + 1 + (tail clusters) + bias (docs/protocol.md), which
    # every analysed seed must meet exactly; adaptive sigsoftmax is held against it.
    _, b, label = rank["adaptive"]
    every = [res[r.dir]["rank"] for r in runs if r.name == "adaptive" and res[r.dir]["rank"]]
    out.append(f"- {label}'s rank is within its bound d + 1 + (tail clusters) + 1 = {b} in "
               f"every analysed seed: {yes(all(x['rank'] <= x['bound'] for x in every))} "
               f"(ranks {', '.join(str(x['rank']) for x in every)})")
    # The bound attained: a tenth of the tolerance counts exactly b values (rank_sweep[1]),
    # and the spectrum drops right after the b-th (spectral_gap = sigma_b / sigma_(b+1)).
    sweep = [(x.get("rank_sweep") or [None, None])[1] for x in every]
    out.append(f"- the bound is attained: at a tenth of the tolerance {label}'s rank is exactly "
               f"{b} in every analysed seed: {yes(all(v == b for v in sweep))} ("
               + ", ".join(f"{v}, sigma_{b} / sigma_{b + 1} = {x.get('spectral_gap', 0):.3g}"
                           for v, x in zip(sweep, every)) + ")")
    if "adaptive_sigsoftmax" in rank:
        (k2, _), b2, label2 = rank["adaptive_sigsoftmax"]
        out.append(f"- {label2} exceeds the adaptive softmax's bound {b2}: {yes(k2 > b2)} "
                   f"({text['adaptive_sigsoftmax']})")
    if "adaptive" in ppl and "adaptive_sigsoftmax" in ppl:
        ma = statistics.mean(ppl["adaptive_sigsoftmax"].values())
        mb = statistics.mean(ppl["adaptive"].values())
        out.append(f"- test perplexity adaptive_sigsoftmax <= adaptive (the direction of "
                   f"K18-S Table 4): {yes(ma <= mb)} ({fmt(ma)} vs {fmt(mb)}; significance: "
                   "the t-test above)")
    return out


def _order_findings(rank, shown, verdict) -> list[str]:
    """Table 3's order among the analysed heads, decided on their rank windows."""
    out = []

    def all_of(pairs):
        # every pair's order: NO if one fails for every count, yes if all hold, else undecided
        got = [window_order(rank[x][0], rank[y][0], strict) for x, y, strict in pairs]
        return False if False in got else None if None in got else True

    # The paper's rank order (Kanai et al. 2018, Table 3): MoSS >= MoS > ReLU > sigsoftmax >
    # sigmoid > softmax; softmax at d + 2. The single heads: every head that is not a mixture
    # (rank_analysis --list-heads), in run order, g:ReLU left out (the claim below excepts it).
    facts = head_facts.registry()
    singles = [n for n in rank if not facts.is_mixture(n) and n != "relu"]
    for mix in ("mos", "moss"):
        if mix in rank and singles:
            top = max(singles, key=lambda n: rank[n][0][1])
            above = all_of([(mix, n, True) for n in singles])
            out.append(f"- {rank[mix][2]} ranks above every single head but g:ReLU (the paper's "
                       f"order): {verdict(above)} ({shown(mix)} vs {rank[top][2]} {shown(top)})")
    order = [n for n in ("moss", "mos", "sigsoftmax", "sigmoid", "softmax") if n in rank]
    in_order = all_of([(x, y, (x, y) != ("moss", "mos")) for x, y in zip(order, order[1:])])
    out.append("- the paper's order MoSS >= MoS > sigsoftmax > g:sigmoid > softmax (g:ReLU left "
               f"out): {verdict(in_order)} "
               f"({' / '.join(f'{rank[n][2]} {shown(n)}' for n in order)})")
    return out


def findings_section(runs, res: dict, predicted_gain: float = 0.0) -> list[str]:
    """The paper's claims checked on this profile's numbers, each line 'yes' or 'NO' (computed
    here from the tables above, never written by hand); nothing when softmax has no rank."""
    rank = {}  # head name -> rank window of its first analysed seed (lo, hi), bound, label
    lower = {}  # head name -> rank_analysis's verdict, where the rank is a window, not a count
    text = {}  # head name -> its rank as the table prints it
    for r in runs:
        k = res[r.dir]["rank"]
        if k and r.name not in rank:
            rank[r.name] = (rank_window(k), k["bound"], r.head)
            text[r.name] = rank_text(k)
            if only_lower_bound(k):
                lower[r.name] = k.get("verdict", "")
    ppl = {}  # head name -> {seed: finetune test ppl}
    for r in runs:
        v = res[r.dir]["ppl"].get(("finetune", "test"))
        if v is not None:
            ppl.setdefault(r.name, {})[r.seed] = v
    out = ["## Findings, checked on the numbers above\n",
           "Each line is computed by `pipeline/summary.py` from this profile's results (first "
           "seed's full-test rank; test perplexity after finetuning, mean over seeds).\n"]
    out.extend(_adaptive_findings(runs, res, rank, text, ppl))
    if "softmax" not in rank:
        out.extend(dyneval_findings(runs, res, predicted_gain))
        out.append("")
        return out if len(out) > 3 else []
    (sm_lo, sm_hi), bound, _ = rank["softmax"]
    shown = lambda n: f"rank {text[n]}" if n in lower else text[n]  # noqa: E731
    # A finding on windows: yes / NO when every count in them agrees, else undecided.
    verdict = lambda ok: "undecided" if ok is None else yes(ok)  # noqa: E731
    equal = True if sm_lo == sm_hi == bound else False if not sm_lo <= bound <= sm_hi else None
    out.append(f"- softmax's rank equals its bound d + 2 = {bound}: {verdict(equal)} "
               f"({shown('softmax')})")
    for name, ((lo, _), b, label) in rank.items():
        if name != "softmax":
            # rank_analysis's verdict where the rank is a window (it judges the certified
            # window, and a sketch stopped at the verdict certifies it: docs/protocol.md, "The
            # sketch"); else the count.
            ok = lower[name] == "exceeds_bound" if name in lower else lo > b
            out.append(f"- {label} exceeds d + 2 = {b}: {yes(ok)} ({shown(name)})")
    if lower:
        out.append(f"- ranks of {', '.join(rank[n][2] for n in lower)} are certified windows "
                   "(the certificate left them open), not counts: the orders below hold or fail "
                   "for every count in the windows, and are undecided where windows overlap")

    out.extend(_order_findings(rank, shown, verdict))
    for a, b in (("sigsoftmax", "softmax"), ("moss", "mos")):
        if a in ppl and b in ppl:
            ma, mb = statistics.mean(ppl[a].values()), statistics.mean(ppl[b].values())
            out.append(f"- test perplexity {a} <= {b} (the paper's direction): {yes(ma <= mb)} "
                       f"({fmt(ma)} vs {fmt(mb)}, {len(ppl[a])} and {len(ppl[b])} seeds; "
                       "significance: the t-test above)")
    out.extend(dyneval_findings(runs, res, predicted_gain))
    out.append("")
    return out


def table4_section(by_name, res: dict) -> list[str]:
    """The adaptive heads beside K18-S Table 4 (One Billion Word), when the profile has them."""
    runs = {n: by_name(n) for n in ("adaptive", "adaptive_sigsoftmax")}
    if not any(runs.values()):
        return []
    paper = {(r["head"], r["metric"]): float(r["value"]) for r in paper_csv(
        "other_seed_results.csv") if r["paper"] == "sigsoftmax" and r["dataset"] == "1b_words"}
    out = ["## Adaptive softmax vs adaptive sigsoftmax (K18-S Table 4 analog)\n",
           "Test perplexity after finetuning, mean ± std over seeds. The paper's figures are for "
           "One Billion Word (M about 800k, 2 x 2048 LSTM, cutoffs [4000, 40000, 200000]); ours "
           "are for this profile's corpus, model and cutoffs (the profile's scaled-down note): compare "
           "the direction of the difference, not the values.\n",
           "| head | spelling | seeds | ours: test ppl | paper: test ppl (1B words) |",
           "|---|---|---|---|---|"]
    for name, paper_name in (("adaptive", "adaptive_softmax"),
                             ("adaptive_sigsoftmax", "adaptive_sigsoftmax")):
        rs = runs[name]
        ours = mean_std([res[r.dir]["ppl"][("finetune", "test")] for r in rs
                          if ("finetune", "test") in res[r.dir]["ppl"]])
        mean, std = paper.get((paper_name, "test_ppl")), paper.get((paper_name, "test_ppl_std"))
        theirs = "-" if mean is None else f"{mean:.2f}" + ("" if std is None else f" ± {std:.2f}")
        w = rs[0].head if rs else name
        out.append(f"| {name} | {w} | {len(rs)} | {ours} | {theirs} |")
    out.append("")
    return out


def _ppl_section(heads, by_head, res, paper_ppl, proxy: bool, config: dict) -> list[str]:
    """Tables 1 and 2's analog: perplexity per head and stage beside the paper's."""
    out = []
    w = out.append
    w("## Perplexity (Tables 1 and 2 analog)\n")
    w("train = the best model of the main phase (before finetuning), valid and test with batch "
      "size 1 (score.json); finetune = after ASGD finetuning, valid with the evaluation batch "
      "size (final.json) and test with batch size 1 (the dump); dyneval = after dynamic "
      "evaluation. Ours: mean ± std over seeds (sample std) "
      "where there are several. Paper: mean ± std over 10 seeds (mixtures 5), PTB/WT2 at full "
      "scale, `results/paper/paper_results.csv`.\n")
    w("| head | source | seeds | " + " | ".join(f"{s} {sp}" for s, sp in STAGES) + " |")
    w("|---|---|---|" + "---|" * len(STAGES))
    for h in heads:
        rs = by_head[h]
        cells = [mean_std([res[r.dir]["ppl"][k] for r in rs if k in res[r.dir]["ppl"]])
                 for k in STAGES]
        w(f"| {h} | ours | {len(rs)} | " + " | ".join(cells) + " |")
        name = rs[0].name
        if any((name, s, sp) in paper_ppl for s, sp in STAGES):
            pc = [plus_minus(*paper_ppl[(name, s, sp)])
                  if (name, s, sp) in paper_ppl else "-" for s, sp in STAGES]
            source = "paper (not comparable: proxy)" if proxy else "paper"
            w(f"| {h} | {source} | 10 | " + " | ".join(pc) + " |")
    w("")
    if proxy:
        w(f"**Not comparable with the paper's perplexities:** these models trained on the "
          f"proxy of a corpus without its training split (`train_split = \"valid\"`: the "
          f"validation split's first nine tenths, docs/protocol.md, \"The WikiText-2 proxy\"), "
          f"over a vocabulary padded to M = {config.get('vocab_size')}; "
          f"the paper's trained on the full training split. The ranks below are measured at the "
          f"paper's T x M.\n")
    return out


def _paired_sections(by_name, res) -> list[str]:
    """The paper's tests (Kanai et al. 2018, Tables 1 and 2): softmax vs sigsoftmax, MoS vs
    MoSS, and the adaptive pair, paired t per stage."""
    out = []
    w = out.append
    for a_name, b_name in (("softmax", "sigsoftmax"), ("mos", "moss"),
                           ("adaptive", "adaptive_sigsoftmax")):
        a_runs, b_runs = by_name(a_name), by_name(b_name)
        if not a_runs and not b_runs:
            continue
        a_label = a_runs[0].head if a_runs else a_name
        b_label = b_runs[0].head if b_runs else b_name
        ppl_a = {r.seed: res[r.dir]["ppl"] for r in a_runs}
        ppl_b = {r.seed: res[r.dir]["ppl"] for r in b_runs}
        lines = []
        for key in STAGES:
            seeds = [s for s in ppl_a if s in ppl_b and key in ppl_a[s] and key in ppl_b[s]]
            if len(seeds) >= 2:
                a = [ppl_a[s][key] for s in seeds]
                b = [ppl_b[s][key] for s in seeds]
                diff, (lo, hi), t, p = paired_t_test(a, b)
                lines.append(f"| {key[0]} {key[1]} | {len(seeds)} | {diff:+.2f} | "
                             f"[{lo:+.2f}, {hi:+.2f}] | {t:.3f} | {p:.3g} |")
        if lines:
            w(f"Paired t-test, {a_label} vs {b_label} over the same seeds (the paper's test; "
              f"`scipy.stats.ttest_rel`, two-sided; difference = {a_label} - {b_label} "
              "perplexity, with its 95% t interval):\n")
            w("| stage | seeds | mean difference | 95% CI | t | p |")
            w("|---|---|---|---|---|---|")
            out.extend(lines)
        else:
            w(f"Paired t-test {a_label} vs {b_label}: not computed (needs >= 2 seeds of both).")
        w("")
    return out


def _rank_section(profile, heads, by_head, res, paper_rank) -> list[str]:
    """Table 3's analog: every analysed run's rank against its bound, and the spectra plot."""
    out = []
    w = out.append
    w("## Numerical rank of the test-set log-output matrix (Table 3 analog)\n")
    w("Rank = #{sigma > tol}, tol = 0.5 sqrt(M + T + 1) sigma_max eps (Numerical Recipes), eps of "
      "the dump's compute dtype; numpy rank = numpy.linalg.matrix_rank's default tol. Bound = d + 2 "
      "(decoder bias; the adaptive heads: d + 1 + (tail clusters) + 1, docs/protocol.md). Paper: d = 400, bound 402, full PTB/WT2 (`results/paper/paper_ranks.csv`).\n")
    n_analysed = int(profile.analysis.get("seeds", 0))
    if n_analysed:
        w(f"The full test set of the first {n_analysed} seed(s) of every head (profile "
          "`analysis.seeds`); every seed's rank on the first test rows is in [Rank during "
          "training](#rank-during-training).\n")
    w("| head | seed | M | T | d | bound | rank | numpy rank | verdict | bounded (Theorem 2 or adaptive) | "
      "tol | eps | sigma_b / sigma_b+1 | method | paper rank |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for h in heads:
        for r in by_head[h]:
            k = res[r.dir]["rank"]
            if not k and not profile.analysed(r):
                continue  # the profile analyses the full test set of the first seeds only
            if not k:
                w(f"| {h} | {r.seed} | " + " | ".join(["-"] * 13) + " |")
                continue
            # rank_numpy and spectral_gap are null in a --rank-only result (no spectrum).
            rank_np = "-" if k.get("rank_numpy") is None else k["rank_numpy"]
            gap = "-" if k.get("spectral_gap") is None else f"{k['spectral_gap']:.3g}"
            w(f"| {h} | {r.seed} | {k['M']} | {k['T']} | {k['d']} | {k['bound']} | "
              f"**{rank_text(k)}** | "
              f"{rank_np} | {k['verdict']} | "
              f"{'yes' if k['theorem2_bounded'] else 'no'} | {k['tol']:.3e} | {k['eps']:.3g} | "
              f"{gap} | {k['method']} | {paper_rank.get(r.name, '-')} |")
    w("")
    out.extend(_plot_lines(profile, [r for h in heads for r in by_head[h]], res))
    return out


def _plot_lines(profile, runs, res) -> list[str]:
    """The spectra plot, or, where the plot stage has not drawn it (a head's spectrum is not in
    this checkout: a committed result, or a count made by a path that kept no spectrum file),
    which heads lack theirs: never a link to a file that is not there. The heads are the plot
    stage's (run_outputs.plotted_runs) that have a rank."""
    if os.path.exists(os.path.join(profile.out, "singular_values.png")):
        return ["![singular values](singular_values.png)\n",
                "Singular values of every head's log-output matrix (first seed; supplementary "
                "Figure 1 analog): `singular_values.png`, `singular_values.svg`.\n"]
    firsts = [r for r in plotted_runs(profile, runs) if res[r.dir]["rank"]]
    if not firsts:
        return []  # no head has a rank: nothing to draw
    absent = [r.head for r in firsts if not os.path.exists(os.path.join(r.dir, "logprobs.rank.h5"))]
    why = (f"no spectrum file (logprobs.rank.h5) in this checkout for {', '.join(absent)}; "
           "the plot stage draws it once every head's analyse stage has written one" if absent else
           "the plot stage has not run yet")
    return [f"Singular values of every head (supplementary Figure 1 analog): not drawn: {why}.\n"]


def write_summary(profile, runs, global_timings: dict) -> str:
    """results/<profile>/summary.md of a word-LM profile: its header, perplexities and the paired
    tests, Table 4, ranks, findings, rank during training, training speed and wall times."""
    res = {r.dir: run_results(r, profile.trainer) for r in runs}
    heads = list(dict.fromkeys(r.head for r in runs))
    by_head = {h: [r for r in runs if r.head == h] for h in heads}
    first = next((res[r.dir]["rank"] for r in runs if res[r.dir]["rank"]), {})
    # the paper's CSVs say "wt2" for the corpus the trainers call "wikitext-2"
    dataset = PAPER_DATASET.get(first.get("dataset", "ptb"), first.get("dataset", "ptb"))
    config = run_config(runs[0].dir) or {}
    paper_ppl = {(r["head"], r["stage"], r["split"]): (float(r["ppl_mean"]), float(r["ppl_std"]))
                 for r in paper_csv("paper_results.csv") if r["dataset"] == dataset}
    paper_rank = {r["head"]: int(r["rank"]) for r in paper_csv("paper_ranks.csv")
                  if r["dataset"] == dataset}

    def by_name(name: str) -> list:
        return next((rs for h, rs in by_head.items() if rs[0].name == name), [])

    out = []
    w = out.append
    profile_header(w, profile)
    w(f"**Our setting:** {_setting(profile, runs)}\n")
    w(f"**Machine:** {machine_line()}.\n")
    out.extend(_ppl_section(heads, by_head, res, paper_ppl,
                            config.get("train_split") == "valid", config))
    out.extend(_paired_sections(by_name, res))
    out.extend(table4_section(by_name, res))
    out.extend(_rank_section(profile, heads, by_head, res, paper_rank))
    out.extend(findings_section(runs, res, float(profile.dyneval.get("predicted_gain", 0.0))))
    out.extend(rank_vs_epoch_section(profile, runs))
    out.extend(speed_section(heads, by_head))
    w("## Wall time of every stage\n")
    names = ["train", "finetune", "dump", "score", "dyneval", "analyse", "epoch_ranks"]
    w("| run | " + " | ".join(names) + " | total |")
    w("|---|" + "---|" * (len(names) + 1))
    wall_time_rows(w, runs, lambda r: res[r.dir]["stages"], names, global_timings)
    return write_markdown(os.path.join(profile.out, "summary.md"), out)

