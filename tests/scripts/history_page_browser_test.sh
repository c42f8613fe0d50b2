#!/usr/bin/env bash
# scripts/history plot's page in a real browser (headless Chromium): no console error, and a drawn
# Plotly chart (an SVG .main-svg with its traces) in every finding's box, as many boxes as findings
# with a chart and PNG files; hovering a point shows its run, revision, value and repro line; a click
# on the flagged machine in the legend hides its line and runs; the y axis of a change fits the
# flagged machine, not another machine's spike. Three pages:
#   store    a store of generated JSONL reports (as tests/scripts/history_test.sh makes them, plus
#            a flaky case and a 15x spike on another machine), ingested, then scripts/history plot
#   kinds    write_page() called directly with findings of each kind (changes, margins, flaky,
#            outliers, context, noisy_runs), runs marked noisy_run and an outlier on the change's
#            own series
#   planted  the store's page with a corrupt plotly.min.js: the checker must fail on it
# Errors are caught on the page itself: a copy of index.html gets a small script first in <head>
# that records window errors (a script that failed to load included), unhandled rejections and
# console.error, hovers and clicks each chart, then writes what it saw as JSON into the DOM, which
# --dump-dom prints after --virtual-time-budget.
# Screenshots of the two good pages go to OUTDIR (history_page.store.png, history_page.kinds.png).
# Skips (77) without a chromium binary or without plotly in scripts/setup.sh's venv.
# The page stacks a flaky case's statuses as sdpabench's status table says (SDPABENCH_EXE
# --list-statuses=json).
# Usage: history_page_browser_test.sh SOURCE_DIR OUTDIR [SDPABENCH_STORE_EXE [SDPABENCH_EXE]]
set -uo pipefail
src=$(cd "$1" && pwd)
outdir=$2
export SDPABENCH_STORE=${3:-${SDPABENCH_STORE:-$src/build/release/sdpabench-store}}
export SDPABENCH=${4:-${SDPABENCH:-$src/build/release/sdpabench}}
chrome=""
for c in chromium chromium-browser google-chrome; do
  if command -v "$c" >/dev/null; then chrome=$(command -v "$c"); break; fi
done
if [ -z "$chrome" ]; then
  echo "SKIP: no chromium binary (scripts/setup.sh installs Debian's chromium with SDPABENCH_TEST_DEPS=1)"; exit 77
fi
py=${SDPABENCH_DEPS:-/opt/sdpabench-deps}/py/bin/python
if ! "$py" -c "import plotly, matplotlib, otava" 2>/dev/null; then
  echo "SKIP: $py lacks plotly, matplotlib or otava (run scripts/setup.sh)"; exit 77
fi
mkdir -p "$outdir" || exit 1
outdir=$(cd "$outdir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (history_page): $*"; echo "--- output:"; tail -n 30 "$tmp/out" 2>/dev/null; exit 1; }
history=$src/scripts/history
db="sqlite:$tmp/h.db"
browse() {  # browse URL ARGS...: headless Chromium; its own chatter (D-Bus, GPU) goes to $tmp/chrome.log
  timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars \
    --no-first-run --user-data-dir="$tmp/profile" "${@:2}" "$1" 2>>"$tmp/chrome.log"
}

# check DIR NAME: loads DIR/index.html with the collector, writes $tmp/NAME.check.json, and fails
# (returns 1, saying why) on an error, a finding box without a drawn chart, or a count that differs.
check() {
  local dir=$1 name=$2
  python3 - "$dir/index.html" "$dir/.check.html" <<'PY' || return 1
import sys
page = open(sys.argv[1], encoding="utf-8").read()
collector = """<script>
(function () {
  var errors = [];
  window.addEventListener("error", function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) errors.push("failed to load " + (t.src || t.href));
    else errors.push("error: " + e.message + (e.filename ? " at " + e.filename + ":" + e.lineno : ""));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { errors.push("unhandled rejection: " + e.reason); });
  var ce = console.error;
  console.error = function () { errors.push("console.error: " + Array.prototype.join.call(arguments, " ")); return ce.apply(console, arguments); };
  function shown(g, name) {  // the visibility of the traces of legend item `name`
    return (g._fullData || []).filter(function (t) { return t.name === name; }).map(function (t) { return t.visible; });
  }
  window.addEventListener("load", function () { setTimeout(function () {
    var out = {errors: errors, plotly: typeof Plotly === "undefined" ? null : Plotly.version, findings: [],
               height: document.documentElement.scrollHeight};
    document.querySelectorAll(".finding").forEach(function (d) {
      var g = d.querySelector(".js-plotly-plot"), f = {id: d.id, kind: d.dataset.kind, case: d.dataset.case,
        machine: d.dataset.machine, png: d.dataset.chart, svgs: d.querySelectorAll(".main-svg").length,
        traces: d.querySelectorAll(".scatterlayer .trace").length, points: d.querySelectorAll(".scatterlayer .point").length,
        yrange: g && g.layout && g.layout.yaxis ? g.layout.yaxis.range : null, hover: null, legend: null};
      out.findings.push(f);
      try {  // hover the flagged machine's first run (trace 1: its markers) and read the label
        Plotly.Fx.hover(g, [{curveNumber: 1, pointNumber: 0}]);
        var h = g.querySelector(".hoverlayer .hovertext");
        f.hover = h ? h.textContent : null;
        Plotly.Fx.unhover(g);
        // click the flagged machine in the legend, as a person does (Plotly waits for a double click)
        var item = g.querySelector(".legend .traces"), toggle = item.querySelector(".legendtoggle");
        var r = toggle.getBoundingClientRect(), o = {bubbles: true, cancelable: true, clientX: r.left + 4,
          clientY: r.top + 4, button: 0, buttons: 1};
        f.legend = {name: item.textContent, before: shown(g, item.textContent),
                    drawn: g.querySelectorAll(".scatterlayer .trace").length};
        ["mousedown", "mouseup", "click"].forEach(function (t) { toggle.dispatchEvent(new MouseEvent(t, o)); });
      } catch (e) { errors.push("hover or legend: " + e); }
    });
    setTimeout(function () {
      document.querySelectorAll(".finding").forEach(function (d, i) {
        var f = out.findings[i];
        var g = d.querySelector(".js-plotly-plot");
        if (f.legend) {
          f.legend.after = shown(g, f.legend.name);
          f.legend.drawn_after = g.querySelectorAll(".scatterlayer .trace").length;
        }
      });
      var pre = document.createElement("pre");
      pre.id = "sdpabench-check";
      pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    }, 1000);
  }, 300); });
})();
</script>"""
assert "<head>" in page
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("<head>", "<head>" + collector, 1))
PY
  browse "file://$dir/.check.html" --virtual-time-budget=15000 --window-size=1400,1000 --dump-dom >"$tmp/$name.dom" || {
    echo "chromium failed on $name"; return 1; }
  python3 - "$tmp/$name.dom" "$dir" "$tmp/$name.check.json" <<'PY'
import glob, html, json, os, re, sys
dom, folder, keep = sys.argv[1:]
m = re.search(r'<pre id="sdpabench-check">(.*?)</pre>', open(dom, encoding="utf-8").read(), re.S)
if not m:
    sys.exit("no report from the page's collector: its script did not run to the end")
r = json.loads(html.unescape(m.group(1)))
json.dump(r, open(keep, "w"), indent=1)
if r["errors"]:
    sys.exit("errors on the page:\n  " + "\n  ".join(r["errors"]))
if not r["plotly"]:
    sys.exit("Plotly did not load")
pngs = sorted(os.path.basename(p) for p in glob.glob(os.path.join(folder, "[0-9][0-9][0-9]-*.png")))
boxes = r["findings"]
if sorted(f["png"] for f in boxes) != pngs:
    sys.exit(f"finding boxes {[f['png'] for f in boxes]} are not the PNG files {pngs}")
for f in boxes:
    if f["svgs"] < 1 or f["traces"] < 1 or f["points"] < 1:
        sys.exit(f"no drawn chart in {f['id']} ({f['kind']} {f['case']}): {f}")
    h = f["hover"] or ""
    if not ("run:" in h and "repro:" in h and f["case"].split("n=")[-1] in h):
        sys.exit(f"{f['id']}: hovering a point does not show its run and repro line: {h!r}")
    l = f["legend"] or {}
    if not (l.get("name", "").startswith(f["machine"]) and l.get("before") and set(l["before"]) == {True}
            and set(l.get("after") or [None]) == {"legendonly"} and l["drawn"] - l.get("drawn_after", 0) >= 2):
        sys.exit(f"{f['id']}: a click on the flagged machine in the legend does not hide its line and runs "
                 f"(two drawn traces): {l}")
print(f"{len(boxes)} chart(s) drawn, no error (Plotly {r['plotly']})")
PY
}

# The store: history_test.sh's series, a flaky case, and a spike of 15x on host2 (rev 3) in the
# series that changes on m1 only.
python3 - "$tmp" "$src/tests/scripts" <<'PY' || fail "generating the reports"
import os, sys
sys.path.insert(0, sys.argv[2])
import math
from history_reports import case, ctx, wiggle, write
out = sys.argv[1]
for rev in range(1, 13):
    lines = [ctx(rev, "m1", onednn="3.10" if rev >= 5 else "3.9"),
             case("fast", (10 if rev < 7 else 6) * wiggle(rev, 0), 0.2 if rev < 7 else 0.6, idx=0),
             case("lone", (4 if rev < 5 else 6.4) * wiggle(rev, 1), idx=1),
             case("noisy", (3 if rev < 9 else 4.5) * wiggle(rev, 2), noisy=rev in (8, 9, 10), idx=2),
             case("jitter", None, (0.3 if rev < 7 else 0.55) + 0.02 * math.sin(rev * 1.7), output="dQ", idx=3),
             case("flip", 1.0 * wiggle(rev, 3), 1.5 if rev in (4, 9) else 0.1, status="FAILED" if rev in (4, 9) else "PASSED", idx=4)]
    h2 = [ctx(rev, host="host2"), case("lone", 5 * wiggle(rev, 4) * (15 if rev == 3 else 1))]
    write(out, f"m1.{rev:02d}.jsonl", lines)
    write(out, f"h2.{rev:02d}.jsonl", h2)
PY
"$history" ingest --db="$db" "$tmp"/m1.*.jsonl "$tmp"/h2.*.jsonl >"$tmp/out" 2>&1 || fail "ingest"
"$history" plot --db="$db" --out="$tmp/store" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "plot must exit 1 (something is flagged)"
[ -s "$tmp/store/plotly.min.js" ] || fail "no plotly.min.js next to the page"
grep -q "<script src='plotly.min.js'></script>" "$tmp/store/index.html" || fail "the page does not load ./plotly.min.js"
if grep -Eo "<script[^>]+src=[\"']?(https?:)?//[^\"' >]*" "$tmp/store/index.html"; then fail "the page loads a script from the network"; fi
check "$tmp/store" store >"$tmp/out" 2>&1 || fail "the store's page: $(tail -n 5 "$tmp/out")"
cat "$tmp/out"
# As many boxes of each kind as scripts/history's changes (changes and outliers) and margins find,
# and the one flaky case planted; the lone change's y axis fits m1 (4 -> 6.4 ms), not host2's
# spike (75 ms).
for cmd in changes margins; do "$history" $cmd --db="$db" --json >"$tmp/$cmd.json" 2>"$tmp/out"; done
python3 - "$tmp" <<'PY' || fail "the store's page: $(cat "$tmp/out")"
import json, os, sys
t = sys.argv[1]
r = json.load(open(os.path.join(t, "store.check.json")))
kinds = {k: sum(f["kind"] == k for f in r["findings"]) for k in ("change", "margin", "flaky", "outlier")}
changes = json.load(open(os.path.join(t, "changes.json")))
want = {"change": sum(f.get("kind", "change") == "change" for f in changes), "margin": len(json.load(open(os.path.join(t, "margins.json")))),
        "flaky": 1, "outlier": sum(f.get("kind") == "outlier" for f in changes)}
assert kinds == want and want["change"] >= 3, (kinds, want)
lone = [f for f in r["findings"] if f["kind"] == "change" and f["case"].endswith("n=lone") and f["machine"] == "m1"]
assert len(lone) == 1, r["findings"]
lo, hi = lone[0]["yrange"]
assert 2 < lo < 4 and 6.4 < hi < 9, ("the scale is not m1's", lone[0]["yrange"])
PY

# Every kind, from write_page() itself: what the analysis will hand it (docs/tracking.md).
"$py" - "$src/scripts" "$tmp/kinds" >"$tmp/out" 2>&1 <<'PY' || fail "write_page with every kind"
import math, sys, types
sys.path.insert(0, sys.argv[1])
from sdpabench_history.page import write_page
pts = []
def point(run, case, machine, rev, ms, status="PASSED", noisy_run=False, outputs=None):
    pts.append(types.SimpleNamespace(run=run, case=f"--backend=ref b1hq2sq64d16n={case}", backend="ref", machine=machine,
        rev=str(rev), order=(rev, run), status=status, noisy=False, repro=f"--backend=ref b1hq2sq64d16n={case}",
        median_ms=ms, tflops=1 / ms, cv=0.01, attributes={}, outputs=outputs or {}, noisy_run=noisy_run))
for rev in range(1, 13):
    w = 1 + 0.01 * math.sin(rev * 2.3)
    point(f"m1 {rev}", "lone", "m1", rev, (3.36 if rev < 7 else 5.77) * w * (2.5 if rev == 10 else 1), noisy_run=rev in (3, 4))
    point(f"h2 {rev}", "lone", "host2", rev, 4 * w * (12 if rev == 4 else 1))
    point(f"m1 {rev}", "fast", "m1", rev, 10 * w, outputs={"O": (True, 0.2 if rev < 7 else 0.6)})
    for k in range(2):
        point(f"m1 {rev}.{k}", "flip", "m1", rev, w, status="FAILED" if rev in (4, 9) and k == 0 else "PASSED")
pts.sort(key=lambda p: p.order)
case = lambda n: f"--backend=ref b1hq2sq64d16n={n}"
findings = {
    "changes": [{"case": case("lone"), "backend": "ref", "machine": "m1", "metric": "median_ms", "rev": "7", "prev_rev": "6",
                 "direction": "slower", "before": 3.36, "after": 5.77, "ratio": 5.77 / 3.36, "p": 1e-9, "finding": "slower",
                 "context_changes": [], "noisy": True, "noisy_revs": ["3", "4"], "margins_worse": [],
                 "scope": "this machine only", "repro": case("lone")}],
    "margins": [{"case": case("fast"), "backend": "ref", "machine": "m1", "metric": "worst_ratio:O", "output": "O", "rev": "7",
                 "prev_rev": "6", "direction": "worse", "before": 0.2, "after": 0.6, "p": None, "rule": "exact",
                 "context_changes": [], "repro": case("fast")}],
    "flaky": [{"case": case("flip"), "backend": "ref", "machine": "m1", "metric": "status", "flips": 4, "same_rev": ["4", "9"],
               "statuses": [[p.rev, p.status] for p in pts if p.case == case("flip")], "repro": case("flip")}],
    "outliers": [{"case": case("lone"), "backend": "ref", "machine": "m1", "metric": "median_ms", "rev": "10", "run": "m1 10",
                  "value": 14.4, "typical": 5.77, "ratio": 2.5, "repro": case("lone")}],
    "context": [{"machine": "m1", "rev": "5", "prev_rev": "4", "cases": 3,
                 "context_changes": [{"field": "libraries.onednn", "before": "3.9", "after": "3.10"}]}],
    "noisy_runs": [{"kind": "noisy run", "machine": "m1", "rev": str(rev), "run": f"m1 {rev}", "cases": 3,
                    "reasons": ["calibration at its start x2.0 the machine's median"]} for rev in (3, 4)]}
a = types.SimpleNamespace(out=sys.argv[2], order_by="rev", metric="median_ms")
assert write_page(a, pts, findings, []) == 1
assert write_page(a, pts, {"outliers": findings["outliers"], "context": findings["context"]}, []) == 0  # nothing flagged
assert write_page(a, pts, findings, []) == 1
PY
check "$tmp/kinds" kinds >"$tmp/out" 2>&1 || fail "the page of every kind: $(tail -n 5 "$tmp/out")"
cat "$tmp/out"
python3 - "$tmp/kinds.check.json" "$tmp/kinds/index.html" <<'PY' || fail "the page of every kind: $(cat "$tmp/out")"
import json, sys
r = json.load(open(sys.argv[1]))
assert [f["kind"] for f in r["findings"]] == ["change", "margin", "flaky", "outlier"], r["findings"]
change = r["findings"][0]
assert change["yrange"][1] < 8, ("the change's scale is set by an outlier or by host2", change["yrange"])
page = open(sys.argv[2], encoding="utf-8").read()
order = [page.index(f"<h2>{s}") for s in ("Timing changes", "Margin steps", "Flaky cases", "Outliers", "Context changes",
                                           "Noisy runs")]
assert order == sorted(order), order
assert "libraries.onednn: 3.9 &rarr; 3.10" in page and "x2.0 the machine&#x27;s median" in page, "a table's row is missing"
PY

# The screenshots, as tall as each page.
for name in store kinds; do
  h=$(python3 -c "import json,sys; print(min(20000, json.load(open(sys.argv[1]))['height'] + 40))" "$tmp/$name.check.json")
  browse "file://$tmp/$name/index.html" --virtual-time-budget=15000 --window-size=1400,"$h" \
    --screenshot="$outdir/history_page.$name.png" >/dev/null || fail "no screenshot of $name"
  [ -s "$outdir/history_page.$name.png" ] || fail "no screenshot of $name"
done

# A planted JavaScript error: the checker must fail on it.
cp -r "$tmp/store" "$tmp/planted"
echo 'this is not JavaScript (' >"$tmp/planted/plotly.min.js"
if check "$tmp/planted" planted >"$tmp/out" 2>&1; then fail "the checker passed a page whose plotly.min.js is corrupt"; fi
grep -q "errors on the page" "$tmp/out" || fail "the planted error is not reported as one: $(cat "$tmp/out")"
echo "history_page: passed (screenshots: $outdir/history_page.store.png, $outdir/history_page.kinds.png)"
