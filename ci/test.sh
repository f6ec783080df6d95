#!/usr/bin/env bash
# Sets oomlab up (ci/setup.sh) and runs every test that needs no GPU: the GoogleTest suites
# (GPU tests skip and say so when no device is present), a smoke pass of the benchmarks, then one
# sanitizer build (clang, AddressSanitizer + UndefinedBehaviorSanitizer, without CUDA, which also
# keeps that build whole) that runs the same suites again and the fuzzers for FUZZ_SECONDS each
# (default 20). Checks every C++ file's formatting first (clang-format) and lints the sources
# (ci/tidy.sh: clang-tidy, any warning fails). Installs chromium for the report's browser test.
# Prints each stage's time.
# On the GPU machine use ci/gpu-check.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
started=$SECONDS
stages=()

# stage NAME COMMAND...: runs it, then prints (and keeps, for the table at the end) its time.
stage() {
  local name="$1" start=$SECONDS
  shift
  echo "== $name"
  "$@"
  local took=$((SECONDS - start))
  stages+=("$(printf '%-58s %3dm%02ds' "$name" $((took / 60)) $((took % 60)))")
  echo "   ($name: $((took / 60))m$((took % 60))s)"
}

install_browser() {
  # The report test renders a report in headless Chromium (a font for its text) and decodes the
  # screenshot with Python: here all must be present, so that test cannot pass by skipping.
  local missing=()
  for package in chromium fonts-dejavu-core python3; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  ((${#missing[@]} > 0)) || return 0
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "test: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

check_format() {
  # Every C++ and CUDA file as .clang-format lays it out (seconds): a file that differs fails,
  # named with the first place it differs.
  (cd "$root" && git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' |
    xargs clang-format --dry-run --Werror)
}

sanitizer_build() {
  # clang, because libFuzzer is clang's: the suites and the fuzz targets share the build. Line
  # tables are all the sanitizers' reports need.
  # CMakePresets.json's "sanitize": clang, -O1 with line tables, no CUDA, fuzzers on.
  (cd "$root" && cmake --preset sanitize >/dev/null)
  cmake --build "$root/build-san" --parallel
}

# ctest pads every result line with dots to the longest test name (~200 columns here): the log a
# person reads has one space there instead. ctest's own status is the pipeline's (pipefail).
readable_ctest() {
  ctest "$@" 2>&1 | sed -E 's/ \.{2,} *([^ .])/  \1/; s/(Passed|Skipped|Failed|Not Run)  +/\1  /'
}

# SeriesFixtures.* replay real programs' snapshots some hundred times through the model, code the
# other suites run under the sanitizers already (the series' own code runs there in TraceSeries,
# SeriesAlign and SeriesCli): under ASan they took 55 s of CI's 30 minutes. They run in build/.
sanitizer_tests() {
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1:exitcode=86" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    readable_ctest --test-dir "$root/build-san" --output-on-failure --parallel "$(nproc)" \
      --exclude-regex '^SeriesFixtures\.' |
    tee "$root/build-san/ctest.log"
  if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$root/build-san/ctest.log"; then
    echo "test: sanitizer reports above" >&2
    return 1
  fi
}

stage "set up and build (build/)" env OOMLAB_SETUP_FUZZ=1 "$root/ci/setup.sh"
stage "formatting (clang-format --dry-run --Werror)" check_format
stage "clang-tidy (.clang-tidy, every source file of the engine, reports and CLI)" "$root/ci/tidy.sh" "$root/build"
stage "install the browser test's packages" install_browser
export OOMLAB_REQUIRE_BROWSER=1
stage "unit tests" readable_ctest --test-dir "$root/build" --output-on-failure --parallel "$(nproc)"
stage "benchmarks (smoke)" "$root/bench/run.sh" "$root/build/bench" --smoke --out "$root/build/bench-smoke"
stage "sanitizer build (clang, ASan + UBSan, no CUDA; build-san/)" sanitizer_build
stage "unit tests under ASan + UBSan: any report fails the test" sanitizer_tests
stage "fuzzers, ${FUZZ_SECONDS:-20}s each" env OOMLAB_FUZZ_BUILD="$root/build-san" "$root/ci/fuzz.sh" "${FUZZ_SECONDS:-20}"

echo "== stage times"
printf '   %s\n' "${stages[@]}"
total=$((SECONDS - started))
echo "test: all passed in $((total / 60))m$((total % 60))s"
