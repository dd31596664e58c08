"""One table of the three papers' claims, each row tested by the test its wording asks for and its
verdict computed from the numbers in it (issue 1/5):

    /usr/bin/python3 pipeline/claims.py [--results results] [--out results/claims.md]

The tests and their rules are pipeline/claim_tests.py's (directional, equivalence, non-inferiority,
count, mechanism); a row names the test it used. The rows: claims_sigsoftmax.py (Kanai et al.
2018, with its supplementary) and claims_others.py (de Brebisson & Vincent 2016, the spherical
family; Sun et al. 2021, sparse top-k softmax). A claim the suite cannot test here still has a row,
"not attempted (why)". Each row names the results directory and the commit its runs were made at;
a directory whose runs record no commit says so.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_errors import EXIT_BAD_INPUT, EXIT_OK  # noqa: E402
from atomic_io import write_text_atomically  # noqa: E402
import claim_tests  # noqa: E402
import provenance  # noqa: E402
from final_json import read_final, section  # noqa: E402


@dataclass
class Row:
    claim: str
    paper: str            # the paper's figure, with its dataset and scale
    ours: str = "-"       # our figures, with our dataset and scale where they differ
    test: str = "-"       # the test the claim's wording asks for (claim_tests.py)
    n: int | None = None  # paired seeds
    effect: float | None = None
    ci: tuple[float, float] | None = None
    p: float | None = None
    p_sign: float | None = None
    verdict: str = ""
    source: str = "-"     # results directory (commit)


def judged(claim: str, paper: str, ours: str, v: claim_tests.Verdict, source: str) -> Row:
    """A row from a test's Verdict; the test's note joins our figures."""
    return Row(claim, paper, ours + (f"; {v.note}" if v.note else ""), v.test, v.n, v.effect,
               v.ci, v.p, v.p_sign, v.verdict, source)


def not_attempted(claim: str, paper: str, why: str, source: str = "-", ours: str = "-") -> Row:
    return Row(claim, paper, ours, verdict=f"not attempted ({why})", source=source)


def commit_of(directory: str) -> str:
    """The commit(s) a results directory's summary.md says its runs were made at ('Runs made
    at'), else the commit its tables were written at (older summaries); '?' when none."""
    try:
        with open(os.path.join(directory, "summary.md")) as f:
            text = f.read()
    except OSError:
        return "?"
    runs = re.search(r"\*\*Runs made at:\*\* (.*)", text)
    if runs:
        commits = re.findall(r"\b[0-9a-f]{7,40}\b", runs.group(1))
        if commits:
            dirty = " (with uncommitted changes)" if "uncommitted" in runs.group(1) else ""
            return ", ".join(commits) + dirty
    m = re.search(r"commit ([0-9a-f]{7,40}( \(with uncommitted changes\))?)", text)
    return m.group(1) if m else "?"


def shown(directory: str) -> str:
    """A results directory as the table names it: a link to its summary.md (relative to
    results/, where claims.md lives) with the commit the summary records; before its tables are
    written, the commits its runs' stages.json record (provenance.runs_made_at)."""
    name = os.path.basename(os.path.normpath(directory))
    if os.path.exists(os.path.join(directory, "summary.md")):
        commit = commit_of(directory)
        mark = " **not from a clean commit**" if "uncommitted" in commit else ""
        return f"[results/{name}]({name}/summary.md) ({commit}){mark}"
    runs = [os.path.join(directory, e) for e in sorted(os.listdir(directory))] \
        if os.path.isdir(directory) else []
    made = provenance.runs_made_at(runs)
    return f"results/{name} (runs at " + (", ".join(f"{c}: {n}" for c, n in made.items()) or
                                          "?") + ")"


def by_seed(directory: str, label: str, read) -> dict[int, float]:
    """{seed: read(run directory)} over <directory>/<label>_s<seed>, where read gives a number or
    None (a run without it is left out)."""
    out = {}
    if not os.path.isdir(directory):
        return out
    for name in os.listdir(directory):
        m = re.fullmatch(re.escape(label) + r"_s(\d+)", name)
        if m:
            x = read(os.path.join(directory, name))
            if x is not None:
                out[int(m.group(1))] = float(x)
    return out


def final_key(trainer: str, key: str):
    """A reader for by_seed: the trainer section's `key` of final.json."""
    def read(run: str):
        final = read_final(os.path.join(run, "final.json"), trainer)
        return None if final is None else section(final).get(key)
    return read


def json_key(filename: str, *path: str):
    """A reader for by_seed: the value at `path` in <run>/<filename>."""
    def read(run: str):
        try:
            with open(os.path.join(run, filename)) as f:
                x = json.load(f)
            for k in path:
                x = x[k]
            return x
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return read


def metric_by_seed(directory: str, label: str, trainer: str, key: str) -> dict[int, float]:
    return by_seed(directory, label, final_key(trainer, key))


def pairs(a: dict[int, float], b: dict[int, float]) -> tuple[list[int], list[float], list[float]]:
    seeds = sorted(set(a) & set(b))
    return seeds, [a[s] for s in seeds], [b[s] for s in seeds]


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def paper_figure(results: str, head: str, dataset: str = "ptb",
                 stage: str = "finetune", split: str = "test", column: int = 4) -> float | None:
    """The paper's mean (column 4) or its seed standard deviation (column 5) for a head, a stage
    and a split, from results/paper/paper_results.csv."""
    with open(os.path.join(results, "paper", "paper_results.csv")) as f:
        for line in f:
            cells = line.strip().split(",")
            if cells[:4] == [dataset, head, stage, split] and len(cells) > column:
                return float(cells[column])
    return None


def fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


HEADER = ("| claim | paper (data, scale) | ours (data, scale) | test | n | effect [CI] | p | "
          "sign p | verdict | source |")


def markdown(sections: list[tuple[str, list[Row]]], thesis: str = "") -> str:
    lines = ["# The papers' claims, tested at this suite's scale", "",
             "Written by `/usr/bin/python3 pipeline/claims.py` (`make claims`) from the committed "
             "results. Each row is tested by the test its wording asks for "
             "(pipeline/claim_tests.py: **directional** \"A is better\": paired t, 95% CI; "
             "**equivalence** \"A and B tie\": TOST against a margin stated first, 90% CI; "
             "**non-inferiority** \"A is no worse\": one-sided against a margin; **count**: a "
             "certified rank window against the bound; **mechanism**: the gain where the "
             "bottleneck binds against the gain where it cannot, paired by seed). Effect: (the "
             "head the paper says is worse) - (the one it says is better), so > 0 is the paper's "
             "side; p: the test's; sign: sign test. Scale: every row says its data and model; "
             "ours are scaled down (each profile's summary says how) and not comparable in size "
             "to the paper's figure beside them.", ""] + ([thesis, ""] if thesis else [])
    for title, table in sections:
        lines += [f"## {title}", "", HEADER, "|---|---|---|---|---|---|---|---|---|---|"]
        for r in table:
            if any("|" in str(c) for c in (r.claim, r.paper, r.ours, r.test, r.verdict)):
                raise ValueError(f"a '|' in the row '{r.claim}' would split its table cell")
            effect = "-" if r.effect is None else (
                fmt(r.effect) + ("" if r.ci is None else f" [{fmt(r.ci[0])}, {fmt(r.ci[1])}]"))
            lines.append(f"| {r.claim} | {r.paper} | {r.ours} | {r.test} | "
                         f"{r.n if r.n else '-'} | {effect} | {fmt(r.p, 2)} | {fmt(r.p_sign, 2)} "
                         f"| {r.verdict} | {r.source} |")
        lines.append("")
    return "\n".join(lines)


def sections(results: str) -> list[tuple[str, list[Row]]]:
    import claims_others
    import claims_sigsoftmax
    import claims_transformer
    return claims_sigsoftmax.sections(results) + claims_others.sections(results) + [
        ("This suite's question: the bottleneck in a Transformer LM (issue 5/5)",
         claims_transformer.rows(results))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="results")
    ap.add_argument("--out", default=None, help="write here (atomically) instead of stdout")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.results, "paper", "paper_results.csv")):
        print(f"claims.py: {args.results}/paper/paper_results.csv: missing (expected the "
              "committed results/ directory)", file=sys.stderr)
        return EXIT_BAD_INPUT
    import claims_controls
    import claims_transformer
    text = markdown(sections(args.results), claims_controls.thesis(args.results) + "\n\n" +
                    claims_controls.tie(args.results) + "\n\n" +
                    claims_transformer.finding(args.results))
    if args.out:
        write_text_atomically(args.out, text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
