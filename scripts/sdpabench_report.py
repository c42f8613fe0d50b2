"""Reading sdpabench's JSON Lines reports (--report=jsonl:PATH), for the scripts in this folder.

A report is an optional first record {"context": {...}} (the run's context:
docs/perf_and_reports.md#reports---reportformatpath) followed by one JSON object per case. Standard
library only.
"""
import json


class ReportError(Exception):
    """A report that cannot be read: the message names FILE[:LINE] and the problem."""


def read_report(path):
    """(context dict or None, case records in file order). Raises ReportError for an unreadable
    file, a line that is not a JSON object (a killed run's last line may be cut), or a context
    record after the first record (reports concatenated)."""
    context, cases = None, []
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
            if "context" in rec:
                if context is not None or cases:
                    raise ReportError(f"{path}:{n}: a context record after the first line (reports concatenated?)")
                if not isinstance(rec["context"], dict):
                    raise ReportError(f"{path}:{n}: the context record's \"context\" is not an object")
                context = rec["context"]
                continue
            cases.append(rec)
    return context, cases
