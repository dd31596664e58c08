#!/usr/bin/python3
"""No Catch2 test name holds a semicolon.

Usage: check_test_names.py [ROOT]

CMake's test discovery reads the names Catch2 lists as a CMake list, so a ';' splits one test
case into two ctest entries: the part after it becomes a test named " ..." that runs nothing of
what it says. Reads every TEST_CASE's name (adjacent string literals joined) in tests/ and
fails on any that holds ';'. Then it runs itself on planted snippets: a split name must be caught
and a clean one (a ';' after the name, in the tags, or in the body) must not.
"""
import re
import sys

from checks import ROOT, check, check_scan, finish, scan_sources

NAME = re.compile(r'TEST_CASE\(\s*((?:"(?:[^"\\]|\\.)*"\s*)+)')
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


def names(text):
    """Every TEST_CASE name of a source, its adjacent literals joined."""
    return ["".join(LITERAL.findall(m.group(1))) for m in NAME.finditer(text)]


def rule(path, text):
    return [f"{path}: {n!r}" for n in names(text) if ";" in n]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else ROOT
    found, files = scan_sources(root, ["tests"], rule)
    check_scan(found, files, 50, "no test name holds a ';' (CMake would split it in two)")
    split = 'TEST_CASE(\n    "a name that "\n    "goes on; and splits") {\n'
    clean = 'TEST_CASE("a clean name", "[tag;x]") {\n  int a = 1;\n}\n'
    check(rule("split.cpp", split) != [], "a planted name with ';' across two literals is caught")
    check(rule("clean.cpp", clean) == [], "a ';' in the tags or the body is not")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
