#!/usr/bin/env bash
# What a sampled check saves against a full one on long sequences: for each backend and each S, runs
# the case --backend=B --dir=fwd_bwd --dt=DT --mask=causal_br b1hq32hkv8sqSd128 (DT bf16) once with
# --check=full and once with --check=sample:N, each in a process of its own with a JSONL report and
# the known vendor bugs expected (cases/known/expected.jsonl: such a case is XFAIL), and prints a
# Markdown table, one row per (backend, S, check): the status, the vendor, reference and compare
# phases' wall ms, the case's ms (the backend's library load included: the first case of a process)
# and case / vendor. A benchmark, not a test: it judges nothing
# (docs/perf_and_reports.md#sampled-checks-cost). A backend this build lacks is SKIPPED.
#
# Usage: scripts/bench_sampled.sh [--exe PATH] [--sizes "S..."] [--backends "B..."] [--rows N]
#                                 [--dt DT] [--skip-full-above S]
#   --exe PATH            the sdpabench binary (default build/release/sdpabench)
#   --sizes "S..."        sequence lengths, S_q = S_kv (default "1024 2048 4096 8192 16384")
#   --backends "B..."     backends (default "torch:flash onednn")
#   --rows N              the sampled check's N, query and key rows per head (default 64)
#   --dt DT               the io type (default bf16; torch:flash's bf16 forward FAILS by a known bug,
#                         so its backward does not run: f32 times both passes there)
#   --skip-full-above S   no full check for a length above S (default: a full check at every length)
# Exits 2 on a bad argument or a missing binary, else 0 (a FAILED case is a row of the table).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exe="$root/build/release/sdpabench"
sizes="1024 2048 4096 8192 16384"
backends="torch:flash onednn"
rows=64
dt=bf16
skip_full_above=""
while [ $# -gt 0 ]; do
  case "$1" in --exe|--sizes|--backends|--rows|--dt|--skip-full-above)
    [ $# -ge 2 ] || { echo "bench_sampled: $1 takes a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --exe) exe=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --dt) dt=$2; shift 2 ;;
    --skip-full-above) skip_full_above=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_sampled: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$exe" ] || { echo "bench_sampled: $exe is not an executable (build first: scripts/build.sh)" >&2; exit 2; }
positive='^[1-9][0-9]*$'
[[ "$rows" =~ $positive ]] || { echo "bench_sampled: --rows takes a positive integer, got '$rows'" >&2; exit 2; }
[ -z "$skip_full_above" ] || [[ "$skip_full_above" =~ $positive ]] ||
  { echo "bench_sampled: --skip-full-above takes a positive integer, got '$skip_full_above'" >&2; exit 2; }
read -r -a size_list <<<"$sizes"
read -r -a backend_list <<<"$backends"
[ ${#size_list[@]} -gt 0 ] || { echo "bench_sampled: --sizes is empty" >&2; exit 2; }
[ ${#backend_list[@]} -gt 0 ] || { echo "bench_sampled: --backends is empty" >&2; exit 2; }
for s in "${size_list[@]}"; do
  [[ "$s" =~ $positive ]] || { echo "bench_sampled: --sizes takes positive integers, got '$s'" >&2; exit 2; }
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
model=$(lscpu 2>/dev/null | sed -nE 's/^Model name: *//p' | head -n 1 || true)
echo "machine: ${model:-unknown CPU}, $(nproc) CPUs (nproc), OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
echo "case: --dir=fwd_bwd --dt=$dt --mask=causal_br b1hq32hkv8sqSd128"
echo "sdpabench: $exe ($("$exe" --version 2>/dev/null | head -n 1))"
k=0
for b in "${backend_list[@]}"; do
  for s in "${size_list[@]}"; do
    for check in full "sample:$rows"; do
      k=$((k + 1))
      if [ "$check" = full ] && [ -n "$skip_full_above" ] && [ "$s" -gt "$skip_full_above" ]; then
        printf '%s\t%s\t%s\t-\n' "$b" "$s" "$check" >>"$tmp/runs.tsv"
        continue
      fi
      echo "bench_sampled: --backend=$b --dt=$dt S=$s --check=$check" >&2
      rc=0
      "$exe" --no-progress --expect="$root/cases/known/expected.jsonl" --report="jsonl:$tmp/$k.jsonl" \
        --backend="$b" --dir=fwd_bwd --dt="$dt" --mask=causal_br --check="$check" "b1hq32hkv8sq${s}d128" \
        >"$tmp/$k.out" 2>&1 || rc=$?
      printf '%s\t%s\t%s\t%s\n' "$b" "$s" "$check" "$rc" >>"$tmp/runs.tsv"
    done
  done
done

python3 - "$tmp" <<'EOF'
import json, os, sys

tmp = sys.argv[1]
print()
print("| backend | S | check | status | vendor ms | reference ms | compare ms | case ms | case / vendor |")
print("|---|---|---|---|---|---|---|---|---|")
notes = []
for k, line in enumerate(open(os.path.join(tmp, "runs.tsv")), 1):
    backend, s, check, rc = line.rstrip("\n").split("\t")
    cells = [backend, s, f"`{check}`"]
    if rc == "-":
        print("| " + " | ".join(cells + ["not run (--skip-full-above)"] + ["-"] * 5) + " |")
        continue
    record = None
    try:
        with open(os.path.join(tmp, f"{k}.jsonl")) as f:
            record = next((r for r in map(json.loads, f) if "status" in r), None)
    except (FileNotFoundError, json.JSONDecodeError):
        pass
    if record is None:  # a crash, or an argument the binary refused: its last line says why
        out = [l.strip() for l in open(os.path.join(tmp, f"{k}.out")) if l.strip()]
        print("| " + " | ".join(cells + [f"no result (exit {rc})"] + ["-"] * 5) + " |")
        notes.append(f"{backend} S={s} {check}: {(out[-1] if out else '')[:300]}")
        continue
    status = record.get("shown_status") or record["status"]  # XFAIL where a known bug explains it
    ph, case_ms, reason = record.get("phases_ms") or {}, record.get("case_ms") or 0.0, record.get("reason") or ""
    if status != "PASSED" and reason:
        alone = ": the times are the forward's alone" if "backward not run" in reason else ""
        notes.append(f"{backend} S={s} {check}: {status} ({reason[:300]}){alone}")
    if check != "full" and not record.get("sample") and status not in ("SKIPPED", "UNIMPLEMENTED"):
        notes.append(f"{backend} S={s} {check}: checked in full (S <= N)")
    if status in ("SKIPPED", "UNIMPLEMENTED", "INVALID_ARGUMENTS"):  # nothing ran
        print("| " + " | ".join(cells + [status] + ["-"] * 5) + " |")
        continue
    vendor = ph.get("vendor") or 0.0
    ms = [f"{v:.1f}" for v in (vendor, ph.get("reference") or 0.0, ph.get("compare") or 0.0, case_ms)]
    ratio = f"{case_ms / vendor:.2f}" if vendor > 0 else "-"
    print("| " + " | ".join(cells + [status] + ms + [ratio]) + " |")
if notes:
    print()
    for n in notes:
        print(f"- {n}")
EOF
