# Shared by the e2e scripts that source it (expect_e2e.sh, torch_e2e.sh): a temporary folder
# removed on exit, and three helpers over $tmp/out. Set e2e_label and exe before sourcing.
#   fail MSG...       prints "E2E FAIL (LABEL): MSG" and the output's last 20 lines, exits 1
#   run ARGS...       runs $exe ARGS with stdout and stderr into $tmp/out, its exit code in $rc
#   summary_field K   the count K of the last summary line ("tests:N passed:N ...") in $tmp/out
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "E2E FAIL ($e2e_label): $*"; echo "--- output tail:"; tail -n 20 "$tmp/out" 2>/dev/null; exit 1; }
run() { "$exe" "$@" >"$tmp/out" 2>&1; rc=$?; }
summary_field() { grep -oE "(^| )$1:[0-9]+" "$tmp/out" | tail -n 1 | cut -d: -f2; }
