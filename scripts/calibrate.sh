#!/usr/bin/env bash
# Tolerance calibration: >= 2,000 random correct cases on the oneDNN backend; prints the
# distribution (max, p99.9, p99) of |err|/bound per output and dtype (compare/README.md).
# Usage: scripts/calibrate.sh [--cases N] [--seed S] [--backend B] [--dt LIST] [--dmask] [--random] [--exe PATH]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec python3 scripts/calibrate.py "$@"
