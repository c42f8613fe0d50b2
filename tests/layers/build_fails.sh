#!/usr/bin/env bash
# The layers are a build fact: a file of the compare layer that includes a header of the backends
# layer does not compile, while one that includes its own and lower layers' headers does.
# Usage: build_fails.sh CMAKE BUILD_DIR
set -uo pipefail
cmake=$1 bin=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$cmake" --build "$bin" --target layers_own_and_lower >"$out" 2>&1 || { cat "$out"; echo "FAIL: the control does not build"; exit 1; }
if "$cmake" --build "$bin" --target layers_upward_include >"$out" 2>&1; then
  echo "FAIL: tests/layers/upward_include.cpp built: the compare layer can include backends/backend.hpp"; exit 1
fi
grep -q 'backends/backend.hpp: No such file or directory' "$out" || { cat "$out"; echo "FAIL: it failed for another reason"; exit 1; }
echo "ok: an upward include (compare -> backends) does not build; the control does"
