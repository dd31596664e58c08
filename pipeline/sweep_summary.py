"""<out>/summary.md of a profile with a [sweep] (the d-sweep, pipeline/profiles/dsweep.toml): test
perplexity and rank against the swept value for every head, the paired gap between the first two
heads at each value, and whether that gap grows as the value shrinks, the softmax bottleneck's
prediction when the value is d (Yang et al. 2018; Kanai et al. 2018, Theorem 2: softmax's
log-output rank is at most d + 1, so a smaller d costs softmax more than a head without the cap).

The finding is computed, never typed: per seed s and value v, gap(v, s) = ppl(heads[0]) -
ppl(heads[1]); an ordinary least-squares line gap = a + b log2(v) over every (v, s) pair, with b's
95% t interval (n - 2 degrees of freedom) and two-sided p. b < 0 with the interval below 0: "the
gap grows as <key> shrinks"; above 0: "the gap shrinks as <key> shrinks"; otherwise "no trend
detected". Also written to <out>/sweep_findings.json for the claims table (claims.py).

A second line, added after the first seed's results and not part of the profile's prediction:
the same fit over the gap in test cross-entropy, ln ppl(heads[0]) - ln ppl(heads[1]) nats per
token (the relative gap). Perplexity rises as d shrinks, so a constant relative advantage alone
makes the absolute gap grow; the cross-entropy gap separates the two ("log_trend",
"log_finding").
"""
from __future__ import annotations

import math
import os
import statistics

from atomic_io import save_figure_pair, write_json_atomically
from final_json import read_final, section
from report_tables import (machine_line, profile_header, rank_text, rank_window, wall_time_rows,
                           write_markdown)
from run_outputs import read_json, stages_of


def t_interval(xs: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95% t interval of the mean; the bounds are nan below 2 values."""
    from scipy import stats
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan, math.nan
    half = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - half, m + half


def paired(a: list[float], b: list[float]) -> dict:
    """a - b by pair: mean, 95% CI, the paired t-test's p (nan below 2 pairs)."""
    from scipy import stats
    diff = [x - y for x, y in zip(a, b)]
    m, lo, hi = t_interval(diff)
    p = float(stats.ttest_rel(a, b).pvalue) if len(diff) >= 2 and statistics.stdev(diff) > 0 \
        else math.nan
    return {"n": len(diff), "mean": m, "ci": [lo, hi], "p": p}


def trend(points: list[tuple[float, float]]) -> dict:
    """OLS of y on log2(x) over (x, y) points: slope, its 95% t interval and p (n - 2 df)."""
    from scipy import stats
    xs = [math.log2(x) for x, _ in points]
    ys = [y for _, y in points]
    if len(set(xs)) < 2 or len(points) < 3:
        return {"n": len(points), "slope": math.nan, "ci": [math.nan, math.nan], "p": math.nan}
    fit = stats.linregress(xs, ys)
    half = stats.t.ppf(0.975, len(points) - 2) * fit.stderr
    return {"n": len(points), "slope": float(fit.slope),
            "ci": [float(fit.slope - half), float(fit.slope + half)], "p": float(fit.pvalue)}


def finding(t: dict, key: str) -> str:
    lo, hi = t["ci"]
    if not (lo == lo and hi == hi):
        return "not enough runs"
    if hi < 0:
        return f"the gap grows as {key} shrinks"
    if lo > 0:
        return f"the gap shrinks as {key} shrinks"
    return "no trend detected"


def test_ppl(sec: dict) -> float | None:
    """A run's test perplexity per predicted symbol: the word LM's test_ppl; a trainer that gives
    the test cross-entropy instead (the char LM's test_loss, nats per character) exp of it."""
    if sec.get("test_ppl") is not None:
        return float(sec["test_ppl"])
    if sec.get("test_loss") is not None:
        return math.exp(float(sec["test_loss"]))
    return None


def collect(profile, runs) -> dict:
    """ppl[(head, value)][seed] and rank[(head, value)] (the first analysed seed) from the runs."""
    key = profile.sweep["key"]
    ppl: dict[tuple[str, object], dict[int, float]] = {}
    rank: dict[tuple[str, object], dict] = {}
    for r in runs:
        v = r.setting[key]
        final = read_final(os.path.join(r.dir, "final.json"), profile.trainer)
        test = test_ppl(section(final)) if final else None
        if test is not None:
            ppl.setdefault((r.head, v), {})[r.seed] = test
        rj = read_json(os.path.join(r.dir, "rank.json")) or {}
        if "rank" in rj and (r.head, v) not in rank:
            rank[(r.head, v)] = rj
    return {"ppl": ppl, "rank": rank}


def findings(profile, runs) -> dict:
    """Every number of the report, by value: the heads' ppl intervals, the paired gap of the first
    two heads, their ranks; and the trend of the gap against log2(value)."""
    key, values = profile.sweep["key"], profile.sweep["values"]
    data = collect(profile, runs)
    a, b = profile.heads[0], profile.heads[1]
    per_value, points, log_points = [], [], []
    for v in values:
        row = {key: v, "heads": {}}
        for h in profile.heads:
            seeds = data["ppl"].get((h, v), {})
            m, lo, hi = t_interval(list(seeds.values())) if seeds else (math.nan,) * 3
            rk = data["rank"].get((h, v), {})
            # A count, or the certificate's open window lo..hi (never its midpoint as the rank).
            window = list(rank_window(rk)) if rk else None
            row["heads"][h] = {"n": len(seeds), "ppl": m, "ci": [lo, hi],
                               "rank": window[0] if window and window[0] == window[1] else None,
                               "rank_window": window, "rank_text": rank_text(rk) if rk else None,
                               "bound": rk.get("bound"), "verdict": rk.get("verdict")}
        pa, pb = data["ppl"].get((a, v), {}), data["ppl"].get((b, v), {})
        common = sorted(set(pa) & set(pb))
        row["gap"] = paired([pa[s] for s in common], [pb[s] for s in common])
        row["log_gap"] = paired([math.log(pa[s]) for s in common],
                                [math.log(pb[s]) for s in common])
        points += [(v, pa[s] - pb[s]) for s in common]
        log_points += [(v, math.log(pa[s]) - math.log(pb[s])) for s in common]
        per_value.append(row)
    t, lt = trend(points), trend(log_points)
    return {"key": key, "heads": [a, b], "gap": f"{a} - {b}", "values": per_value, "trend": t,
            "finding": finding(t, key), "log_trend": lt, "log_finding": finding(lt, key),
            "prediction": profile.prediction}


def _num(x, digits: int = 1) -> str:
    return "-" if x is None or (isinstance(x, float) and x != x) else f"{x:.{digits}f}"


def _p(p) -> str:
    return "-" if p is None or p != p else f"{p:.2g}"


def plot(profile, f: dict) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    key, values = f["key"], [row[f["key"]] for row in f["values"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for h in profile.heads:
        m = [row["heads"][h]["ppl"] for row in f["values"]]
        err = [[mm - row["heads"][h]["ci"][0] if row["heads"][h]["ci"][0] == row["heads"][h]["ci"][0]
                else 0 for mm, row in zip(m, f["values"])],
               [row["heads"][h]["ci"][1] - mm if row["heads"][h]["ci"][1] == row["heads"][h]["ci"][1]
                else 0 for mm, row in zip(m, f["values"])]]
        ax1.errorbar(values, m, yerr=err, marker="o", capsize=3, label=h)
        # each rank as its window: a count is a point, an open window a bar from lo to hi
        wins = [(v, row["heads"][h]["rank_window"]) for v, row in zip(values, f["values"])
                if row["heads"][h]["rank_window"]]
        if wins:
            mid = [(w[0] + w[1]) / 2 for _, w in wins]
            half = [(w[1] - w[0]) / 2 for _, w in wins]
            ax2.errorbar([v for v, _ in wins], mid, yerr=half, marker="o", capsize=3, label=h)
    bounds = [(v, row["heads"][profile.heads[0]]["bound"]) for v, row in zip(values, f["values"])
              if row["heads"][profile.heads[0]]["bound"] is not None]
    if bounds:
        ax2.plot(*zip(*bounds), "k--", lw=1, label=f"{profile.heads[0]}'s bound")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(values)
        ax.set_xticklabels([str(v) for v in values])
        ax.set_xlabel(key)
        ax.legend()
    ax1.set_ylabel("test perplexity (mean, 95% CI over seeds)")
    ax2.set_ylabel("numerical rank of the test log-outputs (first seed)")
    ax2.set_yscale("log")
    fig.suptitle(f"{profile.name} profile: {f['gap']} gap: {f['finding']}")
    fig.tight_layout()
    path = os.path.join(profile.out, "sweep")
    save_figure_pair(fig, path)
    return path + ".png"


def write_summary(profile, runs, global_timings: dict) -> str:
    f = findings(profile, runs)
    write_json_atomically(os.path.join(profile.out, "sweep_findings.json"), f)
    plot(profile, f)
    key = f["key"]
    out: list[str] = []
    w = out.append
    profile_header(w, profile)  # with the prediction
    t = f["trend"]
    w(f"**Finding (computed by pipeline/sweep_summary.py):** {f['finding']}: slope of the "
      f"{f['gap']} ppl gap against log2({key}) = {_num(t['slope'], 2)} per doubling, 95% CI "
      f"[{_num(t['ci'][0], 2)}, {_num(t['ci'][1], 2)}], p = {_p(t['p'])}, over {t['n']} "
      f"paired runs.\n")
    lt = f["log_trend"]
    w(f"**The same in cross-entropy** (added after the first seed's results, not part of the "
      f"prediction: ln ppl({f['heads'][0]}) - ln ppl({f['heads'][1]}), nats per token, which a "
      f"constant relative advantage keeps flat): {f['log_finding']}: slope "
      f"{_num(lt['slope'], 4)} per doubling, 95% CI [{_num(lt['ci'][0], 4)}, "
      f"{_num(lt['ci'][1], 4)}], p = {_p(lt['p'])}.\n")
    w("## Test perplexity and rank\n")
    w(f"| {key} | " + " | ".join(f"{h} ppl (95% CI), n | {h} rank" for h in profile.heads) +
      f" | {f['gap']} (95% CI) | p | cross-entropy gap, nats (95% CI) |")
    w("|---|" + "---|---|" * len(profile.heads) + "---|---|---|")
    for row in f["values"]:
        cells = []
        for h in profile.heads:
            c = row["heads"][h]
            cells.append(f"{_num(c['ppl'])} [{_num(c['ci'][0])}, {_num(c['ci'][1])}], {c['n']}")
            cells.append("-" if c["rank_text"] is None else
                         f"{c['rank_text']} (bound {c['bound']})")
        g, lg = row["gap"], row["log_gap"]
        w(f"| {row[key]} | " + " | ".join(cells) + f" | {_num(g['mean'])} [{_num(g['ci'][0])}, "
          f"{_num(g['ci'][1])}] | {_p(g['p'])} | {_num(lg['mean'], 4)} "
          f"[{_num(lg['ci'][0], 4)}, {_num(lg['ci'][1], 4)}] |")
    w("\n![ppl and rank against the swept value](sweep.png)\n")
    w(f"**Machine:** {machine_line()}.\n")
    w("## Wall time\n")
    names = list(profile.kind.stages) + (["score"] if profile.score_after_training else []) + \
        ["analyse"]
    w("| run | " + " | ".join(names) + " | total |")
    w("|---|" + "---|" * (len(names) + 1))
    wall_time_rows(w, runs, lambda r: stages_of(r.dir),
                   names, global_timings)
    return write_markdown(os.path.join(profile.out, "summary.md"), out)
