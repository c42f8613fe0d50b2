#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan + fuzzer instrumentation) in build/fuzz
# and runs each for SECONDS (default 60), starting from its seed corpus tests/fuzz/corpus/<name>/.
# New inputs go to build/fuzz/corpus/<name>/ (the seed corpus stays as committed); a crash
# leaves build/fuzz/crash-* files: copy them into tests/bad_inputs/ (with an expected message)
# as regression inputs. Prints each target's execution count. Exit 1 when a target crashed.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 fuzz_case_language
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds=${1:-60}
shift || true
SDPABENCH_FUZZ_DEPS=1 bash scripts/setup.sh >/dev/null
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found: run scripts/setup.sh" >&2; exit 1; }
san="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f build/fuzz/build.ninja ]; then
  cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DSDPABENCH_TESTS=OFF -DSDPABENCH_FUZZ=ON -DCMAKE_CXX_FLAGS="$san" >/dev/null
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(fuzz_case_language fuzz_json_import)
cmake --build build/fuzz -j "$(nproc)" --target "${targets[@]}"
status=0
for t in "${targets[@]}"; do
  work=build/fuzz/corpus/$t
  mkdir -p "$work"
  log=build/fuzz/$t.log
  echo "fuzz.sh: running $t for ${seconds}s (log: $log)"
  # -rss_limit_mb: a case file may legitimately expand to many cases (limit 1,000,000 per run).
  if ! ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "build/fuzz/tests/fuzz/$t" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=60 -print_final_stats=1 \
      -artifact_prefix=build/fuzz/ "$work" "tests/fuzz/corpus/${t#fuzz_}" </dev/null >"$log" 2>&1; then
    echo "fuzz.sh: $t FOUND A CRASH (see $log and build/fuzz/crash-*)"
    status=1
  fi
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  echo "fuzz.sh: $t: $runs executions in ${seconds}s, corpus $(ls "$work" | wc -l) inputs"
done
exit $status
