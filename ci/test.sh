#!/usr/bin/env bash
# Sets oomlab up (ci/setup.sh) and runs every test that needs no GPU: the GoogleTest suites
# (GPU tests skip and say so when no device is present), a smoke pass of the benchmarks, and the
# fuzzers for FUZZ_SECONDS each (default 20). Installs chromium for the report's browser test.
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

echo "== unit tests of a build without CUDA (OOMLAB_CUDA=OFF: only 'sim')"
cmake -S "$root" -B "$root/build-nocuda" -G Ninja -DOOMLAB_CUDA=OFF -DOOMLAB_BENCH=OFF >/dev/null
cmake --build "$root/build-nocuda" --parallel
ctest --test-dir "$root/build-nocuda" --output-on-failure --parallel "$(nproc)"

echo "== benchmarks (smoke)"
"$root/bench/run.sh" "$root/build/bench" --smoke --out "$root/build/bench-smoke"

echo "== fuzzers"
"$root/ci/fuzz.sh" "${FUZZ_SECONDS:-20}"
echo "test: all passed"
