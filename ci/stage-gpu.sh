#!/usr/bin/env bash
# Builds oomlab for the GPU machine here (Release, CUDA on) and stages the stripped binaries in
# one folder to carry there, since the GPU machine builds nothing:
#   ci/stage-gpu.sh [STAGE_DIR=.gpu]   then, there:   ci/gpu-check.sh .gpu
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
stage="${1:-$root/.gpu}"
build="$root/build-gpu"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DOOMLAB_CUDA=ON -DOOMLAB_BENCH=ON >/dev/null
cmake --build "$build" --parallel
mkdir -p "$stage"
for binary in oomlab tests/oomlab_tests tests/contract/oomlab_contract_tests tests/oomlab_cuda_hog; do
  strip -o "$stage/$(basename "$binary")" "$build/$binary"
done
# The tests' --plugin libraries, found beside the test binary (plugins/).
rm -rf "$stage/plugins"
mkdir -p "$stage/plugins"
cp "$build"/tests/plugins/*.so "$stage/plugins/"
# The benchmarks with the Google Benchmark library beside them (its soname differs there).
rm -rf "$stage/bench"
mkdir -p "$stage/bench/lib"
for bench in "$build"/bench/oomlab_*_bench; do strip -o "$stage/bench/$(basename "$bench")" "$bench"; done
cp -L "$build"/bench/lib/* "$stage/bench/lib/"
du -sh "$stage"/*
