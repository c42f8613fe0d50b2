#!/usr/bin/env python3
"""Merges the reports of the shards of one sdpabench run (--shard=I/N) into one report.

Usage: merge_reports.py OUT SHARD_REPORT...

The format follows OUT's extension: .jsonl (JSON Lines), .csv, .xml (JUnit); every input has the
same format. Each shard's report names its shard in its run context (jsonl "context"."shard",
csv "# shard.*" comment lines, JUnit "shard.*" properties). The merge checks that the inputs are
the N shards of one run, each exactly once (same N and the same number of cases in the whole
run), that no case id appears in two shards, and that together they hold every case of the run
(indices 0 .. cases_total-1, each once), with the same case list (its fingerprint), sdpabench
version, git commit and library versions. The merged jsonl and csv hold the cases in the order of
the unsharded run (by idx), after the first shard's context without its shard; the merged jsonl
ends with one end record when every input has one (every shard ended): the shards' case counts
summed, with the end noise sample of the input whose context heads it, as its start sample is
(a sample is one machine's). The merged JUnit
document has the cases of shard 0, 1, ... (JUnit carries no index), counts recomputed over all
of them, and as suite properties the shared context (with shard.count, shard.cases_total and
shard.cases_fingerprint) and each shard's own command, host and start as shard.I.command,
shard.I.host, shard.I.start.

Exit status: 0 merged; 1 the inputs are not the complete, disjoint shards of one run (each
problem named); 2 bad usage or an unreadable input. Standard library only.
"""
import argparse
import csv
import io
import json
import os
import sys
import xml.etree.ElementTree as ET

from sdpabench_report import ReportError, read_csv_rows, read_jsonl_report


class MergeError(Exception):
    pass


class Unreadable(Exception):
    """An input that cannot be read at all (exit 2)."""


# Context fields the shards of one run share; the case list itself is checked by its fingerprint.
SAME_RUN = ("git_commit", "sdpabench")


def shard_of(path, fields):
    """(index, count, cases_total, fingerprint, {field: value} of SAME_RUN and libraries.*) from a
    flattened context."""
    try:
        shard = (int(fields["shard.index"]), int(fields["shard.count"]), int(fields["shard.cases_total"]),
                 str(fields.get("shard.cases_fingerprint", "")))
    except (KeyError, ValueError):
        raise MergeError(f"{path}: not the report of a sharded run (no shard in its context: run with --shard=I/N)")
    same = {k: str(v) for k, v in fields.items() if k in SAME_RUN or k.startswith("libraries.")}
    return shard + (same,)


def flatten(context):
    out = {}
    for k, v in (context or {}).items():
        if isinstance(v, dict):
            out.update({f"{k}.{k2}": v2 for k2, v2 in v.items()})
        else:
            out[k] = v
    return out


def read_jsonl(path):
    if not os.path.isfile(path):
        raise Unreadable(f"{path}: not a readable file")
    try:
        context, cases, end = read_jsonl_report(path)
    except ReportError as e:
        raise MergeError(str(e))
    except UnicodeDecodeError as e:
        raise Unreadable(f"{path}: not UTF-8 ({e.reason} at byte {e.start})")
    return context, shard_of(path, flatten(context)), cases, end


def read_csv(path):
    try:
        comments, fields, header, rows = read_csv_rows(path)
    except OSError as e:
        raise Unreadable(f"{path}: {e.strerror}")
    except UnicodeDecodeError as e:
        raise Unreadable(f"{path}: not UTF-8 ({e.reason} at byte {e.start})")
    except ReportError as e:
        raise MergeError(str(e))
    return comments, shard_of(path, fields), header, rows


def read_junit(path):
    try:
        root = ET.parse(path).getroot()
    except OSError as e:
        raise Unreadable(f"{path}: {e.strerror}")
    except ET.ParseError as e:
        raise MergeError(f"{path}: not XML ({e})")
    suite = root.find("testsuite")
    if suite is None:
        raise MergeError(f"{path}: no <testsuite>")
    props = suite.find("properties")
    fields = {p.get("name"): p.get("value") for p in props} if props is not None else {}
    return suite, shard_of(path, fields), suite.findall("testcase")


def check_shards(paths, shards, ids_per_input, idx_per_input):
    """Raises MergeError listing every way the inputs fail to be the N shards of one run."""
    problems = []
    runs = {(c, t, fp) for _, c, t, fp, _ in shards}
    if len(runs) > 1:
        problems.append("the inputs come from different runs (another case list or N): " + ", ".join(
            f"{p}: shard {i}/{c} of {t} cases, case list {fp or '?'}" for p, (i, c, t, fp, _) in zip(paths, shards)))
    for field in sorted({f for *_, same in shards for f in same}):
        values = {same.get(field) for *_, same in shards}
        if len(values) > 1:
            problems.append(f"the shards differ in {field}: " + ", ".join(
                f"{p}: {same.get(field)}" for p, (*_, same) in zip(paths, shards)))
    count, total = shards[0][1], shards[0][2]
    seen = {}
    for p, (i, *_) in zip(paths, shards):
        if i in seen:
            problems.append(f"shard {i} is given twice: {seen[i]} and {p}")
        seen[i] = p
    missing = [i for i in range(count) if i not in seen]
    if missing:
        problems.append(f"missing shard(s) {', '.join(map(str, missing[:20]))}{' ...' if len(missing) > 20 else ''} of {count}")
    owner, twice = {}, []
    for p, ids in zip(paths, ids_per_input):
        for case_id in ids:
            if case_id in owner and owner[case_id] != p:
                twice.append(f"case {case_id} is in {owner[case_id]} and in {p}")
            owner[case_id] = p
    problems += twice[:5] + ([f"... and {len(twice) - 5} more case(s) in two shards"] if len(twice) > 5 else [])
    if idx_per_input is not None:
        all_idx = sorted(i for idx in idx_per_input for i in idx)
        if all_idx != list(range(total)) and not missing:
            have = set(all_idx)
            gone = [i for i in range(total) if i not in have]
            problems.append(f"the shards hold {len(all_idx)} case(s), the run has {total}"
                            + (f" (missing idx {', '.join(map(str, gone[:10]))})" if gone else ""))
    if problems:
        raise MergeError("not the complete, disjoint shards of one run:\n  " + "\n  ".join(problems))


def merge_jsonl(out, paths):
    inputs = [read_jsonl(p) for p in paths]
    check_shards(paths, [s for _, s, _, _ in inputs], [[r.get("id") for r in c] for _, _, c, _ in inputs],
                 [[r.get("idx") for r in c] for _, _, c, _ in inputs])
    context = dict(inputs[0][0])
    context["shard"] = None
    cases = sorted((r for _, _, c, _ in inputs for r in c), key=lambda r: r["idx"])
    ends = [e for _, _, _, e in inputs]
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps({"context": context}) + "\n")
        for r in cases:
            f.write(json.dumps(r) + "\n")
        if all(e is not None for e in ends):  # every shard ended
            f.write(json.dumps({"end": {"cases": sum(int(e.get("cases") or 0) for e in ends),
                                        "noise": ends[0].get("noise")}}) + "\n")
    return len(cases)


def merge_csv(out, paths):
    inputs = [read_csv(p) for p in paths]
    header = inputs[0][2]
    for p, (_, _, h, _) in zip(paths, inputs):
        if h != header:
            raise MergeError(f"{p}: its header differs from {paths[0]}'s")
    col = {name: k for k, name in enumerate(header)}
    check_shards(paths, [s for _, s, _, _ in inputs], [[r[col["id"]] for r in rows] for *_, rows in inputs],
                 [[int(r[col["idx"]]) for r in rows] for *_, rows in inputs])
    rows = sorted((r for *_, rs in inputs for r in rs), key=lambda r: int(r[col["idx"]]))
    with open(out, "w", newline="", encoding="utf-8") as f:
        f.writelines(c for c in inputs[0][0] if not c.startswith("# shard."))
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return len(rows)


def merge_junit(out, paths):
    inputs = sorted((read_junit(p) + (p,) for p in paths), key=lambda t: t[1][0])
    paths = [t[3] for t in inputs]
    check_shards(paths, [s for _, s, _, _ in inputs], [[c.get("name") for c in cases] for _, _, cases, _ in inputs],
                 None)
    total = inputs[0][1][2]
    cases = [c for _, _, cs, _ in inputs for c in cs]
    if len(cases) != total:
        raise MergeError(f"not the complete, disjoint shards of one run:\n  the shards hold {len(cases)} "
                         f"case(s), the run has {total}")
    counts = {"tests": len(cases), "failures": sum(c.find("failure") is not None for c in cases),
              "errors": sum(c.find("error") is not None for c in cases),
              "skipped": sum(c.find("skipped") is not None for c in cases),
              "time": f"{sum(float(c.get('time', 0)) for c in cases):.6f}"}
    root = ET.Element("testsuites", {"name": "sdpabench", **{k: str(v) for k, v in counts.items()}})
    suite = ET.SubElement(root, "testsuite", {"name": "sdpabench", **{k: str(v) for k, v in counts.items()}})
    props = ET.SubElement(suite, "properties")
    first = inputs[0][0].find("properties")
    per_shard = ("command", "host", "start")  # what each shard has of its own
    for p in (first if first is not None else []):
        name = p.get("name", "")
        if name in per_shard or name == "shard.index":
            continue
        props.append(p)  # the shared context, and shard.count, shard.cases_total, shard.cases_fingerprint
    for suite_in, (index, *_), _, _ in inputs:  # each shard's own: shard.I.command, shard.I.host, ...
        own = suite_in.find("properties")
        values = {q.get("name"): q.get("value") for q in (own if own is not None else [])}
        for name in per_shard:
            if name in values:
                ET.SubElement(props, "property", {"name": f"shard.{index}.{name}", "value": values[name]})
    suite.extend(cases)
    buf = io.BytesIO()
    ET.ElementTree(root).write(buf, encoding="UTF-8", xml_declaration=True)
    with open(out, "wb") as f:
        f.write(buf.getvalue())
    return len(cases)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("shards", nargs="+")
    a = ap.parse_args()
    ext = a.out.rsplit(".", 1)[-1]
    merge = {"jsonl": merge_jsonl, "csv": merge_csv, "xml": merge_junit}.get(ext)
    if merge is None:
        ap.error(f"{a.out}: the extension says the format: .jsonl, .csv or .xml")
    for p in a.shards:
        if p.rsplit(".", 1)[-1] != ext:
            ap.error(f"{p}: every input must have OUT's format (.{ext})")
        if os.path.exists(a.out) and os.path.exists(p) and os.path.samefile(p, a.out):
            ap.error(f"{a.out} is also an input: it would be overwritten")
    try:
        n = merge(a.out, a.shards)
    except MergeError as e:
        print(f"merge_reports: {e}", file=sys.stderr)
        return 1
    except (Unreadable, OSError) as e:
        print(f"merge_reports: {e}", file=sys.stderr)
        return 2
    print(f"merge_reports: {n} case(s) from {len(a.shards)} shard(s) -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
