#!/usr/bin/env python3
"""Parses the jsonl, JUnit and CSV reports of perf_reports_e2e.sh back (standard library only)
and checks their fields. Usage: check_reports.py R.jsonl R.xml R.csv"""
import csv
import json
import sys
import xml.etree.ElementTree as ET


def check(cond, msg):
    if not cond:
        print(f"check_reports: {msg}")
        sys.exit(1)


def main():
    jsonl, xml_path, csv_path = sys.argv[1:4]
    recs = [json.loads(line) for line in open(jsonl, encoding="utf-8")]
    ctx = recs.pop(0).get("context")
    check(ctx is not None and ctx["threads"] >= 1 and ctx["sdpabench"] and "--report=jsonl:" in ctx["command"],
          f"first jsonl record is the run context: {ctx}")
    # The build and the machine's noise before the first case and after the last (the end record).
    check(isinstance(ctx.get("build_type"), str) and ctx["build_type"] != "" and isinstance(ctx.get("cpu_governor"), str),
          f"the context names the build type and the CPU governor: {ctx.get('build_type')!r} {ctx.get('cpu_governor')!r}")
    end = recs.pop().get("end")
    check(end is not None and end["cases"] == 4, f"last jsonl record is the end record with the case count: {end}")
    for when, noise in (("start", ctx.get("noise")), ("end", end.get("noise"))):
        sample = (noise or {}).get(when) or {}
        check(sample.get("calib_reps", 0) >= 2 and sample.get("calib_ms", 0) > 0 and sample.get("calib_cv") is not None
              and sample.get("loadavg") is not None and sample["loadavg"] >= 0
              and (sample.get("steal") is None or 0 <= sample["steal"] <= 1),
              f"the {when} noise sample: {noise}")
    check(len(recs) == 4, f"expected 4 jsonl case records, got {len(recs)}")
    check(all(r["id"] == r["repro"] for r in recs if r["repro"]), "a case's id is its repro")
    check(recs[1]["id"].endswith(":2"), f"a parse error's id is FILE:LINE: {recs[1]['id']}")
    cp, bad, p, c = recs
    check(cp["status"] == "PASSED" and cp["mode"] == "CP" and cp["checked"], f"CP record: {cp}")
    check(cp["perf"]["runs"] == 3, "CP: --fix-times=3 must give 3 runs")
    check(len(cp["perf"]["samples_ms"]) == 3 and min(cp["perf"]["samples_ms"]) == cp["perf"]["min_ms"],
          "CP: samples_ms holds every timed run")
    check(cp["perf"]["min_ms"] <= cp["perf"]["median_ms"] <= cp["perf"]["max_ms"], "CP: min <= median <= max")
    # b1hq2sq32d16, no mask: N = 32*32, fwd = 2*2*N*(16+16)
    check(cp["flops"] == 2 * 2 * 32 * 32 * 32, f"CP flops {cp['flops']}")
    check(cp["perf"]["gflops"] > 0, "CP gflops")
    check({o["output"] for o in cp["outputs"]} == {"O", "stats"}, "CP outputs O and stats")
    check(all(o["worst_ratio"] is not None and o["worst_ratio"] < 1 for o in cp["outputs"]), "CP margins < 1")
    check(bad["status"] == "INVALID_ARGUMENTS" and 'a<b"c&e' in bad["reason"], f"bad record: {bad}")
    check(p["status"] == "EXECUTED" and p["mode"] == "P" and not p["checked"] and p["outputs"] == [], "P record")
    # causal_br, S_q 16, S_kv 24: rows see 9..24 keys = sum(9..24) = 264; bwd = 2*2*264*(3*16+2*16)
    check(p["flops"] == 2 * 2 * 264 * 80, f"P flops {p['flops']}")
    check(c["perf"] is None and c["checked"], "C record has no perf")

    root = ET.parse(xml_path).getroot()  # raises on malformed XML
    suite = root.find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    check(props.get("threads") == str(ctx["threads"]) and "git_commit" in props, f"JUnit properties: {props}")
    check(suite.get("tests") == "4" and suite.get("errors") == "1" and suite.get("failures") == "0",
          f"testsuite counts {suite.attrib}")
    cases = suite.findall("testcase")
    check(len(cases) == 4, "4 testcases")
    err = cases[1].find("error")
    check(err is not None and err.get("type") == "INVALID_ARGUMENTS", "error element for the bad line")
    check('a<b"c&e' in err.get("message"), "unescaped reason round-trips through XML")
    check(cases[0].get("classname") == "sdpabench.ref.fwd_t", cases[0].get("classname"))
    check(cases[0].get("name") == "--backend=ref --mode=CP b1hq2sq32d16n=cp.case", cases[0].get("name"))
    check(cases[1].get("name").endswith("r.cases:2"), f"a parse error is named FILE:LINE: {cases[1].get('name')}")
    check("perf: runs 3" in cases[0].find("system-out").text, "perf figures in system-out")

    lines = open(csv_path, newline="", encoding="utf-8").read().splitlines(keepends=True)
    comments = [l for l in lines if l.startswith("# ")]
    check(any(l.startswith("# threads: ") for l in comments) and lines[len(comments)].startswith("idx,id,"),
          "csv: the run context as '# KEY: VALUE' lines, then the header")
    rows = list(csv.DictReader(lines[len(comments):]))
    check(len(rows) == 4, f"4 csv rows, got {len(rows)}")
    check('a<b"c&e' in rows[1]["reason"], "csv reason round-trips")
    check(rows[0]["runs"] == "3" and float(rows[0]["median_ms"]) > 0, "csv timing columns")
    check(rows[3]["runs"] == "", "csv: untimed case has empty timing columns")
    print("check_reports: ok")


main()
