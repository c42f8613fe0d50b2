#!/usr/bin/env python3
"""Docs that cannot drift: every name docs/design.md and docs/howto-*.md give in backticks must
exist, design.md's layer table must be the build's, and docs/perf_and_reports.md's list of
result fields must be the reports'.

    scripts/check_docs.py SDPABENCH LAYERS [DOC...]   exit 1 naming each stale name (FILE:LINE)
    scripts/check_docs.py --self-test SDPABENCH LAYERS
        plant one wrong name of each kind in a copy of the docs and check that each is reported

SDPABENCH is the built executable (its --help spells every option and knob), LAYERS the
build's layers.txt (CMakeLists.txt writes one line "FOLDER: USED..." per library). A code span
(Markdown inline code, read with markdown-it) is checked by what it looks like:
  --NAME[=...]            an option or knob of `sdpabench --help`
  a/b, a/b.ext, .ci/run   a file or folder of the repository (git ls-files), from the root or
                          under any folder (the docs name tests/ folders as `e2e/` in context)
  name.ext                a file of that name somewhere in the repository
  Name, k_Name, a::b, f(...)  a C++ name: each component is a name universal-ctags finds in the
                          sources (function, prototype, type, member, enumerator, variable), a
                          GoogleTest suite or test name, or a CMake target (sdpabench_*)
Spans with a placeholder (a word of three or more capitals: VENDOR, FORMAT, KIND) and plain
values (fwd_t, causal_br, 0.5) are not names; EXTERNAL lists the few names of other libraries
and of the formulas that the docs do give in backticks.
The layer table (section "Layers and folders") has one row per library: its folder, its
library `sdpabench_FOLDER` and the layers it uses; each must equal LAYERS. And the list of result
fields (docs/perf_and_reports.md, section "Result fields") names every CSV column of a report
sdpabench writes, and nothing that is neither a column nor a JSONL key.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

from markdown_it import MarkdownIt

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = ["core", "graph", "ref", "fillers", "compare", "backends", "reports", "driver", "tests"]
# Names the docs give in backticks that are not sdpabench's: formulas' symbols, JSON words, and
# the names other libraries give (oneDNN's SoftMax mode, PyTorch's argument).
EXTERNAL = {"X_ref", "u_eff", "exp", "null", "requires", "inf_as_zero", "attn_mask", "is_causal"}
PLACEHOLDER = re.compile(r"[A-Z]{3,}")
KNOB = re.compile(r"--([a-z][a-z0-9-]*)(=.*)?")
PATH = re.compile(r"\.?[\w.-]+(/[\w.-]*)+(#[\w-]+)?")
FILE = re.compile(r"[\w-][\w.-]*\.(cpp|hpp|md|py|sh|cases|json|jsonl|txt|cmake|tsv)")
CODE = re.compile(r"~?([A-Za-z_]\w*(?:::~?[A-Za-z_]\w*)*)(\(.*\))?")
GTEST = re.compile(r"([A-Z]\w*)\.([A-Z]\w*)")


def code_spans(path: pathlib.Path):
    """(line, text) of every inline code span of a Markdown file, tables included."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    md = MarkdownIt("commonmark").enable("table")
    for tok in md.parse(text):
        if tok.type != "inline" or not tok.children:
            continue
        first, last = tok.map if tok.map else (0, len(lines))
        for child in tok.children:
            if child.type == "code_inline":
                line = next((k + 1 for k in range(first, last) if f"`{child.content}" in lines[k]), first + 1)
                yield line, child.content


class Known:
    """What exists: options, files, C++ names, test names and CMake targets."""

    def __init__(self, exe: str, root: pathlib.Path):
        help_text = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True).stdout
        self.options = set(re.findall(r"--([a-z][a-z0-9-]*)", help_text)) | {"help", "version"}
        files = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard"],
                               capture_output=True, text=True,
                               check=True).stdout.split()
        self.paths = set(files)
        for f in files:  # every folder too, with and without its trailing slash
            parts = f.split("/")
            for k in range(1, len(parts)):
                self.paths.add("/".join(parts[:k]) + "/")
        self.basenames = {f.rsplit("/", 1)[-1] for f in files}
        tags = subprocess.run(["ctags", "-R", "--languages=C++", "--kinds-C++=+p", "-x", "--_xformat=%N",
                               *[str(root / s) for s in SOURCES]], capture_output=True, text=True, check=True).stdout
        self.names = set(tags.split())
        tests = "\n".join((root / f).read_text(encoding="utf-8", errors="replace")
                          for f in files if f.startswith("tests/") and f.endswith(".cpp"))
        self.gtests = set()
        for suite, name in re.findall(r"\bTEST(?:_F|_P)?\(\s*(\w+)\s*,\s*(\w+)\s*\)", tests):
            self.gtests |= {suite, name, f"{suite}.{name}"}
        cmake = "\n".join((root / f).read_text(encoding="utf-8") for f in files if f.endswith("CMakeLists.txt"))
        self.targets = set(re.findall(r"\b(sdpabench_\w+)", cmake))
        self.targets |= {f"sdpabench_{folder}" for folder in re.findall(r"sdpabench_layer\((\w+)", cmake)}

    def path_exists(self, p: str) -> bool:
        p = p.split("#", 1)[0]
        return p in self.paths or any(k.endswith("/" + p) for k in self.paths)


def problem(span: str, known: Known):
    """Why `span` names nothing that exists, or None (also for spans that are no names)."""
    m = KNOB.fullmatch(span)
    if m:
        return None if m.group(1) in known.options else f"no option or knob --{m.group(1)} in sdpabench --help"
    if PLACEHOLDER.search(span) or span.startswith("/") or span.startswith("build/"):
        return None
    if PATH.fullmatch(span):
        return None if known.path_exists(span) else "no such file or folder in the repository"
    if FILE.fullmatch(span):
        return None if span in known.basenames else "no file of that name in the repository"
    m = GTEST.fullmatch(span)
    if m:
        return None if span in known.gtests else "no such GoogleTest test"
    m = CODE.fullmatch(span)
    if not m:
        return None
    name = m.group(1)
    if name.startswith("std::"):
        return None
    comps = [c.lstrip("~") for c in name.split("::") if c != "sdpa"]
    is_code = bool(m.group(2)) or len(comps) > 1 or re.fullmatch(r"[A-Z]\w*[a-z]\w*|k[A-Z]\w*|sdpabench_\w+|[a-z]\w*_\w+", comps[0])
    if not is_code:
        return None
    for c in comps:
        if c in EXTERNAL or c in known.names or c in known.gtests or c in known.targets:
            continue
        return f"no C++ name, test or CMake target '{c}' in the code"
    return None


def layer_table(path: pathlib.Path):
    """{folder: (library, [used layers])} of the table under '## Layers and folders'."""
    md = MarkdownIt("commonmark").enable("table")
    toks = md.parse(path.read_text(encoding="utf-8"))
    rows, in_section, in_table, cells = {}, False, False, []
    for k, tok in enumerate(toks):
        if tok.type == "heading_open":
            in_section = toks[k + 1].content == "Layers and folders"
        elif in_section and tok.type == "table_open":
            in_table = True
        elif tok.type == "table_close":
            in_table = False
        elif in_table and tok.type == "tr_open":
            cells = []
        elif in_table and tok.type == "inline":
            cells.append([c.content for c in tok.children if c.type == "code_inline"])
        elif in_table and tok.type == "tr_close" and cells and cells[0] and cells[0][0].endswith("/"):
            folder = cells[0][0].rstrip("/")
            library = cells[2][0] if len(cells) > 2 and cells[2] else ""
            rows[folder] = (library, sorted(cells[3]) if len(cells) > 3 else [])
    return rows


def section_words(path: pathlib.Path, title: str) -> set:
    """The whitespace-separated words of every code span under the heading `title`."""
    md = MarkdownIt("commonmark")
    toks = md.parse(path.read_text(encoding="utf-8"))
    words, inside = set(), False
    for k, tok in enumerate(toks):
        if tok.type == "heading_open":
            inside = toks[k + 1].content == title
        elif inside and tok.type == "inline":
            for c in tok.children:
                if c.type == "code_inline":
                    words |= set(c.content.split())
    return words


def result_fields(exe: str) -> tuple:
    """(the CSV columns, every JSONL key) of a report sdpabench writes for one listed case."""
    with tempfile.TemporaryDirectory() as tmp:
        csv, jsonl = pathlib.Path(tmp) / "r.csv", pathlib.Path(tmp) / "r.jsonl"
        subprocess.run([exe, "--no-progress", "--backend=ref", "--mode=L", f"--report=csv:{csv}", f"--report=jsonl:{jsonl}",
                        "b1sq1d1"], capture_output=True, check=True)
        header = next(line for line in csv.read_text().splitlines() if not line.startswith("#"))
        keys = set()
        for line in jsonl.read_text().splitlines()[1:]:
            stack = [json.loads(line)]
            if "end" in stack[0]:  # the run's end record: not a case's fields
                continue
            while stack:
                obj = stack.pop()
                if isinstance(obj, dict):
                    keys |= set(obj)
                    stack.extend(obj.values())
    return header.split(","), keys


def check(exe: str, layers: pathlib.Path, docs, root: pathlib.Path = ROOT) -> list:
    known = Known(exe, root)
    errors = []
    for doc in docs:
        if doc.name == "perf_and_reports.md":  # its names are the scripts' too: only its field list is checked
            continue
        for line, span in code_spans(doc):
            why = problem(span, known)
            if why:
                errors.append(f"{doc}:{line}: `{span}`: {why}")
    reports = next((d for d in docs if d.name == "perf_and_reports.md"), None)
    if reports:
        columns, keys = result_fields(exe)
        named = section_words(reports, "Result fields")
        for c in columns:
            if c not in named:
                errors.append(f"{reports}: section 'Result fields' does not name the CSV column `{c}`")
        for w in sorted(named):
            if re.fullmatch(r"[a-z_]+", w) and w not in columns and w not in keys:
                errors.append(f"{reports}: section 'Result fields' names `{w}`, which is no result field")
    design = next((d for d in docs if d.name == "design.md"), None)
    if design:
        built = {}
        for line in layers.read_text().splitlines():
            folder, _, used = line.partition(":")
            built[folder.strip()] = (f"sdpabench_{folder.strip()}", sorted(used.split()))
        table = layer_table(design)
        for folder in sorted(set(built) | set(table)):
            if table.get(folder) != built.get(folder):
                errors.append(f"{design}: layer table row `{folder}/`: the docs say {table.get(folder)}, "
                              f"the build (CMakeLists.txt sdpabench_layer) says {built.get(folder)}")
    return errors


def self_test(exe: str, layers: pathlib.Path) -> int:
    """Each planted wrong name is reported; the real docs are not."""
    plants = {"file": "`compare/no_such_file.cpp`", "bare file": "`no_such_file.hpp`",
              "function": "`no_such_function(p)`", "type": "`NoSuchType`", "qualified": "`Backend::no_such_member`",
              "knob": "`--no-such-knob=1`", "constant": "`kNoSuchTable`"}
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kind, span in plants.items():
            doc = pathlib.Path(tmp) / "howto-planted.md"
            doc.write_text(f"# Planted\n\nA real name `Conventions`, a planted one {span}.\n", encoding="utf-8")
            errors = check(exe, layers, [doc])
            ok = len(errors) == 1 and span in errors[0] and ":3:" in errors[0]
            print(f"planted {kind:9} {span:28} {'reported' if ok else 'NOT reported'}: {errors}")
            failed += not ok
        design = pathlib.Path(tmp) / "design.md"
        text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
        design.write_text(text.replace("| `sdpabench_compare` | `core` `ref` |", "| `sdpabench_compare` | `core` `ref` `backends` |"),
                          encoding="utf-8")
        errors = [e for e in check(exe, layers, [design]) if "layer table" in e]
        ok = len(errors) == 1 and "`compare/`" in errors[0]
        print(f"planted upward layer (compare uses backends) {'reported' if ok else 'NOT reported'}: {errors}")
        failed += not ok
        fields = pathlib.Path(tmp) / "perf_and_reports.md"
        text = (ROOT / "docs" / "perf_and_reports.md").read_text(encoding="utf-8")
        fields.write_text(text.replace("`alone_status` (", "`alone_stat` (", 1), encoding="utf-8")
        errors = check(exe, layers, [fields])
        ok = len(errors) == 2 and "`alone_status`" in errors[0] and "`alone_stat`" in errors[1]
        print(f"planted result field (alone_stat for alone_status) {'reported' if ok else 'NOT reported'}: {errors}")
        failed += not ok
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="check that planted wrong names are reported")
    ap.add_argument("sdpabench", help="the sdpabench executable")
    ap.add_argument("layers", type=pathlib.Path, help="the build's layers.txt")
    ap.add_argument("docs", nargs="*", type=pathlib.Path)
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.sdpabench, args.layers)
    docs = args.docs or [ROOT / "docs" / "design.md", *sorted((ROOT / "docs").glob("howto-*.md")),
                         ROOT / "docs" / "perf_and_reports.md"]
    errors = check(args.sdpabench, args.layers, docs)
    for e in errors:
        print(e)
    print(f"check_docs.py: {len(docs)} file(s), {len(errors)} stale name(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
