"""Generated JSONL reports for the scripts/history tests (history_test.sh,
history_page_browser_test.sh): a run's context record and its case records, shaped as
reports/jsonl_reporter.cpp writes them, with the values a test plants."""
import json
import math
import os


def ctx(rev, machine=None, onednn="3.9", host="host1", threads=2, calib=1.0, **extra):
    """The context record of a run at revision `rev` on machine `machine` (a --tags=machine:, else
    told by host, CPU and threads), oneDNN `onednn`, its calibration kernel's median `calib` ms."""
    tags = {"rev": str(rev), "commit_time": f"2026-11-{rev:02d}T00:00:00Z"}
    if machine:
        tags["machine"] = machine
    c = {"sdpabench": "0.1.0", "git_commit": "abc", "command": f"sdpabench --tags=rev:{rev} {host}", "host": host,
         "cpu": "CPU X", "threads": threads, "gpu": "", "libraries": {"onednn": onednn}, "tags": tags,
         "start": f"2026-12-{rev:02d}T0{1 if machine else 2}:00:00Z", "shard": None, "cpus": 2,
         "noise": {"start": {"loadavg": 0.1, "steal": 0.0, "calib_ms": calib, "calib_cv": 0.01, "calib_slow": 0.0,
                             "calib_reps": 25}}}
    c.update(extra)
    return {"context": c}


def case(name, median=None, ratio=None, noisy=False, output="O", status="PASSED", idx=0):
    """A case record of case id "--backend=ref b1hq2sq64d16n=NAME": timed at `median` ms (cv 0.3
    when `noisy`), its output `output` checked with worst_ratio `ratio` (FAILED from 1 on)."""
    r = {"idx": idx, "id": f"--backend=ref b1hq2sq64d16n={name}", "status": status, "backend": "ref",
         "repro": f"--backend=ref b1hq2sq64d16n={name}", "checked": ratio is not None, "perf": None, "outputs": []}
    if median is not None:
        r["perf"] = {"runs": 9, "median_ms": median, "tflops": 1.0 / median if median else None,
                     "cv": 0.3 if noisy else 0.01, "noisy": noisy}
    if ratio is not None:
        r["outputs"] = [{"output": output, "pass": ratio < 1, "failure": "none" if ratio < 1 else "bound", "worst_ratio": ratio}]
    return r


def wiggle(rev, k):
    """A fixed, small run-to-run spread: +-1%."""
    return 1 + 0.01 * math.sin(rev * 2.3 + k)


def write(folder, name, records):
    """Writes the records as the JSONL report folder/name."""
    with open(os.path.join(folder, name), "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in records))
