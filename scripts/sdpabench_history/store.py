"""scripts/history's reading of sdpabench's results store (docs/tracking.md): the connection
(sqlite:PATH or postgresql:URL, read-only), and every case of the store's runs as a Point, in run
order; the stored numbers and flags read the same from SQLite and PostgreSQL."""
import json
import math
import os
import re
import sqlite3
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field

SCHEMA_VERSIONS = (1, 2)  # the store schema versions this reader knows (reports/results_store.cpp migrations)
# The timing metrics a series may be of: what each is (its axis label on the page), its unit, and
# which way is better; the first is --metric's default.
TIMING_METRICS = {"median_ms": {"what": "median time (ms)", "unit": "ms", "lower_is_better": True},
                  "tflops": {"what": "TFLOP/s at the median time", "unit": "TFLOP/s", "lower_is_better": False}}
# The run context's fields whose change between two runs of a machine is a finding ("context")
# and is named with a change at that revision (reports/jsonl_reporter.cpp context_record).
CONTEXT_FIELDS = ("sdpabench", "git_commit", "build_type", "host", "cpu", "gpu", "threads", "cpus", "isa",
                  "cpu_governor")


class Unusable(Exception):
    """A store that cannot be read, or bad usage: exit 2 with the message."""


def connect(db):
    """A DB-API connection to the store `db` ("sqlite:PATH" or "postgresql:URL"), read-only."""
    kind, sep, target = db.partition(":")
    if not sep or not target or kind not in ("sqlite", "postgresql"):
        # Not the text itself: a URL may hold a password (docs/tracking.md#passwords).
        raise Unusable(f"--db: expects sqlite:PATH or postgresql:URL, got {'kind ' + repr(kind) if sep else 'no KIND:'}")
    if kind == "sqlite":
        if not os.path.isfile(target):
            raise Unusable(f"--db: no store at {target} (sdpabench --report=sqlite:{target} makes one)")
        # mode=rw, not ro: a reader must be able to roll back the journal a killed writer left.
        return sqlite3.connect(f"file:{urllib.parse.quote(target)}?mode=rw", uri=True, timeout=60)
    try:
        import psycopg
    except ImportError:
        raise Unusable("postgresql stores need psycopg: run scripts/history (the venv of scripts/setup.sh has it)")
    if target.startswith("//"):
        # "postgresql://..." read as KIND "postgresql" and target "//...": libpq would echo it.
        raise Unusable("--db: expects postgresql:URL, and the URL has its own scheme: "
                       "--db=postgresql:postgresql://USER@HOST:PORT/DATABASE")
    try:
        return psycopg.connect(target, autocommit=True)
    except psycopg.Error as e:
        # libpq's reason may quote the text, password and all (docs/tracking.md#passwords).
        secret = "@" in target or "password" in target.lower()
        why = "its reason is left out: the URL holds a password" if secret else str(e).strip()
        raise Unusable(f"--db: cannot connect to the PostgreSQL store ({why})")


def json_column(v):
    """A stored JSON column: psycopg decodes it itself, sqlite3 gives the text (None: NULL or
    not JSON)."""
    if v is None or isinstance(v, (dict, list)):
        return v
    try:
        return json.loads(v)
    except (TypeError, ValueError):
        return None


def as_dict(v):
    """v when it is a JSON object, else {} (a report written by hand may hold anything)."""
    return v if isinstance(v, dict) else {}


def rows(conn, sql):
    """Every row of query `sql` on the connection `conn`, as tuples."""
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchall()


def flag(v):
    """A stored flag or JSON boolean (1/0 from SQLite, 'true'/'false' text from PostgreSQL's ->>)."""
    return v in (1, True, "1", "true")


def number(v):
    """A stored number or JSON number as float (PostgreSQL's ->> gives text), None when absent,
    not finite or not a number (a boolean, a word)."""
    if v is None or isinstance(v, bool) or v in ("", "true", "false"):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def positive(v):
    """number(v) when it is above 0 (a time, a rate), else None."""
    x = number(v)
    return x if x is not None and x > 0 else None


def share(v):
    """number(v) when it is in [0, 1] (a share of repetitions or of CPU time), else None."""
    x = number(v)
    return x if x is not None and 0 <= x <= 1 else None


@dataclass
class Point:
    """One case in one run: a point of each of its series."""
    run: str
    case: str
    backend: str
    machine: str
    rev: str            # the order tag's value (or the start time), as text
    order: tuple        # the sort key
    status: str
    noisy: bool
    repro: str
    median_ms: float = None  # the timing metrics: a field per TIMING_METRICS key, set by load from its table
    tflops: float = None
    cv: float = None
    attributes: dict = field(default_factory=dict)  # the context facts "what else changed" compares
    outputs: dict = field(default_factory=dict)     # output -> (pass, worst_ratio or None)
    noise: dict = field(default_factory=dict)       # the run's noise samples: {"start": {...}, "end": {...}}
    threads: int = 0                                # the run's OpenMP threads
    cpus: int = 0                                   # the CPUs the run could use
    noisy_run: bool = False                         # the run was judged noisy (judge_runs)


def machine_of(ctx):
    """The machine of a run: its --tags=machine:, else "HOST (CPU[; GPU]; N threads)"."""
    tags = as_dict(ctx.get("tags"))
    if tags.get("machine"):
        return tags["machine"]
    gpu = f"; {ctx['gpu']}" if ctx.get("gpu") else ""
    return f"{ctx.get('host', '?')} ({ctx.get('cpu', '?')}{gpu}; {ctx.get('threads', '?')} threads)"


def attributes_of(ctx, order_by):
    """The context facts whose change "changes" reports: versions, commit, machine, threads, tags."""
    out = {k: str(ctx.get(k, "")) for k in CONTEXT_FIELDS}
    for name, version in as_dict(ctx.get("libraries")).items():
        out[f"libraries.{name}"] = str(version)
    for k, v in as_dict(ctx.get("tags")).items():
        if k not in ("run", "machine", order_by):
            out[f"tags.{k}"] = str(v)
    return out


def load(db, order_by=None, include_incomplete=False, notes=None):
    """Every case point of the store's complete runs (all runs with include_incomplete), ordered.
    `notes` gets a line for each thing left out. Returns (points, order_by used)."""
    notes = notes if notes is not None else []
    conn = connect(db)
    try:
        try:
            version = rows(conn, "SELECT MAX(version) FROM store_schema")[0][0]
        except Exception as e:  # sqlite3.Error, psycopg.Error
            raise Unusable(f"--db: {db} is not an sdpabench results store ({str(e).strip()})")
        if version not in SCHEMA_VERSIONS:
            raise Unusable(f"--db: the store has schema version {version}; this scripts/history reads "
                           f"{', '.join(map(str, SCHEMA_VERSIONS))}: use the sdpabench checkout that wrote it")
        complete = {k: flag(c) for k, c in rows(conn, "SELECT run_key, complete FROM run_state")}
        # psycopg decodes JSON columns itself; sqlite3 gives the text.
        # Version 2 keeps each part's end record (with the noise sample at its end).
        ends = "end_record" if version >= 2 else "NULL"
        contexts, end_noise = {}, {}
        for k, p, c, e in rows(conn, f"SELECT run_key, part, context, {ends} FROM run_parts"):
            contexts[(k, p)] = as_dict(json_column(c))
            end_noise[(k, p)] = as_dict(as_dict(as_dict(json_column(e)).get("noise")).get("end"))
        timings = ", ".join(f"record -> 'perf' ->> '{m}'" for m in TIMING_METRICS)
        cases = rows(conn, "SELECT run_key, case_id, part, status, backend, noisy, record ->> 'repro', "
                           f"record -> 'perf' ->> 'cv', {timings} FROM cases")
        outputs = defaultdict(dict)
        for k, c, o, p, w in rows(conn, "SELECT run_key, case_id, output, pass, worst_ratio FROM case_outputs"):
            w = number(w)
            outputs[(k, c)][o] = (flag(p), w if w is not None and w >= 0 else None)
    finally:
        conn.close()
    left = sorted(k for k, c in complete.items() if not c)
    if left and not include_incomplete:
        notes.append(f"{len(left)} incomplete run(s) left out (--include-incomplete takes them): {', '.join(left)}")
    if order_by is None:
        order_by = "rev" if any("rev" in as_dict(c.get("tags")) for c in contexts.values()) else "start"
    orders, missing = {}, set()
    for key, ctx in contexts.items():
        if not include_incomplete and not complete.get(key[0], False):
            continue
        v = ctx.get("start") if order_by == "start" else as_dict(ctx.get("tags")).get(order_by)
        if v is None:
            missing.add(key[0])
        else:
            orders[key] = str(v)
    if contexts and not orders and order_by != "start":
        tags = sorted({t for c in contexts.values() for t in as_dict(c.get("tags"))})
        raise Unusable(f"--order-by: no run has a {order_by} tag; the runs' tags: {', '.join(tags) or 'none'}")
    if missing:
        notes.append(f"{len(missing)} run(s) without a {order_by} tag left out: {', '.join(sorted(missing))}")
    numeric = all(is_number(v) for v in orders.values())
    words = sorted({v for v in orders.values() if not is_number(v)})
    if not numeric and len(words) < len(set(orders.values())):
        notes.append(f"{order_by} values that are not numbers ({', '.join(words[:5])}{', ...' if len(words) > 5 else ''}) "
                     "order every run as text, number runs of digits by value")
    points, bad = [], 0
    for run, case, part, status, backend, noisy, repro, cv, *timings in cases:
        if (run, part) not in orders:
            continue
        bad += sum(v is not None and positive(v) is None for v in timings)
        ctx = contexts[(run, part)]
        rev = orders[(run, part)]
        noise = {"start": as_dict(as_dict(ctx.get("noise")).get("start")), "end": end_noise.get((run, part))}
        points.append(Point(run=run, case=case, backend=backend, machine=machine_of(ctx), rev=rev,
                            order=(float(rev) if numeric else natural_key(rev), str(ctx.get("start", "")), run),
                            status=status, noisy=flag(noisy), repro=repro or "", cv=number(cv),
                            **{m: positive(v) for m, v in zip(TIMING_METRICS, timings)},
                            attributes=attributes_of(ctx, order_by),
                            outputs=outputs.get((run, case), {}), noise={k: v for k, v in noise.items() if v},
                            threads=int(number(ctx.get("threads")) or 0), cpus=int(number(ctx.get("cpus")) or 0)))
    if bad:
        notes.append(f"{bad} timing(s) that are not positive numbers left out")
    points.sort(key=lambda p: p.order)
    return points, order_by


def natural_key(text):
    """A sort key of text that orders runs of digits by value ("v2" before "v10")."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", text))


def is_number(v):
    """True when v (an order tag's value) reads as a finite number."""
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False

