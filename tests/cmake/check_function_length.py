#!/usr/bin/python3
"""No function of the sources is longer than 80 lines (tests excepted).

Usage: check_function_length.py [ROOT]

A long function is where a change touches more than it should: the style asks for thin functions
over libraries, one step each. Reads every C++ source (.cpp, .h, .cu) and every Python file git
tracks outside tests/ and fuzz/, and measures each function from the line of its opening brace
(C++) or its `def` (Python, by the ast module) to its last line. C++ is read by brace depth after
strings, characters and comments are blanked: a brace that opens a body at namespace or class
level after a parameter list's `)` starts a function; braces inside it (lambdas, blocks, static
tables) count towards it. Then it runs itself on planted snippets and fails unless an 81-line
function is caught and an 80-line one is not: the checker can fail.
"""
import ast
import os
import re
import subprocess
import sys

from checks import ROOT, check, check_scan, finish

LIMIT = 80
SKIP = ("tests/", "fuzz/")
STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
# What ends a function head before its body: ") {", ") const {", ") override {", ") -> T {",
# a constructor's initialiser list "... : a_(x) {".
FUNCTION_HEAD = re.compile(r"\)\s*(const\s*)?(noexcept\s*)?(override\s*)?(final\s*)?"
                           r"(->\s*[\w:<>,\s*&]+)?(:.*)?\{\s*$")
TYPE_HEAD = re.compile(r"\b(namespace|class|struct|union|enum)\b[^;()]*\{\s*$")


def blank(text):
    """The C++ text with comments and string or character literals blanked, lines kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = []
    for line in text.split("\n"):
        line = STRING.sub('""', line)
        out.append(line.split("//", 1)[0])
    return out


def cpp_functions(text):
    """(first line, length) of each function body, 1-based."""
    lines = blank(text)
    found, stack = [], []  # stack: (line index, 'fn' | 'scope' | 'inner')
    for i, code in enumerate(lines):
        for pos, ch in enumerate(code):
            if ch == "{":
                if any(kind == "fn" for _, kind in stack):
                    stack.append((i, "inner"))
                    continue
                head = " ".join(lines[max(0, i - 4):i]) + " " + code[:pos + 1]
                head = head.split(";")[-1].split("}")[-1]
                is_fn = FUNCTION_HEAD.search(head) and not TYPE_HEAD.search(code[:pos + 1])
                stack.append((i, "fn" if is_fn else "scope"))
            elif ch == "}" and stack:
                start, kind = stack.pop()
                if kind == "fn":
                    found.append((start + 1, i - start + 1))
    return found


def py_functions(text):
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((node.lineno, node.end_lineno - node.lineno + 1))
    return found


def long_functions(name, text):
    """'file:line: N lines' for each function over LIMIT."""
    measured = py_functions(text) if name.endswith(".py") else cpp_functions(text)
    return [f"{name}:{line}: {length} lines" for line, length in measured if length > LIMIT]


def scan(root):
    names = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True,
                           check=True).stdout.split()
    found, files = [], 0
    for name in names:
        if name.startswith(SKIP) or not name.endswith((".cpp", ".h", ".cu", ".py")):
            continue
        path = os.path.join(root, name)
        if not os.path.isfile(path):
            continue
        files += 1
        with open(path, encoding="utf-8") as f:
            found += long_functions(name, f.read())
    return found, files


def planted(body_lines, python=False):
    if python:
        return "def f(x):\n" + "    x += 1\n" * (body_lines - 1)
    return ("namespace a {\nint f(int x) {\n" + "  x += 1;  // {\n" * (body_lines - 2) +
            "  return x;\n}\n}  // namespace a\n")


def main():
    root = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    found, files = scan(root)
    check_scan(found, files, 100, f"no function over {LIMIT} lines outside tests")
    # A function of LIMIT lines is allowed, one more is not; a brace in a comment or a string and
    # a lambda inside do not end it early.
    check(not long_functions("p.cpp", planted(LIMIT - 1)) and
          len(long_functions("p.cpp", planted(LIMIT))) == 1,
          f"the checker passes a planted {LIMIT}-line C++ function and catches a {LIMIT + 1}-line one")
    lam = ("void g() {\n  auto h = [](int v) {\n    return v;\n  };\n" + "  h(1);\n" * LIMIT + "}\n")
    check(len(long_functions("p.cpp", lam)) == 1,
          "a lambda inside a function counts towards it")
    check(not long_functions("p.py", planted(LIMIT, True)) and
          len(long_functions("p.py", planted(LIMIT + 1, True))) == 1,
          f"the checker passes a planted {LIMIT}-line Python function and catches a {LIMIT + 1}-line one")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
