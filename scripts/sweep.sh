#!/usr/bin/env bash
# Performance sweep: expands a model case file over sequence lengths and dtypes, runs it in P
# mode and writes a jsonl report (for scripts/compare_runs.py and scripts/plot.py).
#
# Usage: scripts/sweep.sh MODEL.cases OUT.jsonl [--seq=512:2048:x2] [--dt=bf16] [--dir=fwd_t,bwd] [-- SDPABENCH_ARGS...]
#   --seq: a comma list of lengths or of case-language ranges START:END[:STEP] (STEP +N or xN;
#   docs/knobs_shapes.md#ranges). Every problem descriptor of MODEL.cases gets each element as its sq
#   (a range stays a range: sdpabench expands it) and loses its skv, so S_kv = S_q; the file's other
#   knobs (mask, heads, ...) are kept; --dt (and --dir when given) replace the file's own. Arguments
#   after -- go to sdpabench (e.g. --max-ms-per-case=500, --cold-cache, --backend=ref). SDPABENCH
#   names the binary (default build/release/sdpabench).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exe=${SDPABENCH:-$here/../build/release/sdpabench}
[ $# -ge 2 ] || { sed -n '2,10p' "${BASH_SOURCE[0]}" >&2; exit 2; }
model=$1 out=$2
shift 2
seqs=512:2048:x2 dts=bf16 dirs=""
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --seq=*) seqs=${1#--seq=} ;;
    --dt=*) dts=${1#--dt=} ;;
    --dir=*) dirs=${1#--dir=} ;;
    --) shift; extra=("$@"); break ;;
    *) echo "sweep.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
[ -f "$model" ] || { echo "sweep.sh: no model file '$model'" >&2; exit 2; }
[ -x "$exe" ] || { echo "sweep.sh: no binary at $exe (build first: cmake --build --preset release)" >&2; exit 2; }

cases=$(mktemp --suffix=.cases)
trap 'rm -f "$cases"' EXIT
# Our dtype/direction after every --reset (and at the top); the file's own --dt/--dir dropped;
# each descriptor once per --seq element (a range expanded by sdpabench), without repeats inside
# one knob block.
awk -v seqs="$seqs" -v dts="$dts" -v dirs="$dirs" '
  BEGIN { n = split(seqs, S, ","); ours = "--dt=" dts (dirs != "" ? " --dir=" dirs : ""); print ours }
  {
    sub(/#.*/, "")
    line = ""
    for (i = 1; i <= NF; i++) {
      t = $i
      if (t ~ /^--dt=/ || (dirs != "" && t ~ /^--dir=/)) continue
      if (t ~ /^--/) { line = line " " t; if (t == "--reset") line = line " " ours; delete seen; continue }
      if (t ~ /sq[0-9]+/) {
        for (k = 1; k <= n; k++) {
          d = t; sub(/skv[0-9]+/, "", d); sub(/sq[0-9]+/, "sq" S[k], d)
          if (!(d in seen)) { seen[d] = 1; line = line " " d }
        }
        continue
      }
      line = line " " t
    }
    if (line != "") print substr(line, 2)
  }' "$model" >"$cases"
echo "sweep.sh: $("$exe" --mode=L --batch="$cases" 2>/dev/null | grep -c ':LISTED') case(s) (lengths {$seqs}, dtypes {$dts}) from $model -> $out" >&2
status=0
"$exe" --mode=P --report=jsonl:"$out" "${extra[@]}" --batch="$cases" || status=$?
exit $status
