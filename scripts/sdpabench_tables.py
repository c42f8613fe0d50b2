"""sdpabench's own executables and tables, for the scripts in this folder: where the built
binaries are, and the tables sdpabench prints as JSON (--list-statuses=json, --list-knobs=json),
so that no script keeps a copy of a list the C++ tables hold. Standard library only.
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TableError(Exception):
    """sdpabench cannot be run or did not print its table: the message says which and how to fix it."""


def executable(name="sdpabench", env="SDPABENCH"):
    """The path of the built executable `name`: $`env` when set, else build/release/NAME of this
    checkout (which may not exist: the caller checks)."""
    return os.environ.get(env) or os.path.join(ROOT, "build", "release", name)
