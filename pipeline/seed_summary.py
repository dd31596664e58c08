"""results/<profile>/summary.md for the seed papers' profiles: our test perplexity (trainer nplm:
de Brebisson & Vincent 2016, Table 5; write_nplm_summary) or bits per character (trainer charlm:
Kanai et al. 2018, supplementary Table 3; write_charlm_summary) beside the paper's, and the
numerical rank of each head's test dump against Theorem 2's bound. The two share everything but
the setting line and the first table. A trainer kind the pipeline has no report for
(trainer_kinds.REPORTS) gets write_generic_summary: its config keys as the setting and the
losses and perplexities its final.json section records. Reads only what the runs wrote (final.json through
final_json.py, rank.json, stages.json, config.toml) and results/paper/other_seed_results.csv.
"""

from __future__ import annotations

import math
import os
import statistics
from typing import Callable

from final_json import read_final, section
from report_tables import (machine_line, mean_std, paper_csv, profile_header,
                           wall_time_rows, write_markdown)
from run_outputs import read_json, stages_of
from run_config import run_config


def _paper(paper: str, dataset: str) -> dict[tuple[str, str], float]:
    return {(r["head"], r["metric"]): float(r["value"]) for r in
            paper_csv("other_seed_results.csv") if r["paper"] == paper and r["dataset"] == dataset}


def _bpc(xs: list[float]) -> str:
    """Bits per character: three decimals, mean ± sample std over seeds."""
    if not xs:
        return "-"
    if len(xs) == 1:
        return f"{xs[0]:.3f}"
    return f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs):.3f}"


def _nplm_setting(c: dict, threads: int) -> str:
    return (f"{c.get('dataset')}: feed-forward LM, context {c.get('context')}, embeddings "
            f"{c.get('emsize')}, {c.get('layers')} x {c.get('hidden')} ReLU (d = "
            f"{c.get('hidden')}), plain SGD lr {c.get('lr')} (x {c.get('lr_decay')} after an "
            f"epoch that is not the best), batch {c.get('batch_size')}, {c.get('epochs')} "
            f"epochs, train tokens {c.get('train_tokens') or 'all'}"
            + (f", a {c['classes']}-class task (the next word among the {c['classes']} most "
               "frequent)" if c.get("classes") else "") + ", dump rows "
            f"{c.get('dump_rows') or 'all'}, {threads} threads.")


def _charlm_setting(c: dict, threads: int) -> str:
    return (f"{c.get('dataset')} characters: {c.get('nlayers')}-layer LSTM, {c.get('nhid')} units "
            f"(d = {c.get('nhid')}), embeddings {c.get('emsize')}, Adam lr {c.get('lr')}, batch "
            f"{c.get('batch_size')}, BPTT {c.get('bptt')}, {c.get('epochs')} epochs, train "
            f"symbols {c.get('train_chars') or 'all'}, {threads} threads.")


def _rank_cells(rank: dict) -> list[str]:
    if not rank:
        return ["-"] * 7
    gap = rank.get("spectral_gap")
    gap_text = "-" if gap is None or (isinstance(gap, float) and math.isnan(gap)) else f"{gap:.3g}"
    np_rank = rank.get("rank_numpy")
    return [str(rank.get("T", "-")), str(rank.get("bound", "-")), f"**{rank.get('rank', '-')}**",
            "-" if np_rank is None else str(np_rank), str(rank.get("verdict", "-")),
            "yes" if rank.get("theorem2_bounded") else "no", gap_text]


class _MetricTable:
    """A trainer's result table: a title, the text under it, one row per head with its seed
    count, fmt(the seeds' values) per metric of final.json, then the paper's figure per key of
    results/paper/other_seed_results.csv ("-" where the paper has none)."""

    def __init__(self, paper: tuple[str, str], title: str, text: str, columns: tuple[str, ...],
                 metrics: tuple[str, ...], fmt, paper_keys: tuple[str, ...]):
        self.paper, self.title, self.text, self.columns = paper, title, text, columns
        self.metrics, self.fmt, self.paper_keys = metrics, fmt, paper_keys

    def __call__(self, w, heads, by_head, final) -> None:
        paper = _paper(*self.paper)
        w(f"## {self.title}\n")
        w(self.text + "\n")
        w("| " + " | ".join(("head", "seeds") + self.columns) + " |")
        w("|" + "---|" * (2 + len(self.columns)))
        for h in heads:
            rs = by_head[h]
            ours = [self.fmt([final[id(r)][m] for r in rs if final[id(r)]]) for m in self.metrics]
            theirs = ["-" if p is None else f"{p}" for p in (paper.get((rs[0].name, k))
                                                             for k in self.paper_keys)]
            w("| " + " | ".join([h, str(len(rs)), *ours, *theirs]) + " |")


_nplm_table = _MetricTable(
    ("spherical", "ptb_nplm"), "Test perplexity (de Brebisson & Vincent 2016, Table 5 analog)",
    "Ours: the best model by validation loss, every valid / test token predicted from its "
    "context (mean ± sample std over seeds where there are several). Paper: PTB at full "
    "scale, layer sizes tuned per head (softmax 2 x 809, spherical 3 x 1264, Taylor "
    "3 x 1427), `results/paper/other_seed_results.csv`.",
    ("valid ppl", "test ppl", "paper test ppl"), ("valid_ppl", "test_ppl"), mean_std, ("ppl",))

_charlm_table = _MetricTable(
    ("sigsoftmax", "text8"), "Bits per character (Kanai et al. 2018, supplementary Table 3 analog)",
    "Ours: PTB spelled as characters (M symbols), the best model by validation loss; valid "
    "with the evaluation batch size, test with batch size 1 over every test symbol (the "
    "dump). Paper: text8 (M = 27), one 1024-unit LSTM, `results/paper/"
    "other_seed_results.csv`: a different corpus, so compare the softmax-sigsoftmax "
    "difference, not the values.",
    ("valid bpc", "test bpc", "paper valid bpc (text8)", "paper test bpc (text8)"),
    ("valid_bpc", "test_bpc"), _bpc, ("valid_bpc", "test_bpc"))


def _generic_setting(c: dict, threads: int) -> str:
    keys = ", ".join(f"{k} = {v}" for k, v in c.items() if not isinstance(v, dict) and
                     v not in ("", None))
    return f"{keys}; {threads} threads."


# The metrics a trainer's final.json section may hold, in the order the generic table shows them.
_GENERIC_METRICS = ("valid_loss", "valid_ppl", "test_loss", "test_ppl", "test_bpc",
                    "test_error_pct")


def _generic_table(w, heads, by_head, final) -> None:
    metrics = [m for m in _GENERIC_METRICS if any(final[id(r)].get(m) is not None for r in
                                                   (r for h in heads for r in by_head[h]))]
    w("## Test metrics\n")
    w("What each run's final.json records (mean ± sample std over seeds where there are "
      "several).\n")
    w("| head | seeds | " + " | ".join(metrics) + " |")
    w("|---|---|" + "---|" * len(metrics))
    for h in heads:
        rs = by_head[h]
        cells = [mean_std([final[id(r)][m] for r in rs if final[id(r)].get(m) is not None])
                 for m in metrics]
        w(f"| {h} | {len(rs)} | " + " | ".join(cells) + " |")


def _write(profile, runs, global_timings: dict, setting: Callable, table: Callable) -> str:
    """summary.md with the trainer's setting line (setting(config, threads)) and first table
    (table(w, heads, runs by head, each run's final.json section))."""
    heads = list(dict.fromkeys(r.head for r in runs))
    by_head = {h: [r for r in runs if r.head == h] for h in heads}
    final = {}
    for r in runs:
        f = read_final(os.path.join(r.dir, "final.json"), profile.trainer)
        final[id(r)] = section(f) if f else {}
    rank = {id(r): read_json(os.path.join(r.dir, "rank.json")) or {} for r in runs}
    out: list[str] = []
    w = out.append
    profile_header(w, profile)
    config = run_config(runs[0].dir)
    threads = profile.threads or os.cpu_count()
    w("**Our setting:** " +
      ("(no config.toml yet)" if config is None else setting(config, threads)) + "\n")
    w(f"**Machine:** {machine_line()}.\n")
    table(w, heads, by_head, final)
    w("")

    w("## Numerical rank of the test log-output matrix\n")
    w("Rank = #{sigma > tol}, tol = 0.5 sqrt(M + T + 1) sigma_max eps (Numerical Recipes, float32 "
      "eps), from `rank_analysis --check`; bound = d + 2 (Theorem 2 with a decoder bias). "
      "`bound_not_binding`: the bound is not below min(M, T), so Theorem 2 allows any rank. "
      "Theorem 2 bounds softmax only: softmax_abs, spherical, Taylor and sigsoftmax may exceed "
      "the bound.\n")
    w("| head | seed | M | d | T | bound | rank | numpy rank | verdict | Theorem 2 bounds it | "
      "sigma_b / sigma_b+1 |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        k = rank[id(r)]
        w(f"| {r.head} | {r.seed} | {k.get('M', '-')} | {k.get('d', '-')} | " +
          " | ".join(_rank_cells(k)) + " |")
    if os.path.exists(os.path.join(profile.out, "singular_values.png")):
        w("\nSingular values of each head's dump (first seed): `singular_values.png`, "
          "`singular_values.svg`.\n")
    else:
        w("\nSingular values: no plot in this checkout (the plot stage reads the first seed's "
          "spectra, `logprobs.rank.h5`, which runs made before they were committed lack; "
          f"`make reproduce PROFILE={profile.name}` writes them).\n")

    w("## Wall time of every stage\n")
    w("| run | train (+ evaluation and dump) | analyse | total |")
    w("|---|---|---|---|")
    wall_time_rows(w, runs, lambda r: stages_of(r.dir),
                   ("train", "analyse"), global_timings)
    return write_markdown(os.path.join(profile.out, "summary.md"), out)


def _nplm_or_classes_table(w, heads, by_head, final) -> None:
    """Table 5's perplexities for the LM; for a C-class task (classes > 0: the sparse profile)
    the generic table, whose test_error_pct is the task's measure."""
    if any((final[id(r)] or {}).get("classes") for h in heads for r in by_head[h]):
        _generic_table(w, heads, by_head, final)
    else:
        _nplm_table(w, heads, by_head, final)


def write_nplm_summary(profile, runs, global_timings: dict) -> str:
    """summary.md of a train_nplm profile (trainer_kinds.py: nplm's report)."""
    return _write(profile, runs, global_timings, _nplm_setting, _nplm_or_classes_table)


def write_charlm_summary(profile, runs, global_timings: dict) -> str:
    """summary.md of a train_charlm profile (trainer_kinds.py: charlm's report)."""
    return _write(profile, runs, global_timings, _charlm_setting, _charlm_table)


def write_generic_summary(profile, runs, global_timings: dict) -> str:
    """summary.md of a trainer kind without a report of its own (trainer_kinds.GENERIC_REPORT)."""
    return _write(profile, runs, global_timings, _generic_setting, _generic_table)
