"""The sigsoftmax paper's controls and its thesis as rows of pipeline/claims.py:

- supplementary D's character-level tie (M < d: "no difference"), an equivalence test (TOST)
  against CHAR_TIE_MARGIN;
- the thesis, "sigsoftmax's gain comes from breaking the bottleneck" (sections 3-4), the mechanism
  test over results/mechanism (pipeline/profiles/mechanism.toml: the same char LM with d = 8,
  where the bottleneck binds, and d = 128, where it cannot; the prediction is in the profile);
- the d-sweep (results/dsweep): does the gap grow as d shrinks, in cross-entropy.
"""
from __future__ import annotations

import math
import os
import re
import statistics
import tomllib

import claim_tests as ct
from claims import Row, judged, mean, metric_by_seed, not_attempted, pairs, shown
from final_json import read_final, section

# The char tie's margin, in test bits per character: the paper reports 1.56 vs 1.56 bpc on
# text8 (supplementary D, two decimals), so its "no difference" resolves |gap| < 0.01 bpc. Stated
# in this file (issue 1/5) after results/char's runs were made; those runs were not re-made. The
# char-tie profile (pipeline/profiles/char-tie.toml) was written with it, before its runs: 64
# epochs, where the gap projected from results/char's 8 to 16 epochs is CHAR_TIE_PROJECTED_GAP,
# and the seed count power.tost_seeds_needed gives for it at results/char's spread.
CHAR_TIE_MARGIN = 0.01
CHAR_TIE_PROJECTED_GAP = 0.0035  # 0.0131 bpc (test, 16 epochs) x 4^-0.95 (validation's decay)
CHAR_TIE_PLANNING_GAP = 0.0043  # 0.0131 x 4^-0.8: the decay of epochs 14 -> 16, slower
CHAR_TIE_PLANNING_SD_FACTOR = 1.3  # the sd of three pairs is itself uncertain
MECHANISM_BIND, MECHANISM_FREE = 8, 128  # results/mechanism's latent values (d)
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiles")


def char_tie_row(results: str, profiles: str = PROFILES) -> Row:
    """TOST on the char-tie profile's runs (margin stated before them) once every seed it plans
    has run, else on the char profile's (margin stated after them), saying how many of the
    char-tie seeds are in."""
    claim = "no difference between softmax and sigsoftmax when M < d (supplementary D, a tie)"
    paper = "text8 (M = 27), 1 x 1024 LSTM: test bpc 1.56 vs 1.56"
    planned = len(profile_facts(os.path.join(profiles, "char-tie.toml"))["seeds"])
    runs = {name: char_pairs(os.path.join(results, name)) for name in ("char-tie", "char")}
    done = len(runs["char-tie"][0])
    later = f"; char-tie: {done} of {planned} seeds in" if done else ""
    for name, when, needed in (("char-tie", "stated before these runs (char-tie profile)",
                                planned), ("char", "stated after these runs" + later, 2)):
        d = os.path.join(results, name)
        seeds, xa, xb = runs[name]
        facts = profile_facts(os.path.join(profiles, name + ".toml"))
        if len(seeds) >= needed:
            ours = (f"PTB characters (M = 50, not text8), 1 x 128 LSTM, {facts['epochs']} "
                    f"epochs: softmax {mean(xa):.4g}, sigsoftmax {mean(xb):.4g} bpc (means); "
                    f"margin from the paper's two decimals, {when}")
            return judged(claim, paper, ours, ct.equivalence(xa, xb, CHAR_TIE_MARGIN), shown(d))
    return not_attempted(claim, paper, "fewer than 2 paired seeds in results/char and not every "
                         "seed of results/char-tie (`make reproduce PROFILE=char-tie`)")


def char_pairs(d: str) -> tuple[list[int], list[float], list[float]]:
    """(seeds, softmax bpc, sigsoftmax bpc) of a char LM profile's runs, paired by seed."""
    return pairs(metric_by_seed(d, "softmax", "charlm", "test_bpc"),
                 metric_by_seed(d, "sigsoftmax", "charlm", "test_bpc"))


def profile_facts(path: str) -> dict:
    """A profile's seeds and trained epochs (its override, else its config's), for the rows that
    say what they judge."""
    with open(path, "rb") as f:
        p = tomllib.load(f)
    with open(os.path.join(os.path.dirname(os.path.dirname(PROFILES)), p["config"]), "rb") as f:
        config = tomllib.load(f)
    return {"seeds": p["seeds"], "epochs": p.get("overrides", {}).get("epochs", config["epochs"])}


def mechanism_gains(results: str) -> tuple[list[int], list[float], list[float], int]:
    """(seeds, gain at d = 8, gain at d = 128, runs finished) from results/mechanism, where
    gain(d) = CE(softmax) - CE(sigsoftmax) in test nats per character, paired by seed."""
    d = os.path.join(results, "mechanism")
    gains = {}
    for latent in (MECHANISM_BIND, MECHANISM_FREE):
        seeds, soft, sig = pairs(
            metric_by_seed(d, f"softmax_latent{latent}", "charlm", "test_loss"),
            metric_by_seed(d, f"sigsoftmax_latent{latent}", "charlm", "test_loss"))
        gains[latent] = {s: a - b for s, a, b in zip(seeds, soft, sig)}
    seeds, bind, free = pairs(gains[MECHANISM_BIND], gains[MECHANISM_FREE])
    return seeds, bind, free, sum(len(g) for g in gains.values())


# The interaction the mechanism profile's seeds were planned to detect (pipeline/profiles/
# mechanism.toml: power 0.8 at alpha 0.05 against 0.01 nats/char).
MECHANISM_PLANNED_EFFECT = 0.01
MECHANISM_PLANNED_SD = 0.0046  # the interaction's sd the plan assumed


def thesis(results: str) -> str:
    """One sentence on the paper's thesis that follows from the mechanism row's verdict (the
    README's top section shows it with the claims table)."""
    seeds, bind, free, _ = mechanism_gains(results)
    if len(seeds) < 2:
        return ("**Is sigsoftmax's gain the rank?** Not yet tested here: `make reproduce "
                "PROFILE=mechanism` runs the control.")
    v = ct.mechanism(bind, free)
    f = ct.directional(free, [0.0] * len(free))
    nums = (f"gain {mean(bind):.3g} nats/char where the bottleneck binds (d = 8 < M = 50), "
            f"{mean(free):.3g} [{f.ci[0]:.3g}, {f.ci[1]:.3g}] where it cannot (d = 128); "
            f"difference {v.effect:.3g} [{v.ci[0]:.3g}, {v.ci[1]:.3g}], {len(seeds)} seeds")
    head = {"reproduced": "Yes, at this scale: the gain appears only where the bottleneck binds",
            "partly": "Only in part: the gain is larger where the bottleneck binds, but it is "
                      "there where no bottleneck can bind too",
            "contradicted": "No: the gain is smaller where the bottleneck binds",
            "not supported": "Not at this scale: sigsoftmax's gain is there where no "
                             "bottleneck can bind and is not detectably larger where one does",
            "undecided": "Undecided at this scale"}[v.verdict.split(" (")[0]]
    if v.ci[1] >= MECHANISM_PLANNED_EFFECT:
        # the interval is wider than the power calculation planned: say what it leaves open
        sd = statistics.stdev([b - f for b, f in zip(bind, free)])
        nums += (f"; an interaction as large as {v.ci[1]:.2g} is not excluded: the seeds were "
                 f"planned to detect {MECHANISM_PLANNED_EFFECT:g} at an sd of "
                 f"{MECHANISM_PLANNED_SD:g}, and the runs' sd is {sd:.2g}")
    return f"**Is sigsoftmax's gain the rank?** {head} ({nums}; the mechanism row below)."


def tie(results: str, profiles: str = PROFILES) -> str:
    """One sentence on supplementary D's tie that follows from the char tie row's verdict (the
    README's top section shows it beside the thesis): judged on the char-tie profile's runs only
    once all of them are in, as the row is."""
    question = "**Do softmax and sigsoftmax tie where no bottleneck exists (M = 50 < d = 128)?**"
    facts = profile_facts(os.path.join(profiles, "char-tie.toml"))
    planned = len(facts["seeds"])
    done = len(char_pairs(os.path.join(results, "char-tie"))[0])
    if done < planned:  # char_tie_row's rule: the char-tie runs only once all are in
        return (f"{question} Not yet decided on the runs planned for it: `make reproduce "
                f"PROFILE=char-tie` has {done} of its {planned} seeds in.")
    row = char_tie_row(results, profiles)
    head = {"reproduced (equivalent)": "Yes, within the margin stated before the runs",
            "contradicted (not equivalent)": "No: the gap lies outside the margin stated before "
                                             "the runs",
            "undecided": "Undecided: the interval crosses the margin stated before the runs"}[
        row.verdict]
    return (f"{question} {head} (softmax - sigsoftmax {row.effect:.3g} bpc, 90% CI "
            f"[{row.ci[0]:.3g}, {row.ci[1]:.3g}], margin +-{CHAR_TIE_MARGIN:g}, TOST p "
            f"{row.p:.2g}, {row.n} seeds of {facts['epochs']} epochs on PTB characters; the tie row "
            "below).")


def mechanism_row(results: str) -> Row:
    """gain(d) = CE(softmax) - CE(sigsoftmax) in test nats per character, per seed; the
    interaction gain(8) - gain(128) (claim_tests.mechanism)."""
    claim = "sigsoftmax's gain comes from breaking the bottleneck (the paper's thesis, sections " \
            "3-4): larger where the bottleneck binds (d = 8 < M = 50) than where it cannot " \
            "(d = 128 > M)"
    paper = "argued from Theorems 1-4 and Table 3 (no control run)"
    d = os.path.join(results, "mechanism")
    seeds, bind, free, done = mechanism_gains(results)
    if len(seeds) < 2:
        why = ("the mechanism profile has not been run: `make reproduce PROFILE=mechanism`, "
               "~80 min") if not done else \
            f"partly run: {done} paired seeds of both d finished; `make reproduce " \
            "PROFILE=mechanism` resumes"
        return not_attempted(claim, paper, why, shown(d) if os.path.isdir(d) else "-")
    ours = (f"PTB characters, one LSTM of 128 units, a linear map to d before the decoder, "
            f"4 epochs: gain (softmax - sigsoftmax) at d = {MECHANISM_BIND} {mean(bind):.3g}, at "
            f"d = {MECHANISM_FREE} {mean(free):.3g} nats/char (means)")
    return judged(claim, paper, ours, ct.mechanism(bind, free), shown(d))


def _sweep_runs(directory: str) -> dict[tuple[str, int], dict[int, float]]:
    """{(head, d): {seed: test cross-entropy}} of results/dsweep's runs."""
    out: dict[tuple[str, int], dict[int, float]] = {}
    if not os.path.isdir(directory):
        return out
    for name in os.listdir(directory):
        m = re.fullmatch(r"(\w+?)_emsize(\d+)_s(\d+)", name)
        final = read_final(os.path.join(directory, name, "final.json"), "wordlm") if m else None
        if final and section(final).get("test_ppl"):
            out.setdefault((m.group(1), int(m.group(2))), {})[int(m.group(3))] = \
                math.log(float(section(final)["test_ppl"]))
    return out


def _slope(points: list[tuple[float, float]]) -> ct.Verdict:
    """OLS slope of gap against log2(d), its 95% t interval (n - 2 df) and two-sided p, oriented
    so that > 0 means the gap grows as d shrinks."""
    from scipy import stats
    xs, ys = [math.log2(x) for x, _ in points], [y for _, y in points]
    fit = stats.linregress(xs, ys)
    half = stats.t.ppf(0.975, len(xs) - 2) * fit.stderr
    b = -fit.slope
    v = "reproduced" if fit.pvalue < ct.ALPHA and b - half > 0 else (
        "contradicted" if fit.pvalue < ct.ALPHA and b + half < 0 else "not significant")
    return ct.Verdict("OLS slope of the gap vs log2(d), 95% CI", v, len(xs), b,
                      (b - half, b + half), float(fit.pvalue))


def sweep_row(results: str) -> Row:
    claim = "softmax's gap to sigsoftmax grows as d shrinks (the bottleneck's cost; dsweep), in " \
            "test cross-entropy"
    d = os.path.join(results, "dsweep")
    runs = _sweep_runs(d)
    points, cells, worst = [], [], None
    for dim in sorted({k[1] for k in runs}):
        seeds, soft, sig = pairs(runs.get(("softmax", dim), {}), runs.get(("sigsoftmax", dim), {}))
        gaps = [a - b for a, b in zip(soft, sig)]
        points += [(dim, g) for g in gaps]
        if gaps:
            cells.append(f"d {dim}: {statistics.median(gaps):.3g}")
        for s, g in zip(seeds, gaps):
            if worst is None or abs(g) > abs(worst[2]):
                worst = (dim, s, g)
    if len(points) < 3:
        return not_attempted(claim, "Theorem 2 (no figure)", "the dsweep profile has not been "
                             "run: `make reproduce PROFILE=dsweep`, ~2.2 h")
    v = _slope(points)
    ours = "PTB, the cpu profile's model at d = emsize in {25, 50, 100, 200}: median gap " + \
        ", ".join(cells) + " nats"
    if worst is not None:
        rest = _slope([p for p in points if p != (worst[0], worst[2])])
        ours += (f"; the largest gap is one run (d {worst[0]}, seed {worst[1]}: {worst[2]:.3g}); "
                 f"without it the slope is {rest.effect:.3g} [{rest.ci[0]:.3g}, {rest.ci[1]:.3g}]"
                 f" (p {rest.p:.2g}), a sensitivity check, not the verdict")
    return judged(claim, "Theorem 2 (no figure)", ours, v, shown(d))


def sections_rows(results: str) -> list[Row]:
    return [mechanism_row(results), char_tie_row(results), sweep_row(results)]

