#!/usr/bin/env bash
# Sets oomlab up (ci/setup.sh) and runs every test that needs no GPU: the GoogleTest suites
# (GPU tests skip and say so when no device is present), the same suites again built with ASan +
# UBSan (and without CUDA), a smoke pass of the benchmarks, and the fuzzers for FUZZ_SECONDS each
# (default 20). Installs chromium for the report's browser test.
# On the GPU machine use ci/gpu-check.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OOMLAB_SETUP_FUZZ=1 "$root/ci/setup.sh"

# The report test renders a report in headless Chromium (a font for its text) and decodes the
# screenshot with Python: here all must be present, so that test cannot pass by skipping.
browser_packages=()
for package in chromium fonts-dejavu-core python3; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || browser_packages+=("$package")
done
if ((${#browser_packages[@]} > 0)); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "test: installing ${browser_packages[*]}" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${browser_packages[@]}" >/dev/null
fi
export OOMLAB_REQUIRE_BROWSER=1

echo "== unit tests"
ctest --test-dir "$root/build" --output-on-failure --parallel "$(nproc)"

echo "== unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (a build without CUDA,"
echo "   OOMLAB_CUDA=OFF, which also keeps that build whole): any report fails the test"
cmake -S "$root" -B "$root/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOOMLAB_CUDA=OFF \
  -DOOMLAB_BENCH=OFF -DOOMLAB_SANITIZE=ON >/dev/null
cmake --build "$root/build-asan" --parallel
ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  ctest --test-dir "$root/build-asan" --output-on-failure --parallel "$(nproc)" 2>&1 |
  tee "$root/build-asan/ctest.log"
if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$root/build-asan/ctest.log"; then
  echo "test: sanitizer reports above" >&2
  exit 1
fi

echo "== benchmarks (smoke)"
"$root/bench/run.sh" "$root/build/bench" --smoke --out "$root/build/bench-smoke"

echo "== fuzzers"
"$root/ci/fuzz.sh" "${FUZZ_SECONDS:-20}"
echo "test: all passed"
