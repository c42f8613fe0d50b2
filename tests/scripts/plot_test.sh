#!/usr/bin/env bash
# Checks scripts/plot.py on hand-written jsonl reports: the message naming the command when
# matplotlib is missing (always), then, with the venv scripts/setup.sh makes, one report (its
# context record skipped) and several overlaid, labelled by host or file stem; series split by
# backend and shape but not by S_q; clean errors for an unwritable path or an unknown image
# extension. Exits 77 (skipped)
# after the first part when that venv is absent. Usage: plot_test.sh SOURCE_DIR
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/out"
fail() { echo "FAIL (plot): $*"; cat "$tmp/out"; exit 1; }
has() { grep -qF -- "$1" "$tmp/out" || fail "${2:-output lacks: $1}"; }

# A P-mode sweep: gpt2 fwd_t and bwd at S = 16 and 32, a context record first; an untimed case
# and a FAILED one without perf are not plotted.
rec() {  # rec DIR S GFLOPS
  printf '{"id":"ref:%s:f32:b1hq12sq%sd64","idx":0,"status":"EXECUTED","repro":"--dir=%s b1hq12sq%sd64","mode":"P","backend":"ref","dir":"%s","dt":"f32","mask":"none","prb":"b1hq12sq%sd64","name":"gpt2","perf":{"runs":3,"min_ms":1,"median_ms":1,"mean_ms":1,"max_ms":1,"cold_cache":false,"gflops":%s}}\n' \
    "$1" "$2" "$1" "$2" "$1" "$2" "$3"
}
{
  echo '{"context":{"sdpabench":"0.4","git_commit":"aaaa","command":"sdpabench --mode=P","host":"ci-1","cpu":"AMD EPYC 9654","threads":2,"libraries":{"onednn":"3.13.2"},"start":"2026-12-01T17:00:00Z"}}'
  rec fwd_t 16 10; rec fwd_t 32 20; rec bwd 16 5; rec bwd 32 8
  echo '{"idx":4,"status":"FAILED","repro":"b1hq12sq64d64","dir":"fwd_t","dt":"f32","mask":"none","prb":"b1hq12sq64d64","name":"gpt2","perf":null}'
} >"$tmp/base.jsonl"
# The same cases from a report without a context record (labelled by its stem, "head").
grep -v '"context"' "$tmp/base.jsonl" | sed 's/"gflops":\([0-9]*\)/"gflops":\12/' >"$tmp/head.jsonl"
# Another report from host ci-1.
sed 's/"git_commit":"aaaa"/"git_commit":"bbbb"/' "$tmp/base.jsonl" >"$tmp/again.jsonl"
echo '{"idx":0,"status":"PASSED","repro":"b1hq2sq16d16","prb":"b1hq2sq16d16","perf":null}' >"$tmp/untimed.jsonl"

# --- matplotlib missing (python3 -S: no site-packages): the message names the command to run.
env -u PYTHONPATH SDPABENCH_DEPS="$tmp/deps" python3 -S "$src/scripts/plot.py" "$tmp/base.jsonl" "$tmp/o.png" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "no matplotlib: exit 1 expected"
has "plot.py: needs matplotlib"
has "$tmp/deps/py"
has "setup.sh"
has "$tmp/deps/py/bin/python $src/scripts/plot.py $tmp/base.jsonl $tmp/o.png" "no matplotlib: the command to run"
[ ! -e "$tmp/o.png" ] || fail "no matplotlib: an image was written"
mkdir -p "$tmp/fake/py/bin" && printf '#!/bin/sh\n' >"$tmp/fake/py/bin/python" && chmod +x "$tmp/fake/py/bin/python"
env -u PYTHONPATH SDPABENCH_DEPS="$tmp/fake" python3 -S "$src/scripts/plot.py" "$tmp/base.jsonl" "$tmp/o.png" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "no matplotlib, venv present: exit 1 expected"
has "scripts/setup.sh installed it in the venv $tmp/fake/py; run:"
has "$tmp/fake/py/bin/python $src/scripts/plot.py $tmp/base.jsonl $tmp/o.png"
# --help needs no matplotlib.
python3 -S "$src/scripts/plot.py" --help >"$tmp/out" 2>&1 || fail "--help without matplotlib"
has "Several reports are overlaid"

py=${SDPABENCH_DEPS:-/opt/sdpabench-deps}/py/bin/python
if [ ! -x "$py" ]; then
  echo "SKIP (plot): no $py (scripts/setup.sh makes it); only the missing-matplotlib message was checked"
  exit 77
fi
plot() {  # plot WANT_RC DESCRIPTION ARGS...
  local want=$1 what=$2 rc
  shift 2
  "$py" "$src/scripts/plot.py" "$@" >"$tmp/out" 2>&1
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$what: exit $want expected, got $rc"
}
is_png() { [ "$(head -c 4 "$1" | tail -c 3)" = PNG ] || fail "$1 is not a PNG"; }

# --- One report: labels without a report prefix, only the parts that differ (dir); the shared
# ones (backend, name, shape without sq, dt, mask) printed once; the context record skipped.
plot 0 "one report" "$tmp/base.jsonl" "$tmp/one.png"
has "plot.py: 4 point(s) in 2 series -> $tmp/one.png"
has "  common to all series: ref gpt2 b1hq12d64 f32 none"
has "  bwd: 2 point(s)"
has "  fwd_t: 2 point(s)"
is_png "$tmp/one.png"
# --- Two reports overlaid: one labelled by its host, one by its stem.
plot 0 "two reports" "$tmp/base.jsonl" "$tmp/head.jsonl" "$tmp/two.png" --title "base vs head"
has "plot.py: 8 point(s) in 4 series -> $tmp/two.png"
has "  ci-1: fwd_t: 2 point(s)"
has "  head: fwd_t: 2 point(s)"
is_png "$tmp/two.png"
# --- Two reports from one host: "HOST (STEM)"; three reports.
plot 0 "same host" "$tmp/base.jsonl" "$tmp/again.jsonl" "$tmp/head.jsonl" "$tmp/three.svg"
has "plot.py: 12 point(s) in 6 series"
has "  ci-1 (base): bwd: 2 point(s)"
has "  ci-1 (again): bwd: 2 point(s)"
has "  head: bwd: 2 point(s)"
grep -q "<svg" "$tmp/three.svg" || fail "an .svg name gives an SVG"
# --- Series keys. Two backends with the same names: one series per backend.
{ cat "$tmp/base.jsonl"; grep -v '"context"' "$tmp/base.jsonl" | sed 's/"backend":"ref"/"backend":"onednn"/'; } >"$tmp/backends.jsonl"
plot 0 "two backends" "$tmp/backends.jsonl" "$tmp/b.png"
has "plot.py: 8 point(s) in 4 series" "two backends: one series per backend and dir"
has "  common to all series: gpt2 b1hq12d64 f32 none"
has "  onednn bwd: 2 point(s)"
has "  ref bwd: 2 point(s)"
has "  ref fwd_t: 2 point(s)"
# The same name at d16 and d64: two series, labelled by the shape.
{ rec fwd_t 16 10; rec fwd_t 32 20; rec fwd_t 16 30 | sed 's/d64/d16/g'; rec fwd_t 32 40 | sed 's/d64/d16/g'; } >"$tmp/heads.jsonl"
plot 0 "d16 and d64" "$tmp/heads.jsonl" "$tmp/h.png"
has "plot.py: 4 point(s) in 2 series" "d16 and d64 of one name: two series"
has "  b1hq12d16: 2 point(s)"
has "  b1hq12d64: 2 point(s)"
# Unnamed cases at several S_q form one series (keyed on the shape without sq and skv), here
# next to a GQA shape whose skv equals sq once and differs once.
urec() {  # urec PRB GFLOPS
  printf '{"id":"ref:fwd_t:f32:%s","status":"EXECUTED","repro":"%s","mode":"P","backend":"ref","dir":"fwd_t","dt":"f32","mask":"none","prb":"%s","name":"","perf":{"median_ms":1,"cold_cache":false,"gflops":%s}}\n' \
    "$1" "$1" "$1" "$2"
}
{ urec b1hq12sq16d64 1; urec b1hq12sq32d64 2; urec b1hq12sq64d64 3; } >"$tmp/unnamed.jsonl"
plot 0 "unnamed cases" "$tmp/unnamed.jsonl" "$tmp/un.png"
has "plot.py: 3 point(s) in 1 series" "unnamed cases at three S_q: one series"
has "  ref b1hq12d64 fwd_t f32 none: 3 point(s)"
{ cat "$tmp/unnamed.jsonl"; urec b2hq8hkv2sq64skv128d16 4; urec b2hq8hkv2sq128d16 5; } >"$tmp/gqa.jsonl"
plot 0 "unnamed cases, two shapes" "$tmp/gqa.jsonl" "$tmp/gqa.png"
has "plot.py: 5 point(s) in 2 series"
has "  b1hq12d64: 3 point(s)"
has "  b2hq8hkv2d16: 2 point(s)"
# --- An unwritable image path or an unknown extension: a one-line error, exit 1, no traceback.
plot 1 "unwritable path" "$tmp/base.jsonl" "$tmp/no/such/dir/x.png"
has "plot.py: cannot write $tmp/no/such/dir/x.png: No such file or directory"
! grep -q Traceback "$tmp/out" || fail "unwritable path: a traceback"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "unwritable path: one line expected"
mkdir "$tmp/adir"
plot 1 "a directory as the image" "$tmp/base.jsonl" "$tmp/adir"
has "plot.py: cannot write $tmp/adir: Is a directory"
! grep -q Traceback "$tmp/out" || fail "directory: a traceback"
plot 1 "unknown extension" "$tmp/base.jsonl" "$tmp/x.xyz"
has "plot.py: $tmp/x.xyz: unknown image extension .xyz (known: "
! grep -q Traceback "$tmp/out" || fail "unknown extension: a traceback"
[ "$(wc -l <"$tmp/out")" -eq 1 ] || fail "unknown extension: one line expected"
[ ! -e "$tmp/x.xyz" ] || fail "unknown extension: a file was written"
# No extension: a PNG under the name given.
plot 0 "no extension" "$tmp/base.jsonl" "$tmp/noext"
has "-> $tmp/noext"
is_png "$tmp/noext"
# --- A report with no timed case: a warning in an overlay, an error alone.
plot 0 "overlay with an untimed report" "$tmp/base.jsonl" "$tmp/untimed.jsonl" "$tmp/u.png"
has "warning: no timed case in $tmp/untimed.jsonl"
has "4 point(s) in 2 series"
plot 1 "only an untimed report" "$tmp/untimed.jsonl" "$tmp/u2.png"
has "no timed case in $tmp/untimed.jsonl"
# --- A forgotten PNG argument does not overwrite the last report.
cp "$tmp/head.jsonl" "$tmp/keep.jsonl"
plot 2 "no PNG argument" "$tmp/base.jsonl" "$tmp/head.jsonl"
has "looks like a report"
cmp -s "$tmp/head.jsonl" "$tmp/keep.jsonl" || fail "the last report was overwritten"
# --- A cut last line.
head -c 100 "$tmp/head.jsonl" >"$tmp/cut.jsonl"
plot 1 "cut line" "$tmp/cut.jsonl" "$tmp/c.png"
has "cut.jsonl:1: not JSON"
# --- csv reports read as jsonl ones; backends side by side (--by=backend).
{ echo "# host: ci-1"; echo "idx,id,backend,status,mode,dir,dt,mask,prb,name,median_ms,gflops"
  echo '0,"--mode=P --dir=bwd b1hq12sq16d64n=gpt2",ref,EXECUTED,P,bwd,f32,none,b1hq12sq16d64,gpt2,1,5'
  echo '1,"--mode=P --dir=bwd b1hq12sq32d64n=gpt2",ref,EXECUTED,P,bwd,f32,none,b1hq12sq32d64,gpt2,1,8'
  echo '2,"--backend=torch:flash --mode=P --dir=bwd b1hq12sq16d64n=gpt2",torch:flash,EXECUTED,P,bwd,f32,none,b1hq12sq16d64,gpt2,1,50'
  echo '3,"--backend=torch:flash --mode=P --dir=bwd b1hq12sq32d64n=gpt2",torch:flash,FAILED,P,bwd,f32,none,b1hq12sq32d64,gpt2,,'; } >"$tmp/be.csv"
plot 0 "a csv report" "$tmp/be.csv" "$tmp/csv.png"
has "3 point(s) in 2 series"
is_png "$tmp/csv.png"
plot 0 "--by=backend" --by=backend "$tmp/be.csv" "$tmp/be.png"
has "2 case(s) x 2 backend(s) -> $tmp/be.png"
has "common to all cases: --dir=bwd"
has "  ref: 2 case(s)"
has "  torch:flash: 1 case(s)"
is_png "$tmp/be.png"
plot 2 "a csv as the image" "$tmp/be.csv" "$tmp/be2.csv"
has "looks like a report"
echo "OK (plot)"
