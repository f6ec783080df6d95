#!/usr/bin/env bash
# Sets oomlab up on Debian 12: installs the Debian packages that are missing (apt-get, with sudo
# when not root), configures and builds into build/. Extra arguments then run oomlab:
#   ci/setup.sh                       set up and build everything (oomlab, tests, benchmarks)
#   ci/setup.sh run fragmentation     set up, build oomlab alone, and run the main job
# A run builds only the oomlab target: the tests and benchmarks are ci/test.sh's to build, and on
# a 2-core machine they are most of a full build's time.
# CUDA is used when a toolkit is found (nvcc on PATH or /usr/local/cuda); without one, only the
# 'sim' allocator is built. OOMLAB_CMAKE_ARGS adds CMake options.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

packages=(g++ make cmake ninja-build git libcli11-dev nlohmann-json3-dev libfmt-dev libfccp-dev
          libgtest-dev libbenchmark-dev)
if [[ "${OOMLAB_SETUP_FUZZ:-0}" == "1" ]]; then packages+=(clang libclang-rt-14-dev clang-format clang-tidy); fi

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} > 0)); then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debug information of line tables and function names (-g1): backtraces and profiles keep their
# file:line, and a first build on two cores takes 28% less time than with -g (bench/NOTES.md).
# A unity build (CMAKE_UNITY_BUILD): each library's sources compile in batches of 8, so the
# headers they share (nlohmann/json, fmt, CLI11) are parsed and their templates compiled once a
# batch, not once a file: the engine's and CLI's compile takes ~60% less CPU (docs/development.md).
# The tests compile in groups of their own, the benchmarks one file at a time (their CMakeLists.txt
# say why).
# shellcheck disable=SC2086  # OOMLAB_CMAKE_ARGS is a list of options
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_UNITY_BUILD=ON \
  ${OOMLAB_CMAKE_ARGS:-} >/dev/null
if (($# > 0)); then
  cmake --build "$root/build" --parallel --target oomlab
  exec "$root/build/oomlab" "$@"
fi
cmake --build "$root/build" --parallel
