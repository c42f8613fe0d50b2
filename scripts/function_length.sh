#!/usr/bin/env bash
# Lists the functions longer than 80 lines (lizard's length: from the signature to the closing
# brace) in the project's C++ and Python sources, and exits 1 when there is one. A table (a
# function that is one long initializer, e.g. the knob table) is exempt by a comment line
# "// #lizard forgives: WHY" (Python: "# #lizard forgives: WHY") right above it.
#   scripts/function_length.sh [DIR...]   (default: the source folders of the project)
# Lizard comes from scripts/py-requirements.txt (scripts/setup.sh installs it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lizard=${SDPABENCH_DEPS:-/opt/sdpabench-deps}/py/bin/lizard
[ -x "$lizard" ] || { echo "function_length.sh: $lizard is missing: run scripts/setup.sh" >&2; exit 2; }
cd "$here/.."
if [ $# -eq 0 ]; then set -- backends compare core driver fillers graph ref reports scripts tests; fi
for d in "$@"; do [ -d "$d" ] || { echo "function_length.sh: no folder $d" >&2; exit 2; }; done
# -C and -a so high that only the length (-L) warns.
if out=$("$lizard" -l cpp -l python -L 80 -C 1000000 -a 1000 -w -x './build/*' "$@"); then
  echo "function_length.sh: no function over 80 lines in $*"
else
  echo "$out"
  echo "function_length.sh: $(grep -c . <<<"$out") function(s) over 80 lines (split them, or mark a table '#lizard forgives')" >&2
  exit 1
fi
