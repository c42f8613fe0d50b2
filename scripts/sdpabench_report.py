"""Reading sdpabench's reports, for the scripts in this folder: JSON Lines (--report=jsonl:PATH)
and CSV (--report=csv:PATH).

A jsonl report is an optional first record {"context": {...}} (the run's context:
docs/perf_and_reports.md#reports---reportformatpath) followed by one JSON object per case, and
for a run that ended a last record {"end": {"cases": N, "noise": ...}} (reports from before it, and
killed runs, have none). A csv
report is "# KEY: VALUE" comment lines (the same context, flattened: "libraries.onednn",
"shard.index"), a header row of the result-field columns, and one row per case. Standard library
only.
"""
import csv
import json

# The statistics of a case's timed runs in its report's perf record (reports/result_fields.cpp
# perf_field rows), the ones a script may compare runs by (--stat of compare_runs.py and
# ab_interleave.py); the first is the default.
TIME_STATS = ("median_ms", "min_ms", "mean_ms")


class ReportError(Exception):
    """A report that cannot be read: the message names FILE[:LINE] and the problem."""


def is_csv(path):
    """True for a path that names a csv report (by its extension, as --report names formats)."""
    return path.lower().endswith(".csv")


def read_csv_rows(path):
    """(comment lines as written, {KEY: VALUE} of the "# KEY: VALUE" lines, header, rows) of a csv
    report, rows as lists of strings. Raises ReportError for a file without a header row or a row
    whose field count is not the header's (a cut file), OSError and UnicodeDecodeError as open()."""
    with open(path, newline="", encoding="utf-8") as f:
        lines = f.read().split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    comments = []
    while len(comments) < len(lines) and lines[len(comments)].startswith("# "):
        comments.append(lines[len(comments)])
    fields = dict(line[2:].rstrip("\r\n").split(": ", 1) for line in comments if ": " in line)
    rows = list(csv.reader(lines[len(comments):]))
    if not rows:
        raise ReportError(f"{path}: no header row")
    for n, row in enumerate(rows[1:], 1):
        if len(row) != len(rows[0]):
            raise ReportError(f"{path}: row {n} has {len(row)} fields, the header {len(rows[0])} (a cut file?)")
    return comments, fields, rows[0], rows[1:]


def csv_value(text):
    """A csv field as the jsonl report has it: None for an empty field, true/false as booleans,
    numbers as int or float, anything else as text."""
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def context_of(fields):
    """The context record of flattened "# KEY: VALUE" lines: "a.b" keys nested as {"a": {"b": ...}},
    values that are JSON numbers as numbers."""
    ctx = {}
    for key, value in fields.items():
        try:
            v = json.loads(value) if value[:1].isdigit() or value[:1] == "-" else value
        except json.JSONDecodeError:
            v = value
        if "." in key:
            outer, inner = key.split(".", 1)
            ctx.setdefault(outer, {})
            if isinstance(ctx[outer], dict):
                ctx[outer][inner] = v
        else:
            ctx[key] = v
    return ctx


def read_csv_report(path):
    """(context dict or None, case records) of a csv report, each record shaped as a jsonl record
    where the columns allow: its columns at the top level, and for a timed case (median_ms given)
    a "perf" object holding the same columns (jsonl keeps the timing fields there), None otherwise.
    The csv has no per-run samples (perf.samples_ms), no per-output checks and no notes."""
    try:
        comments, fields, header, rows = read_csv_rows(path)
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise ReportError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    cases = []
    for row in rows:
        rec = {name: csv_value(text) for name, text in zip(header, row)}
        rec["perf"] = dict(rec) if rec.get("median_ms") is not None else None
        cases.append(rec)
    return (context_of(fields) if comments else None), cases


def read_report(path):
    """(context dict or None, case records in file order) of a jsonl report, or of a csv report
    (by its extension, read_csv_report); a jsonl report's end record is not a case (read_jsonl_report
    gives it). Raises ReportError as read_jsonl_report."""
    if is_csv(path):
        return read_csv_report(path)
    context, cases, _ = read_jsonl_report(path)
    return context, cases


def read_jsonl_report(path):
    """(context dict or None, case records in file order, the end record's object or None) of a
    jsonl report. Raises ReportError for an unreadable file, a line that is not a JSON object (a
    killed run's last line may be cut), a context record after the first record or a record after
    the end record (reports concatenated)."""
    context, cases, end = None, [], None
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise ReportError(f"{path}: {e.strerror}") from None
    with f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ReportError(f"{path}:{n}: not JSON ({e}); a killed run's last line may be cut") from None
            if not isinstance(rec, dict):
                raise ReportError(f"{path}:{n}: not a JSON object")
            if end is not None:
                raise ReportError(f"{path}:{n}: a record after the end record (reports concatenated?)")
            if "context" in rec:
                if context is not None or cases:
                    raise ReportError(f"{path}:{n}: a context record after the first line (reports concatenated?)")
                if not isinstance(rec["context"], dict):
                    raise ReportError(f"{path}:{n}: the context record's \"context\" is not an object")
                context = rec["context"]
                continue
            if "end" in rec:
                if not isinstance(rec["end"], dict):
                    raise ReportError(f"{path}:{n}: the end record's \"end\" is not an object")
                end = rec["end"]
                continue
            cases.append(rec)
    return context, cases, end
