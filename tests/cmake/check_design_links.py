#!/usr/bin/python3
"""Checks CMake's link graph against docs/design.md's "Who may use whom" table.

Usage: check_design_links.py DESIGN_MD LINK_GRAPH REGISTRY [SOURCE_ROOT]

LINK_GRAPH is build/link_graph.txt (cmake/LinkGraph.cmake: "target: linked targets" per static
library); REGISTRY is build/trainer_registry.txt (the sb_trainer rows: "kind folder library"). A
trainer's library without a row of its own is held to the row `<trainer>`. With SOURCE_ROOT, every
folder under trainers/ and tests/trainers/ holding a main.cpp that calls a cli_main must be in the
registry (a trainer left out of it would be missing from the link graph and from this test). Fails (exit 1, one line per violation) when a library of ours links another of ours that
its row does not name, when a library has no row, or when a row marked "never" reaches LibTorch
(sb_torch) through any chain of links. Then it re-checks the same graph with one forbidden edge
added (runkit -> lm) and fails unless that edge is caught: the checker itself can fail.
"""
import sys

from checks import check, finish

TORCH = "sb_torch"
NOT_LIBRARIES = {"binaries", "tests, bench", "pipeline/"}


def read_table(path):
    """{target: (allowed set, torch_allowed)} from the first fenced block after the heading."""
    text = open(path, encoding="utf-8").read()
    start = text.index("## Who may use whom")
    block = text[text.index("```\n", start) + 4:]
    block = block[:block.index("```")]
    header, *lines = block.splitlines()
    uses_at, torch_at = header.index("may use"), header.index("LibTorch")  # the column starts
    rows = {}
    for line in lines:
        target, uses = line[:uses_at].strip(), line[uses_at:torch_at].strip()
        torch = line[torch_at:].strip()
        if not target or target in NOT_LIBRARIES:
            continue
        allowed = set() if uses == "nothing of ours" else {u.strip() for u in uses.split(",")}
        rows[target] = (allowed, torch != "never")
    return rows


def read_graph(path):
    graph = {}
    for line in open(path, encoding="utf-8"):
        name, _, links = line.partition(":")
        graph[name.strip()] = set(links.split())
    return graph


def violations(rows, graph):
    ours = set(graph)
    out = []
    for target, links in sorted(graph.items()):
        if target not in rows:
            out.append(f"{target}: a library with no row in the table")
            continue
        allowed, torch = rows[target]
        for link in sorted(links & ours - allowed):
            out.append(f"{target} links {link}, which its row does not allow ({', '.join(sorted(allowed)) or 'nothing of ours'})")
        if not torch:
            seen, stack = set(), [target]
            while stack:
                t = stack.pop()
                for link in graph.get(t, ()):
                    if link not in seen:
                        seen.add(link)
                        stack.append(link)
            if TORCH in seen:
                out.append(f"{target} reaches LibTorch through its links, but its row says never")
    return out


def read_registry(path):
    """[(kind, folder, library)] from trainer_registry.txt."""
    return [tuple(line.split()) for line in open(path, encoding="utf-8") if line.strip()]


def trainer_folders(root):
    """The folders under trainers/ and tests/trainers/ whose main.cpp runs a trainer's cli_main."""
    import os
    found = set()
    for top in ("trainers", os.path.join("tests", "trainers")):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            if "main.cpp" in files:
                text = open(os.path.join(dirpath, "main.cpp"), encoding="utf-8").read()
                if "cli_main(argc, argv)" in text:
                    found.add(os.path.relpath(dirpath, root))
    return found


def with_trainer_rows(rows, registry):
    """rows plus, for each registered trainer library without a row, the `<trainer>` row."""
    out = dict(rows)
    for _, _, library in registry:
        if library not in out and "<trainer>" in rows:
            out[library] = rows["<trainer>"]
    return out


def main():
    registry = read_registry(sys.argv[3])
    rows = with_trainer_rows(read_table(sys.argv[1]), registry)
    graph = read_graph(sys.argv[2])
    found = violations(rows, graph)
    for v in found:
        print("design.md violated:", v)
    check(not found, "every link of ours is one the table allows")
    check("runkit" in graph and "common" in graph and "analysis" in graph,
          "the link graph lists the libraries (runkit, common, analysis)")
    check(len(registry) >= 5 and all(lib in graph for _, _, lib in registry),
          f"every registered trainer's library is in the link graph "
          f"({', '.join(lib for _, _, lib in registry)})")
    if len(sys.argv) > 4:
        folders = trainer_folders(sys.argv[4])
        registered = {folder for _, folder, _ in registry}
        check(folders == registered,
              f"the trainer folders ({', '.join(sorted(folders))}) are the registry's "
              f"(missing from it: {sorted(folders - registered)}; not a trainer folder: "
              f"{sorted(registered - folders)})")
        # The check can fail: a registry without one row misses a folder.
        check(folders != registered - {registry[-1][1]},
              "a registry with a row left out fails the folder check")
    # The checker can fail: a forbidden edge and a LibTorch link under "never" are caught.
    bad = {t: set(links) for t, links in graph.items()}
    bad["runkit"].add("lm")
    check(any("runkit links lm" in v for v in violations(rows, bad)),
          "an added runkit -> lm link is reported")
    bad = {t: set(links) for t, links in graph.items()}
    bad["contract"].add("heads")
    check(any("contract" in v and "LibTorch" in v for v in violations(rows, bad)),
          "a chain from a 'never' row to LibTorch is reported")
    sys.exit(finish())


if __name__ == "__main__":
    main()
