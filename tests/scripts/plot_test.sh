#!/usr/bin/env bash
# Checks scripts/plot.py on hand-written jsonl reports: the message naming the command when
# matplotlib is missing (always), then, with the venv scripts/setup.sh makes, one report (its
# context record skipped) and several overlaid, labelled by host or file stem. Exits 77 (skipped)
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

# --- One report: as before, labels without a report prefix, the context record skipped.
plot 0 "one report" "$tmp/base.jsonl" "$tmp/one.png"
has "plot.py: 4 point(s) in 2 series -> $tmp/one.png"
has "  gpt2 bwd f32 none: 2 point(s)"
has "  gpt2 fwd_t f32 none: 2 point(s)"
is_png "$tmp/one.png"
# --- Two reports overlaid: one labelled by its host, one by its stem.
plot 0 "two reports" "$tmp/base.jsonl" "$tmp/head.jsonl" "$tmp/two.png" --title "base vs head"
has "plot.py: 8 point(s) in 4 series -> $tmp/two.png"
has "  ci-1: gpt2 fwd_t f32 none: 2 point(s)"
has "  head: gpt2 fwd_t f32 none: 2 point(s)"
is_png "$tmp/two.png"
# --- Two reports from one host: "HOST (STEM)"; three reports.
plot 0 "same host" "$tmp/base.jsonl" "$tmp/again.jsonl" "$tmp/head.jsonl" "$tmp/three.svg"
has "plot.py: 12 point(s) in 6 series"
has "  ci-1 (base): gpt2 bwd f32 none: 2 point(s)"
has "  ci-1 (again): gpt2 bwd f32 none: 2 point(s)"
has "  head: gpt2 bwd f32 none: 2 point(s)"
grep -q "<svg" "$tmp/three.svg" || fail "an .svg name gives an SVG"
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
echo "OK (plot)"
