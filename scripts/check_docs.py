#!/usr/bin/env python3
"""Docs that cannot drift: every name a Markdown file of the project gives in backticks must
exist, design.md's layer table must be the build's, docs/perf_and_reports.md's list of result
fields must be the reports', and README's smoke-set counts must add up to the smoke set.

    scripts/check_docs.py SDPABENCH LAYERS [DOC...]   exit 1 naming each stale name (FILE:LINE)
    scripts/check_docs.py --self-test SDPABENCH LAYERS
        plant a wrong name of each kind in copies of each kind of doc and check that each is
        reported (FILE:LINE and the span), and that true placeholders are not

The docs are every *.md that git knows (docs/, README.md, compare/README.md, tests/*/README.md),
not those under build/ or tests/data/. SDPABENCH is the built executable: its --help spells every
option, --list-knobs=tsv every knob and --list-statuses=json every status; LAYERS is the build's
layers.txt (CMakeLists.txt writes one line "FOLDER: USED..." per library). "The code" below is
every other file git knows (sources, scripts, CMake, case files), comments left out. A code span
(Markdown inline code, read with markdown-it) is checked by what it looks like:
  --NAME[=...]            an option of `sdpabench --help` or a knob of `--list-knobs=tsv`, else an
                          option that a script of the project spells (the code has `--NAME`); a
                          knob that takes one of a plain list (--dir, --mode) one of its values
  sdpabench ARGS, scripts/x.sh ARGS   a command line, in a span or a line of a sh code block:
                          each --NAME as above (sdpabench's, and a script's after `--`, only from
                          the binary; other programs' command lines are not checked)
  0:FAILED (reason) __REPRO: KNOBS, SKIPPED (reason)   a status line: its status one of
                          --list-statuses=json, its knobs sdpabench's
  a/b, a/b.ext, .ci/run   a file or folder of the repository (git ls-files), from the root or
                          under any folder (the docs name tests/ folders as `e2e/` in context),
                          or a path the code spells
  name.ext                a file of that name somewhere in the repository, or one the code spells
  STATUS, MACRO, ENV=1    a status of --list-statuses=json, else a macro, environment or CMake
                          variable: a word of the code (-DNAME=... and NAME=VALUE alike)
  %field%                 a field of --perf-template (as --help lists them)
  Name, k_Name, a::b, f(...)  a C++ or Python name: each component is a name universal-ctags finds
                          in the sources and scripts, a GoogleTest suite or test, a CMake target or
                          test, a result field (a CSV column or JSONL key), or a word of the code
                          (a vendor's function the backends call, an SQL table the store creates)
Placeholders, by an explicit rule: `<word>` anywhere; a word of capitals (VENDOR, KIND, FILE) as a
component of a path or file name, where it stands for any name and the rest must still match
(`cmake/VENDOR.cmake` needs some cmake/*.cmake; a path that starts with one, `OUT/merged.jsonl`,
is the user's, outside the repository); and an option's value, which is not checked. A span that
is a name as a whole is never a placeholder: `SDPABENCH_VENDOR` must be a word of the code, so
a name with a placeholder in it is written `SDPABENCH_<VENDOR>`. Plain values (fwd_t, 0.5),
paths outside the repository (/..., ../..., build/...) and command lines of other programs are
not names; EXTERNAL lists the few names of other projects the docs give in backticks that the
code never spells.
The layer table (design.md, section "Layers and folders") has one row per library: its folder, its
library `sdpabench_FOLDER` and the layers it uses; each must equal LAYERS. The list of result
fields (docs/perf_and_reports.md, section "Result fields") names every CSV column of a report
sdpabench writes, and nothing that is neither a column nor a JSONL key. README's section "Results
by CPU" gives, per CPU, the statuses of the smoke set (`N PASSED, M SKIPPED`): they must add up to
the cases `--mode=L --batch=cases/ci/smoke.cases` lists.
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
SOURCES = ["core", "graph", "ref", "fillers", "compare", "backends", "reports", "driver", "tests", "scripts"]
# Files that are not "the code" although git knows them: the docs, this script (its planted
# names), and the data the tests feed the scripts.
NOT_CODE = re.compile(r".*\.md|scripts/check_docs\.py|tests/data/.*")
# Names the docs give in backticks that the code never spells: formulas' symbols, JSON words, and
# PyTorch's argument names,
EXTERNAL = {"X_ref", "u_eff", "M_X", "exp", "null", "requires", "attn_mask", "is_causal",
            # environment variables other programs set or read: Slurm and CUDA, CTest, Kubernetes, OpenMP
            "CUDA_VISIBLE_DEVICES", "CTEST_RESOURCE_GROUP_0_GPUS", "JOB_COMPLETION_INDEX", "OMP_WAIT_POLICY",
            # cuDNN's names for what sdpabench avoids, oneDNN's spelling of an ISA level, benchdnn's
            # batch file (in ../shared/upstream-cases)
            "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER", "set_rng_dump", "AVX2", "harness_mha_all"}
# A table column headed by another program's name lists that program's names (docs/benchdnn.md).
OTHER_PROGRAMS = {"benchdnn"}
ANGLE = re.compile(r"<[^<>\s]*>")
CAPS = re.compile(r"(?<![A-Za-z0-9])[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*(?![a-z0-9])")
KNOB = re.compile(r"--([a-z][a-z0-9-]*)(=.*)?")
PATH = re.compile(r"\.?[\w.<>-]+(/[\w.<>-]*)+(#[\w-]+)?")
FILE = re.compile(r"[\w<>-][\w.<>-]*\.(cpp|hpp|md|py|sh|cases|json|jsonl|txt|cmake|tsv|html|xml|args)")
MACRO = re.compile(r"(?:-D)?([A-Z][A-Z0-9]*(?:_[A-Z0-9<>]+)+|[A-Z]{3,}[0-9]*|[A-Z]+_<\w+>)(=\S*)?")
CODE = re.compile(r"~?([A-Za-z_<][\w<>]*(?:::~?[A-Za-z_]\w*)*)(\(.*\))?")
GTEST = re.compile(r"([A-Z]\w*)\.([A-Z]\w*)")
STATUS_LINE = re.compile(r"(\d+:)?([A-Z][A-Z_]+) \(.*")
SPELLED_NAME = r"""[^\s/'"]*"""  # what a placeholder stands for in the code's text: a format's {}, a variable
LAYER_CLAIM = re.compile(r"\b(\w+)\s+layer\s+links\s+only\s+((?:`\w+`(?:,\s+|\s+and\s+|,\s+and\s+)?)+)")
PERF_FIELD = re.compile(r"%[-+0]?(\w+)%")
COMMENT = {"cpp": re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|(//[^\n]*|/\*.*?\*/)', re.S),
           "sh": re.compile(r'"(?:\\.|[^"\\])*"|\'[^\']*\'|(^\s*#[^\n]*)', re.M)}


def project_docs(root: pathlib.Path = ROOT) -> list:
    """Every Markdown file of the project that git knows, not under build/ or tests/data/."""
    files = subprocess.run(["git", "-C", str(root), "ls-files", "*.md"], capture_output=True, text=True,
                           check=True).stdout.split()
    return [root / f for f in files if not f.startswith(("build/", "tests/data/"))]


def code_spans(path: pathlib.Path):
    """(line, text, column) of every inline code span of a Markdown file, tables included; column
    is the text of the header of the table column the span is in ("" outside tables)."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    md = MarkdownIt("commonmark").enable("table")
    header, cell, in_head = [], -1, False
    for tok in md.parse(text):
        if tok.type in ("thead_open", "thead_close"):
            in_head = tok.type == "thead_open"
            header = header if not in_head else []
        elif tok.type == "tr_open":
            cell = -1
        elif tok.type in ("th_open", "td_open"):
            cell += 1
        elif tok.type == "table_close":
            header, cell = [], -1
        if tok.type != "inline" or not tok.children:
            continue
        if in_head:
            header.append(tok.content)
        column = header[cell] if 0 <= cell < len(header) and not in_head else ""
        first, last = tok.map if tok.map else (0, len(lines))
        for child in tok.children:
            if child.type == "code_inline":
                line = next((k + 1 for k in range(first, last) if f"`{child.content}" in lines[k]), first + 1)
                yield line, child.content, column


def code_blocks(path: pathlib.Path):
    """(line, command) of every command line of the fenced or indented code blocks of a Markdown
    file (its examples): lines joined at a trailing backslash, split at && ; | and $( )."""
    md = MarkdownIt("commonmark")
    for tok in md.parse(path.read_text(encoding="utf-8")):
        if tok.type not in ("fence", "code_block") or tok.info.strip() not in ("", "sh", "bash", "console", "shell"):
            continue
        start, joined = tok.map[0] + (2 if tok.type == "fence" else 1), ""
        for k, raw in enumerate(tok.content.split("\n")):
            if not joined:
                first = start + k
            joined += raw.rstrip("\\") + " "
            if raw.endswith("\\"):
                continue
            for command in re.split(r"&&|\|\||[;|]|\$\(|\)", joined.split(" #", 1)[0]):
                if command.strip():
                    yield first, command.strip().removeprefix("$ ")
            joined = ""


def without_comments(path: str, text: str) -> str:
    """The text of a file of the code with its comments blanked (C++: // and /* */; scripts and
    CMake: whole # lines), so that a stale comment keeps no name alive."""
    kind = "cpp" if re.search(r"\.(c|cc|cpp|h|hpp|cu)$", path) else "sh" if re.search(r"\.(sh|py|cmake|txt|sbatch)$|/[^./]+$", path) else ""
    if not kind:
        return text
    return COMMENT[kind].sub(lambda m: " " if m.group(1) else m.group(0), text)


class Known:
    """What exists: options, knobs, statuses, result fields, files, names and words of the code."""

    def __init__(self, exe: str, root: pathlib.Path):
        def run(*args):
            try:
                done = subprocess.run([exe, *args], capture_output=True, text=True)
            except OSError as e:
                sys.exit(f"check_docs.py: cannot run '{exe}': {e.strerror}")
            if done.returncode != 0:
                sys.exit(f"check_docs.py: '{exe} {' '.join(args)}' exited {done.returncode}: {done.stderr.strip()}")
            return done.stdout
        help_text = run("--help")
        # an option is a --help line that starts with it (aliases after commas); a knob a row of --list-knobs
        self.options = {o for line in re.findall(r"^ +((?:-\w,)?--[a-z][\w,-]*)", help_text, re.M)
                        for o in re.findall(r"--([a-z][a-z0-9-]*)", line)}
        knobs = [row.split("\t") for row in run("--list-knobs=tsv").splitlines() if row]
        self.options |= {k[0] for k in knobs}
        # the values of the knobs that take one of a plain list (--dir=fwd_i|fwd_t|bwd|fwd_bwd)
        self.values = {k[0]: set(k[1].split("|")) for k in knobs
                       if all(re.fullmatch(r"[a-z0-9_]+|[A-Z]+", v) for v in k[1].split("|"))}
        self.statuses = {s["name"] for s in json.loads(run("--list-statuses=json"))}
        self.perf_fields = set(re.findall(r"%[-+0]?(\w+)%", help_text))
        columns, keys = result_fields(exe)
        self.fields = set(columns) | keys
        files = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others", "--exclude-standard"],
                               capture_output=True, text=True, check=True).stdout.split()
        self.paths = set(files)
        for f in files:  # every folder too, with and without its trailing slash
            parts = f.split("/")
            for k in range(1, len(parts)):
                self.paths.add("/".join(parts[:k]) + "/")
        self.basenames = {f.rsplit("/", 1)[-1] for f in files}
        code = []
        for f in files:
            if NOT_CODE.fullmatch(f) or not (root / f).is_file():
                continue
            code.append(without_comments(f, (root / f).read_text(encoding="utf-8", errors="replace")))
        self.code = "\n".join(code)
        self.words = set(re.findall(r"[A-Za-z_]\w*", self.code))
        tags = subprocess.run(["ctags", "-R", "--languages=C++,Python", "--kinds-C++=+p", "-x", "--_xformat=%N",
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
        self.answers = {}  # (span, whether the doc's examples spell it): problem()'s answer

    def path_exists(self, p: str) -> bool:
        """A file or folder of the repository; placeholders (<x>, a word of capitals) match any name."""
        p = p.split("#", 1)[0]
        if p in self.paths or any(k.endswith("/" + p) for k in self.paths):
            return True
        pattern = placeholder_pattern(p, r"[^/\s]+")
        if pattern != re.escape(p):
            rx = re.compile(rf"(.*/)?{pattern}")
            return any(rx.fullmatch(k) for k in self.paths)
        return False

    def spelled(self, text: str) -> bool:
        """The code spells `text` (a placeholder stands for any SPELLED_NAME)."""
        pattern = placeholder_pattern(text, SPELLED_NAME)
        return re.search(rf"(?<![\w.-]){pattern}(?![\w.-])", self.code) is not None

    def name_known(self, name: str) -> bool:
        """A C++ or Python name, test, CMake target, result field or word of the code, or EXTERNAL."""
        return (name in EXTERNAL or name in self.names or name in self.gtests or name in self.targets
                or name in self.fields or name in self.words)


def placeholder_pattern(text: str, any_name: str, caps: bool = True) -> str:
    """A regular expression of `text` in which each placeholder (<x>; with `caps` a word of
    capitals too, and ...) matches `any_name`."""
    out, pos = [], 0
    for m in re.finditer(rf"{ANGLE.pattern}|{CAPS.pattern}|\.\.\." if caps else ANGLE.pattern, text):
        out += [re.escape(text[pos:m.start()]), any_name if m.group(0) != "..." else ".*"]
        pos = m.end()
    return "".join(out) + re.escape(text[pos:])


def option_problem(span: str, known: Known, binary_only: bool) -> str | None:
    """Why the option or knob --NAME[=...] (or its value) does not exist, or None."""
    m = KNOB.fullmatch(span)
    if m and m.group(1) in known.values and m.group(2):
        for v in re.split(r"[,|]", m.group(2)[1:]):  # a comma list, or the doc's choices a|b
            if v not in known.values[m.group(1)] and not re.search(r"[A-Z]{2,}|<|\.\.", v):
                return f"no value {v} of --{m.group(1)} in --list-knobs=tsv ({'|'.join(sorted(known.values[m.group(1)]))})"
    if not m or m.group(1) in known.options:
        return None
    if not binary_only and re.search(rf"--{re.escape(m.group(1))}(?![\w-])", known.code):
        return None
    where = "" if binary_only else ", nor does any script of the project spell it"
    return f"no option --{m.group(1)} in sdpabench --help and no knob in --list-knobs=tsv{where}"


def command_problem(words: list, known: Known) -> str | None:
    """Why a command line of sdpabench or of a project script names an option that does not
    exist, or None (also for other programs' command lines)."""
    prog = words[0]
    binary_only = prog.rsplit("/", 1)[-1] in ("sdpabench", "run.sh")
    if not binary_only:
        script = prog.startswith("scripts/") or re.fullmatch(r"[\w-]+\.(py|sh)", prog)
        if not script:
            return None
        if not known.path_exists(prog):
            return f"no script {prog} in the repository"
    for w in words[1:]:
        if w == "--":  # a script's arguments after -- are sdpabench's
            binary_only = True
            continue
        why = option_problem(w.lstrip("[").split("[")[0].rstrip("]"), known, binary_only)  # [--opt], --opt=A[,B]
        if why:
            return why
    return None


def problem(span: str, known: Known, example: str = "") -> str | None:
    """Why `span` names something that does not exist, or None (also for spans that are no names).
    `example` is the text of the doc's code blocks: a file its example writes is the example's."""
    span = span.strip()
    words = span.split()
    m = STATUS_LINE.fullmatch(span)
    if m:
        if m.group(2) not in known.statuses:
            return f"no status {m.group(2)} in sdpabench --list-statuses=json"
        repro = span.split("__REPRO:", 1)
        return command_problem(["sdpabench", *repro[1].split()], known) if len(repro) > 1 else None
    if len(words) > 1:
        return command_problem(words, known)
    if KNOB.fullmatch(span):
        return option_problem(span, known, False)
    if span.startswith(("/", "../", "build/", "$")):  # outside the repository, or the user's
        return None
    m = PERF_FIELD.fullmatch(span)
    if m:
        return None if m.group(1) in known.perf_fields else "no field of that name in --perf-template (sdpabench --help)"
    if PATH.fullmatch(span):
        first = span.split("/", 1)[0]
        if ANGLE.fullmatch(first) or CAPS.fullmatch(first):  # the user's folder
            return None
        if known.path_exists(span) or known.spelled(span.split("#", 1)[0]) or span in example:
            return None
        return "no such file or folder in the repository, and the code spells no such path"
    if FILE.fullmatch(span):
        if span in known.basenames or known.spelled(span) or span in example:
            return None
        rx = re.compile(placeholder_pattern(span, r"[^/\s]+"))
        if any(rx.fullmatch(b) for b in known.basenames):
            return None
        return "no file of that name in the repository, and the code spells no such file name"
    m = MACRO.fullmatch(span)
    if m:
        name = m.group(1)
        if name in known.statuses or name in known.words or name in EXTERNAL:
            return None
        if ANGLE.search(name) and re.search(rf"\b{placeholder_pattern(name, r'[A-Za-z0-9_]+', False)}\b", known.code):
            return None
        return f"no status {name} in sdpabench --list-statuses=json, and no macro, environment or CMake variable of that name in the code"
    m = GTEST.fullmatch(span)
    if m:
        if span in known.gtests or (m.group(1) in known.words and m.group(2) in known.words):
            return None
        return "no such GoogleTest test, nor NAME.MEMBER of the code"
    m = CODE.fullmatch(span)
    if not m:
        return None
    name = m.group(1)
    if name.startswith("std::"):
        return None
    comps = [c.lstrip("~") for c in name.split("::") if c != "sdpa"]
    if not comps:
        return None
    is_code = bool(m.group(2)) or len(comps) > 1 or re.fullmatch(r"[A-Z]\w*[a-z]\w*|k[A-Z]\w*|sdpabench_\w+|[a-z<][\w<>]*_\w+", comps[0])
    if not is_code:
        return None
    for c in comps:
        if ANGLE.search(c):  # a placeholder in a name: some word of the code must fit it
            rx = re.compile(placeholder_pattern(c, r"\w+", False))
            if any(rx.fullmatch(w) for w in known.words | known.fields):
                continue
            return f"no C++ or Python name, result field or word of the code fits '{c}'"
        if not known.name_known(c):
            return f"no C++ or Python name, test, CMake target, result field or word of the code '{c}'"
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


def section_table(path: pathlib.Path, title: str) -> list:
    """The rows (lists of the cells' text, the header first) of the first table under the heading
    `title`."""
    md = MarkdownIt("commonmark").enable("table")
    toks = md.parse(path.read_text(encoding="utf-8"))
    rows, inside = [], False
    for k, tok in enumerate(toks):
        if tok.type == "heading_open":
            inside = toks[k + 1].content == title
        elif inside and tok.type == "tr_open":
            rows.append([])
        elif inside and tok.type == "inline" and rows:
            rows[-1].append(tok.content)
        elif inside and tok.type == "table_close":
            break
    return rows


def smoke_size(exe: str, root: pathlib.Path = ROOT) -> int:
    """The number of cases of cases/ci/smoke.cases (its --mode=L listing)."""
    out = subprocess.run([exe, "--no-progress", "--backend=ref", "--mode=L", f"--batch={root}/cases/ci/smoke.cases"],
                         capture_output=True, text=True, check=True).stdout
    return int(re.search(r"^tests:(\d+)", out, re.M).group(1))


def shown(doc: pathlib.Path, root: pathlib.Path) -> str:
    """The doc's path as the messages name it: from the repository's root when it is inside."""
    return str(doc.relative_to(root)) if doc.is_relative_to(root) else str(doc)


def check(known: Known, exe: str, layers: pathlib.Path, docs, root: pathlib.Path = ROOT) -> list:
    """FILE[:LINE]: what is stale, for each stale name or claim of `docs`."""
    errors = []
    for doc in docs:
        name = shown(doc, root)
        example = "\n".join(command for _, command in code_blocks(doc))
        for line, command in code_blocks(doc):
            why = command_problem(command.split(), known)
            if why:
                errors.append(f"{name}:{line}: example `{command}`: {why}")
        for line, span, column in code_spans(doc):
            if column in OTHER_PROGRAMS:
                continue
            key = (span, span in example)  # the same span gets the same answer (the self-test checks many copies)
            if key not in known.answers:
                known.answers[key] = problem(span, known, example)
            why = known.answers[key]
            if why:
                errors.append(f"{name}:{line}: `{span}`: {why}")
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
    built = {}
    for line in layers.read_text().splitlines():
        folder, _, used = line.partition(":")
        built[folder.strip()] = (f"sdpabench_{folder.strip()}", sorted(used.split()))
    for doc in docs:  # "the backends layer links only `core`, `graph`, `ref` and `compare`"
        text = doc.read_text(encoding="utf-8")
        for m in LAYER_CLAIM.finditer(text):
            said = sorted(re.findall(r"`(\w+)`", m.group(2)))
            if m.group(1) in built and said != built[m.group(1)][1]:
                errors.append(f"{shown(doc, root)}:{text.count(chr(10), 0, m.start()) + 1}: the {m.group(1)} layer "
                              f"links only {said}, says the doc; the build (CMakeLists.txt sdpabench_layer) says "
                              f"{built[m.group(1)][1]}")
    design = next((d for d in docs if d.name == "design.md"), None)
    if design:
        table = layer_table(design)
        for folder in sorted(set(built) | set(table)):
            if table.get(folder) != built.get(folder):
                errors.append(f"{design}: layer table row `{folder}/`: the docs say {table.get(folder)}, "
                              f"the build (CMakeLists.txt sdpabench_layer) says {built.get(folder)}")
    readme = next((d for d in docs if d.name == "README.md" and d.parent.name != "compare"), None)
    rows = section_table(readme, "Results by CPU") if readme else []
    if rows and "smoke" in rows[0]:
        col, size = rows[0].index("smoke"), smoke_size(exe, root)
        for row in rows[1:]:
            counts = re.findall(r"(\d+) ([A-Z][A-Z_]+)", row[col])
            if sum(int(n) for n, _ in counts) != size:
                errors.append(f"{readme}: section 'Results by CPU', row '{row[0]}': the smoke statuses "
                              f"'{row[col]}' add up to {sum(int(n) for n, _ in counts)}, the smoke set "
                              f"(cases/ci/smoke.cases, --mode=L) has {size} cases: measure that row again")
    return errors


# A wrong name of each kind, planted in a copy of each kind of doc: (kind, span).
PLANTS = [("path", "compare/no_such_file.cpp"), ("path with a placeholder", "backends/VENDOR/no_such_file.hpp"),
          ("bare file", "no_such_file.hpp"), ("knob value", "--dir=fwd_q"), ("function", "no_such_function(p)"), ("type", "NoSuchType"),
          ("member", "Backend::no_such_member"), ("constant", "kNoSuchTable"), ("knob", "--no-such-knob=1"),
          ("option", "sdpabench --no-such-option b1sq1d1"), ("script option", "scripts/compare_runs.py --no-such-flag"),
          ("status", "PASSSED"), ("status line", "0:FAILLED (mismatch) __REPRO: b1sq1d1"),
          ("repro knob", "0:PASSED (1 ms) __REPRO: --no-such-knob=1 b1sq1d1"), ("macro", "SDPABENCH_NO_SUCH_MACRO"),
          ("CMake option", "-DSDPABENCH_NO_SUCH_OPTION=ON"), ("perf field", "%no_such_field%")]
# The kinds of doc they are planted in: a how-to, design.md, README, other docs, a folder's README.
PLANTED_DOCS = ["docs/howto-add-backend.md", "docs/design.md", "README.md", "docs/knobs_run.md", "compare/README.md"]


def self_test(exe: str, layers: pathlib.Path) -> int:
    """Each planted wrong name is reported, naming FILE:LINE and the span; the copies without a
    plant, and true placeholders, are not."""
    known = Known(exe, ROOT)
    failed = 0

    def expect(what: str, errors: list, *needles) -> None:
        nonlocal failed
        ok = len(errors) == 1 and all(n in errors[0] for n in needles)
        print(f"planted {what}: {'reported' if ok else 'NOT reported as expected'}: {errors}")
        failed += not ok

    with tempfile.TemporaryDirectory() as tmp:
        for rel in PLANTED_DOCS:
            text = (ROOT / rel).read_text(encoding="utf-8").rstrip("\n")
            copy = pathlib.Path(tmp) / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            line = len(text.split("\n")) + 2
            for kind, span in PLANTS:
                copy.write_text(f"{text}\n\nA planted {kind}: `{span}`.\n", encoding="utf-8")
                expect(f"{kind} in {rel}", check(known, exe, layers, [copy]), f"{copy}:{line}: `{span}`")
            copy.write_text(f"{text}\n\n```sh\nsdpabench --dir=bwd \\\n    --no-such-option b1sq1d1\n```\n", encoding="utf-8")
            expect(f"example option in {rel}", check(known, exe, layers, [copy]), f"{copy}:{line + 1}: example", "--no-such-option")
            copy.write_text(f"{text}\n\nThe backends layer links only `core` and\n`graph`.\n", encoding="utf-8")
            expect(f"layer sentence in {rel}", check(known, exe, layers, [copy]), f"{copy}:{line}: the backends layer")
            # and the command line: exit 1, naming the file, the line and the span
            copy.write_text(f"{text}\n\nA planted knob: `--no-such-knob=1`.\n", encoding="utf-8")
            run = subprocess.run([sys.executable, __file__, exe, str(layers), str(copy)], capture_output=True, text=True)
            ok = run.returncode == 1 and f"{copy}:{line}: `--no-such-knob=1`" in run.stdout
            print(f"check_docs.py on {rel} with a planted knob: {'exit 1' if ok else 'NOT exit 1 naming it'}: {run.stdout}")
            failed += not ok
        placeholders = pathlib.Path(tmp) / "placeholders.md"
        placeholders.write_text("`cmake/VENDOR.cmake`, `backends/<vendor>/`, `OUT/merged.jsonl`, `--batch=FILE`, "
                                "`SDPABENCH_<VENDOR>`, `faulty:KIND`, `N:STATUS (reason)`\n", encoding="utf-8")
        errors = check(known, exe, layers, [placeholders])
        print(f"true placeholders: {'not reported' if not errors else 'REPORTED'}: {errors}")
        failed += bool(errors)
        design = pathlib.Path(tmp) / "design.md"
        text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
        design.write_text(text.replace("| `sdpabench_compare` | `core` `ref` |", "| `sdpabench_compare` | `core` `ref` `backends` |"),
                          encoding="utf-8")
        expect("upward layer (compare uses backends)", check(known, exe, layers, [design]), "layer table", "`compare/`")
        fields = pathlib.Path(tmp) / "perf_and_reports.md"
        text = (ROOT / "docs" / "perf_and_reports.md").read_text(encoding="utf-8")
        fields.write_text(text.replace("`alone_status` (", "`alone_stat` (", 1), encoding="utf-8")
        errors = check(known, exe, layers, [fields])
        ok = (len(errors) == 3 and "`alone_stat`: no C++" in errors[0] and "CSV column `alone_status`" in errors[1]
              and "names `alone_stat`" in errors[2])
        print(f"planted result field (alone_stat for alone_status): {'reported' if ok else 'NOT reported'}: {errors}")
        failed += not ok
        readme = pathlib.Path(tmp) / "README.md"
        text = (ROOT / "README.md").read_text(encoding="utf-8")
        row = re.search(r"^\|.*\| (\d+) PASSED", text, re.M)
        readme.write_text(text[:row.start(1)] + str(int(row.group(1)) + 1) + text[row.end(1):], encoding="utf-8")
        expect("smoke count one off in README's 'Results by CPU'", check(known, exe, layers, [readme]),
               "Results by CPU", "measure that row again")
    print(f"check_docs.py --self-test: {'FAILED' if failed else 'passed'}")
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="check that planted wrong names are reported")
    ap.add_argument("sdpabench", help="the sdpabench executable")
    ap.add_argument("layers", type=pathlib.Path, help="the build's layers.txt")
    ap.add_argument("docs", nargs="*", type=pathlib.Path, help="default: every Markdown file of the project")
    args = ap.parse_args()
    if args.self_test:
        return self_test(args.sdpabench, args.layers)
    docs = args.docs or project_docs()
    errors = check(Known(args.sdpabench, ROOT), args.sdpabench, args.layers, docs)
    for e in errors:
        print(e)
    print(f"check_docs.py: {len(docs)} file(s), {len(errors)} stale name(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
