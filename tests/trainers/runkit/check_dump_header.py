#!/usr/bin/python3
"""A trainer's dump header is built in one place: runkit::ConfiguredTrainer::test_dump_header
(trainers/runkit/configured_trainer.h), over contract::make_header.

Usage: check_dump_header.py [ROOT]

Scans the trainers' sources (trainers/, tests/trainers/) for calls of `make_header(` and headers
filled by hand (`LogProbHeader h;`): the only places either may be are configured_trainer.h and
the synthetic generator (trainers/synthetic_logprobs.cpp, which has no run config), and every
trainer source that opens a `LogProbWriter` builds its header with `test_dump_header(` or is
handed one (`const contract::LogProbHeader& header`). Then it runs itself on planted snippets
and fails unless each rule catches its plant: the checker can fail.
"""
import re
import sys

from checks import ROOT, check, check_scan, finish, scan_sources

FOLDERS = ["trainers", "tests/trainers"]
ALLOWED = {"trainers/runkit/configured_trainer.h", "trainers/synthetic_logprobs.cpp"}
MAKE_HEADER = re.compile(r"\bmake_header\s*\(")
HAND_BUILT = re.compile(r"\bLogProbHeader\s+\w+\s*[;{]")  # a header declared and filled here
WRITER = re.compile(r"\bLogProbWriter\b[^;]*\(")
# The header built here, or handed in by a caller that built it (lm/evaluate.cpp's dump_log_probs).
THROUGH_RUNKIT = re.compile(r"\btest_dump_header\s*\(|const contract::LogProbHeader& header")


def findings(rel, text):
    """What breaks the rules in one source file, one line each."""
    out = []
    if rel not in ALLOWED:
        for rule, what in ((MAKE_HEADER, "make_header"), (HAND_BUILT, "a hand-built header")):
            for m in rule.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{rel}:{line}: {what} outside runkit's test_dump_header")
    writes = rel.endswith(".cpp") and WRITER.search(text) and rel not in ALLOWED
    if writes and "dump_rows" not in rel and not THROUGH_RUNKIT.search(text):
        out.append(f"{rel}: opens a LogProbWriter without test_dump_header")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else ROOT
    found, files = scan_sources(root, FOLDERS, findings)
    check_scan(found, files, 40, "no trainer builds a dump header but through test_dump_header")
    planted = findings("trainers/x/trainer.cpp",
                       "auto h = contract::make_header(spec, d, true, M, T, src);\n"
                       "contract::LogProbWriter writer(path, h);\n")
    check(len(planted) == 2, f"the checker catches a planted make_header and writer: {planted}")
    hand = findings("trainers/x/trainer.cpp",
                    "const auto h = test_dump_header({spec, d}, M, T, words);\n"
                    "contract::LogProbHeader other;\nother.head = \"softmax\";\n"
                    "contract::LogProbWriter writer(path, other);\n")
    check(len(hand) == 1 and "hand-built" in hand[0],
          f"and a header filled by hand beside a test_dump_header call: {hand}")
    clean = findings("trainers/x/trainer.cpp",
                     "const auto h = test_dump_header({spec, d}, M, T, words);\n"
                     "contract::LogProbWriter writer(path, h);\n")
    check(not clean, f"and passes the runkit's way: {clean}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
