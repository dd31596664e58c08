#!/usr/bin/python3
"""README.md and the guides in docs/: the README stays a front door (at most 320 lines); every
relative link of README.md and docs/*.md points to a file of the repository and, where it names
an #anchor in a markdown file, to one of that file's headings (GitHub's rule: lowercase, spaces
to '-', punctuation but '-' and '_' dropped, a repeated heading gets -1, -2, ...); and every
command in a fenced sh / bash / plain block that starts with `make `, `build/` or
`/usr/bin/python3 ` names something that exists: a target of the Makefile, a binary the CMake
build makes (an executable of a CMakeLists.txt in that folder, or a train_<kind> of the trainer
registry), a Python script of the repository."""

import glob
import os
import re
import shlex

from checks import ROOT, check, finish
from doc_commands import command_lines, docs, prose_and_fences

MAX_README_LINES = 320


def rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


_anchors: dict[str, set[str]] = {}


def anchors_of(path: str) -> set[str]:
    if path not in _anchors:
        seen: dict[str, int] = {}
        out = set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line, lang in prose_and_fences(text):
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line) if lang is None else None
            if not m:
                continue
            a = anchor(m.group(1))
            k = seen.get(a, 0)
            seen[a] = k + 1
            out.add(a if k == 0 else f"{a}-{k}")
        # explicit HTML anchors (<a name="x"> / id="x")
        out.update(re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", text))
        _anchors[path] = out
    return _anchors[path]


LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def check_links(path: str) -> tuple[int, list[str]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    # Links may have text over two lines: join each paragraph's lines outside fences.
    prose = "\n".join(line for _, line, lang in prose_and_fences(text) if lang is None)
    prose = re.sub(r"`[^`\n]*`", "``", prose)  # inline code is not a link
    bad, count = [], 0
    for target in LINK.findall(prose):
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        count += 1
        file_part, _, frag = target.partition("#")
        dest = path if not file_part else os.path.normpath(
            os.path.join(os.path.dirname(path), file_part))
        if not os.path.exists(dest):
            bad.append(f"{target} (no {rel(dest)})")
            continue
        if not os.path.abspath(dest).startswith(ROOT + os.sep):
            bad.append(f"{target} (outside the repository)")
            continue
        if frag and dest.endswith(".md") and os.path.isfile(dest) and frag not in anchors_of(dest):
            bad.append(f"{target} (no heading '#{frag}' in {rel(dest)})")
    return count, bad


def make_targets() -> set[str]:
    targets = set()
    with open(os.path.join(ROOT, "Makefile")) as f:
        for line in f:
            m = re.match(r"^([A-Za-z0-9_.$()/ -]+?)\s*:(?!=)", line)
            if m and not line.startswith("\t"):
                for t in m.group(1).split():
                    targets.add(t)
    return targets


def built_binaries() -> set[str]:
    """build/<folder>/<name> for every executable a CMakeLists.txt defines with a literal name
    (sb_executable, add_executable, sb_bench), and build/trainers/train_<kind> for every row of
    the trainer registry (sb_trainer: RUNTIME_OUTPUT_DIRECTORY trainers/)."""
    out = set()
    for cm in glob.glob(os.path.join(ROOT, "**", "CMakeLists.txt"), recursive=True):
        folder = os.path.dirname(rel(cm))
        if folder.split(os.sep)[0] in ("build", "fuzz") or "/build" in folder:
            continue
        with open(cm) as f:
            text = f.read()
        for fn, name in re.findall(r"\b(sb_executable|add_executable|sb_bench|sb_trainer)\(\s*"
                                   r"([A-Za-z0-9_]+)\b", text):
            if fn == "sb_trainer":
                out.add(f"build/trainers/train_{name}")
            else:
                out.add(f"build/{folder}/{name}" if folder not in ("", ".") else f"build/{name}")
    return out


TARGETS = make_targets()
BINARIES = built_binaries()


def check_command(line: str) -> str | None:
    """None when the command names something that exists, else why not."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        words = line.split()
    if not words:
        return None
    if words[0] == "make":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        for t in names[:1]:
            if t not in TARGETS:
                return f"no Makefile target '{t}'"
        return None
    if words[0].startswith("build/"):
        binary = words[0]
        if binary in BINARIES or os.path.isfile(os.path.join(ROOT, binary)):
            return None
        return f"{binary} is built by no CMakeLists.txt"
    if words[0] == "/usr/bin/python3":
        rest = words[1:]
        if rest and rest[0] in ("-m", "-c"):
            return None
        script = next((w for w in rest if not w.startswith("-")), None)
        if script and script.endswith(".py") and not os.path.isfile(os.path.join(ROOT, script)):
            return f"no script {script}"
        return None
    return None


# --- the README is a front door
with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    readme = f.read()
lines = readme.count("\n") + (0 if readme.endswith("\n") else 1)
check(lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES})")
for marker in ("<!-- claims begin", "<!-- claims end -->"):
    check(marker in readme, f"README.md keeps the generated claims block's marker '{marker}'")
guides = ["reproducing", "rank-analysis", "python", "training", "clusters-and-gpus",
          "benchmarks", "results-provenance"]
for g in guides:
    check(f"](docs/{g}.md" in readme, f"README.md links to docs/{g}.md")

# --- the anchor rule on known headings
check(anchor("On a Slurm cluster: `SCHEDULER=slurm`") == "on-a-slurm-cluster-schedulerslurm"
      and anchor("Why g:ReLU does not train here") == "why-grelu-does-not-train-here"
      and anchor("On a cluster: `rank_analysis --mpi`") == "on-a-cluster-rank_analysis---mpi",
      "GitHub's anchor rule: lowercase, spaces to '-', punctuation but '-' and '_' dropped")

# --- links and commands of every document
check(len(BINARIES) >= 10 and "build/analysis/rank_analysis" in BINARIES
      and "build/trainers/train_wordlm" in BINARIES,
      f"the CMake executables are found ({len(BINARIES)}, rank_analysis and train_wordlm "
      "among them)")
check({"reproduce", "test", "test-long", "build", "bench-rank"} <= TARGETS,
      f"the Makefile's targets are found ({len(TARGETS)})")
total_links = total_commands = 0
for path in docs():
    n, bad = check_links(path)
    total_links += n
    check(not bad, f"{rel(path)}: every relative link of {n} points to an existing file and heading"
          + (f": broken: {'; '.join(bad)}" if bad else ""))
    problems, count = [], 0
    for lineno, cmd in command_lines(path):
        count += 1
        why = check_command(cmd)
        if why:
            problems.append(f"line {lineno}: {cmd[:80]}: {why}")
    total_commands += count
    check(not problems, f"{rel(path)}: every command of {count} in its sh / bash blocks names an "
          "existing make target, built binary or script"
          + (f": {'; '.join(problems)}" if problems else ""))
check(total_links > 50 and total_commands > 30,
      f"the documents were read: {total_links} relative links, {total_commands} commands")

# --- the checker itself refuses what it should
check(check_command("make no-such-target") is not None
      and check_command("build/analysis/no_such_binary --help") is not None
      and check_command("/usr/bin/python3 pipeline/no_such_script.py") is not None
      and check_command("make -n reproduce PROFILE=paper SCHEDULER=slurm") is None,
      "a missing make target, binary or script is reported; options and VAR=value are skipped")

raise SystemExit(finish())
