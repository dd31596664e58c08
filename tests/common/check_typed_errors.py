#!/usr/bin/python3
"""Every error the suite throws at a user is typed (common/errors.h).

Usage: check_typed_errors.py [ROOT]

Scans the C++ sources of the libraries and binaries (common/, contract/, datasets/, analysis/,
trainers/, python/sbrank/) for `throw std::runtime_error(`, `std::invalid_argument(`,
`std::out_of_range(` and `std::domain_error(`: each must be an sb::InputError, FormatError,
OptionError or WriteError, so that error_report() can tell the kinds apart and sbrank can raise
the matching Python class. A `throw std::logic_error(` (a programming error no input reaches)
must have a `// internal:` comment on one of the three lines above it, saying why. And no exit
status is a literal outside common/ (`return 2;`, `return 130;`, `exit(3)` in a file with a main or
a cli_main): they are common/errors.h's named statuses. An error whose line is written at the throw
site (`X::described(...)`) and says "expected ..." carries that value too (the described() argument
`expected`, or OptionError::for_setting, or the standard constructor): sbrank's .expected and the
InputError's expected() are never empty where the code knows what it wanted. The Python scripts
of pipeline/ and bench/ follow the same exit rule: no `sys.exit(<number>)` and no `return <number>`
in a `main` or `_run`, and no message passed to sys.exit or SystemExit (it exits 1); they use
pipeline/pipeline_errors.py's refuse() and EXIT_* names, whose shared values equal
common/errors.h's kExit* (checked here). Then it runs itself on planted snippets and fails
unless every rule catches it: the checker can fail.
"""
import ast
import os
import re
import sys

from checks import ROOT, check, check_scan, finish, scan_sources

FOLDERS = ["common", "contract", "datasets", "analysis", "trainers", "python/sbrank", "bench"]
UNTYPED = re.compile(r"throw\s+std::(runtime_error|invalid_argument|out_of_range|domain_error)\s*\(")
LOGIC = re.compile(r"throw\s+std::logic_error\s*\(")
LITERAL_STATUS = re.compile(r"\b(return|exit\s*\()\s*([1-9]\d*)\s*\)?\s*;")
RAW_H5 = re.compile(r"\bH5[DSPFAGTL][a-z_]+\w*\s*\(")
MAIN = re.compile(r"\b(int\s+main\s*\(|cli_main\s*\(|_main\s*\()")


DESCRIBED = re.compile(r"\b(InputError|FormatError|OptionError|WriteError)::described\(")
# The arguments of described() before the optional `expected`: the line is the last of them.
DESCRIBED_ARGS = {"InputError": 3, "FormatError": 3, "OptionError": 2, "WriteError": 2}


def top_level_args(text, open_at):
    """The top-level arguments of the call whose '(' is text[open_at] (strings and nested
    brackets skipped), and the index of its ')'."""
    args, depth, start, i, quoted = [], 0, open_at + 1, open_at, False
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i
        elif ch == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return args, len(text)


def described_without_expected(name, text):
    """A described() error whose line says "expected" but passes no `expected` argument."""
    found = []
    for m in DESCRIBED.finditer(text):
        args, _ = top_level_args(text, m.end() - 1)
        line = args[-1] if args else ""
        if len(args) == DESCRIBED_ARGS[m.group(1)] and re.search(r'"[^"]*\bexpected ', line):
            found.append(f"{name}:{text.count(chr(10), 0, m.start()) + 1}: a described() line "
                         "that says 'expected' without passing the expected value")
    return found


def violations(name, text):
    """One 'file:line: what' string per untyped throw and per uncommented logic_error."""
    found = described_without_expected(name, text)
    lines = text.splitlines()
    for i, line in enumerate(lines):
        code = line.split("//", 1)[0]
        if UNTYPED.search(code):
            found.append(f"{name}:{i + 1}: untyped throw: {line.strip()}")
        elif LOGIC.search(code) and not any("// internal:" in lines[j]
                                            for j in range(max(0, i - 3), i + 1)):
            found.append(f"{name}:{i + 1}: logic_error without an '// internal:' reason")
        elif not name.startswith("common/") and MAIN.search(text) and LITERAL_STATUS.search(code):
            found.append(f"{name}:{i + 1}: literal exit status: {line.strip()}")
        elif "hdf5_handles" not in name and RAW_H5.search(code):
            found.append(f"{name}:{i + 1}: raw HDF5 call outside contract/hdf5_handles: "
                         f"{line.strip()}")
    return found


def python_literal_statuses(name, text):
    """'file:line: literal exit status' per `sys.exit(<int>)` anywhere and per `return <int>` in a
    function named main or _run (the functions whose value is the process's exit status)."""
    found = []
    for node in ast.walk(ast.parse(text, name)):
        literal = []
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.exit", "SystemExit") \
                and node.args and isinstance(node.args[0], (ast.Constant, ast.JoinedStr)) \
                and type(getattr(node.args[0], "value", "")) is not int:
            found.append(f"{name}:{node.lineno}: a message passed to {ast.unparse(node.func)} "
                         "exits 1 (EXIT_NOT_DONE), not 2: use pipeline_errors.refuse")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) == "sys.exit" and node.args:
            literal = [node.args[0]]
        elif isinstance(node, ast.FunctionDef) and node.name in ("main", "_run"):
            literal = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)]
        found += [f"{name}:{v.lineno}: literal exit status: {ast.unparse(v)}" for v in literal
                  if isinstance(v, ast.Constant) and type(v.value) is int]
    return found


def shared_statuses(root):
    """(name, C++ value, Python value) for each status both sides name."""
    with open(os.path.join(root, "common", "errors.h")) as f:
        cpp = dict(re.findall(r"constexpr int kExit(\w+) = (\d+);", f.read()))
    sys.path.insert(0, os.path.join(root, "pipeline"))
    import pipeline_errors
    py = {k[len("EXIT_"):].replace("_", "").lower(): v for k, v in vars(pipeline_errors).items()
          if k.startswith("EXIT_")}
    return [(k, int(cpp[k]), py[k.lower()]) for k in cpp if k.lower() in py]


def scan(root):
    return scan_sources(root, FOLDERS, violations, (".cpp", ".h", ".cu"))


def main():
    root = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    found, files = scan(root)
    check_scan(found, files, 50, "no untyped throw and no unexplained logic_error")
    found, files = scan_sources(root, ["pipeline", "bench"], python_literal_statuses, (".py",))
    check_scan(found, files, 30, "no literal exit status in the Python scripts")
    shared = shared_statuses(root)
    check(len(shared) >= 3 and all(c == p for _, c, p in shared),
          "pipeline_errors.py's EXIT_* equal common/errors.h's kExit* (name, C++, Python): "
          f"{shared}")
    planted_py = python_literal_statuses("pipeline/planted.py", "import sys\ndef main():\n    "
                                         "if x:\n        return 2\n    return EXIT_OK\n"
                                         "def count():\n    return 0\nsys.exit(130)\n"
                                         "sys.exit(f'{x}: bad')\nraise SystemExit('bad')\n"
                                         "sys.exit(main())\n")
    check(sorted(int(x.split(":")[1]) for x in planted_py) == [4, 8, 9, 10],
          "the checker catches planted Python literal exit statuses (lines 4, 8) and messages "
          f"passed to sys.exit and SystemExit (9, 10), and nothing else: {planted_py}")
    planted = ('void f(int n) {\n  if (n < 0) throw std::invalid_argument("n < 0");\n'
               '  if (n > 9) throw std::logic_error("no reason");\n  // internal: checked above\n'
               '  if (n == 5) throw std::logic_error("explained");\n'
               '  // throw std::runtime_error("a comment is not code");\n}\n')
    caught = violations("planted.cpp", planted)
    check(len(caught) == 2 and "untyped" in caught[0] and "internal" in caught[1],
          f"the checker catches a planted untyped throw and an unexplained logic_error: {caught}")
    status = violations("analysis/planted.cpp", "int main() {\n  if (bad) return 2;\n  return 0;\n}\n")
    check(len(status) == 1 and "literal exit status" in status[0],
          f"the checker catches a planted literal exit status: {status}")
    raw = violations("contract/planted.cpp", "void f(hid_t s) {\n  H5Sselect_hyperslab(s, "
                     "H5S_SELECT_SET, a, nullptr, b, nullptr);\n}\n")
    check(len(raw) == 1 and "raw HDF5 call" in raw[0],
          f"the checker catches a planted raw HDF5 call: {raw}")
    known = violations("analysis/planted.cpp",
                       'void f(int n) {\n  throw OptionError::described("--n", "--n " + '
                       'std::to_string(n) + ": expected n >= 1");\n  throw OptionError::described('
                       '"--n", "--n: expected n >= 1", "n >= 1");\n}\n')
    check(len(known) == 1 and "without passing the expected value" in known[0]
          and known[0].startswith("analysis/planted.cpp:2:"),
          f"the checker catches a planted described() that says 'expected' and drops it: {known}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
