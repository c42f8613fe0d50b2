"""sdpabench's own executables and tables, for the scripts in this folder: where the built
binaries are, and the tables sdpabench prints as JSON (--list-statuses=json, --list-knobs=json),
so that no script keeps a copy of a list the C++ tables hold. Standard library only.
"""
import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TableError(Exception):
    """sdpabench cannot be run or did not print its table: the message says which and how to fix it."""


def executable(name="sdpabench", env="SDPABENCH"):
    """The path of the built executable `name`: $`env` when set, else build/release/NAME of this
    checkout (which may not exist: the caller checks)."""
    return os.environ.get(env) or os.path.join(ROOT, "build", "release", name)


def table(option, exe=None):
    """The JSON array sdpabench prints for `option` (e.g. "--list-statuses=json"), as a list of
    dicts; `exe` the binary (default executable()). Raises TableError when it cannot be run, exits
    non-zero or prints something else."""
    exe = exe or executable()
    how = "scripts/build.sh builds it; $SDPABENCH names another"
    try:
        run = subprocess.run([exe, option], capture_output=True, text=True)
    except OSError as e:
        raise TableError(f"needs sdpabench's table ({exe} {option}): cannot run it ({e.strerror}; {how})")
    try:
        rows = json.loads(run.stdout) if run.returncode == 0 else None
    except ValueError:
        rows = None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "name" in r for r in rows):
        why = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[-1]
        raise TableError(f"needs sdpabench's table ({exe} {option}): it printed no JSON table ({why}); "
                         "an sdpabench older than the option? (scripts/build.sh builds this checkout's)")
    return rows


def statuses(exe=None):
    """sdpabench's case statuses in its table's order (core/status.hpp): [{"name", "what", "error"}]."""
    return table("--list-statuses=json", exe)


def knob(name, exe=None):
    """The row of knob `name` in sdpabench's knob table (driver/knobs.cpp): {"name", "choices",
    "default", "what"}; its choices a |-separated list. Raises TableError for a knob not there."""
    rows = [r for r in table("--list-knobs=json", exe) if r["name"] == name]
    if not rows:
        raise TableError(f"sdpabench's knob table ({exe or executable()} --list-knobs=json) has no knob {name!r}")
    return rows[0]
