#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for SECONDS (default 30),
# as many at once as there are cores,
# starting from the seed corpus in tests/fuzz/corpus/. Exit 1 on any crash or sanitizer report.
#   ci/fuzz.sh [SECONDS]      (OOMLAB_FUZZ_BUILD=DIR: use that build instead of build-fuzz/)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
# OOMLAB_FUZZ_BUILD: a build configured with OOMLAB_FUZZ=ON already (ci/test.sh's build-san),
# built here as it is; without it, build-fuzz/ is configured for the fuzzers alone.
build="${OOMLAB_FUZZ_BUILD:-$root/build-fuzz}"
if [[ -z "${OOMLAB_FUZZ_BUILD:-}" ]]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DOOMLAB_FUZZ=ON -DOOMLAB_CUDA=OFF -DOOMLAB_TESTS=OFF -DOOMLAB_BENCH=OFF >/dev/null
elif ! grep -q "^OOMLAB_FUZZ:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
  echo "ci/fuzz.sh: $build is not a build with OOMLAB_FUZZ=ON" >&2
  exit 2
fi
cmake --build "$build" --parallel
# One fuzzer a core at a time, each for SECONDS of its own; the results in the targets' order.
fuzz_one() {
  local target="$1" name work rc=0
  name="$(basename "$target" | sed 's/^fuzz_//')"
  work="$(mktemp -d)"
  cp -r "$root/tests/fuzz/corpus/$name/." "$work/" 2>/dev/null || true
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crash-$name-" "$work" 2>"$build/fuzz-$name.log" || rc=$?
  echo "$rc" >"$build/fuzz-$name.rc"
  rm -rf "$work"
}
rm -f "$build"/fuzz-*.rc
targets=()
for target in "$build"/tests/fuzz/fuzz_*; do
  [[ -x "$target" ]] && targets+=("$target")
done
echo "== ${#targets[@]} fuzzers for ${seconds}s each, $(nproc) at a time"
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  fuzz_one "$target" &
done
wait
status=0
for target in "${targets[@]}"; do
  name="$(basename "$target" | sed 's/^fuzz_//')"
  echo "== fuzz $name"
  if [[ "$(cat "$build/fuzz-$name.rc" 2>/dev/null)" != "0" ]]; then
    echo "fuzz $name FAILED: see $build/fuzz-$name.log and $build/crash-$name-*"
    tail -30 "$build/fuzz-$name.log"
    status=1
  else
    grep -E 'stat::number_of_executed_units|stat::new_units_added' "$build/fuzz-$name.log" | sed 's/^/  /'
  fi
done
exit $status
