#!/usr/bin/env bash
# The first answer on a fresh machine, as a new user gets it: a fresh clone of this checkout's
# commit into a temporary folder, then the README's `ci/setup.sh run fragmentation` there with no
# compiler cache (CCACHE_DISABLE=1; the build itself names none). Each step is timed: the clone,
# the configuration (it ends when build/build.ninja is written), the build (when build/oomlab is)
# and the run (to its answer), with the CPU time of the whole and the load average around it.
# The Debian packages must be installed already: apt is not timed here; --apt-seconds S adds a
# time measured on a fresh machine. Writes DIR/first_run.json for bench/summary.py.
#
#   bench/first_run.sh [--out DIR=./bench-out] [--apt-seconds S] [--keep]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="./bench-out"
apt=""
keep=0
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --apt-seconds) apt="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "bench/first_run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
folder="$(mktemp -d "${TMPDIR:-/tmp}/oomlab_first_run.XXXXXX")"
((keep)) || trap 'rm -rf "$folder"' EXIT
export CCACHE_DISABLE=1
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"

start=$EPOCHREALTIME
git clone -q "$root" "$folder/oomlab"
git -C "$folder/oomlab" checkout -q "$(git -C "$root" rev-parse HEAD)"
cloned=$EPOCHREALTIME
TIMEFORMAT='%R %U %S'
{ time "$folder/oomlab/ci/setup.sh" run fragmentation >"$folder/answer.txt" 2>"$folder/setup.err"; } 2>"$folder/time.txt" ||
  { cat "$folder/setup.err" >&2; echo "bench/first_run.sh: ci/setup.sh failed" >&2; exit 1; }
answered=$EPOCHREALTIME
read -r _ user sys <"$folder/time.txt"
build="$folder/oomlab/build"
configured="$(stat -c %.Y "$build/build.ninja")"
built="$(stat -c %.Y "$build/oomlab")"
cuda=false  # whether the kernels were built (a CUDA toolkit was found)
grep -q 'kernels\.cu\.o' "$build/build.ninja" && cuda=true
seconds() { python3 -c "print(round($1 - $2, 1))"; }
{
  echo "{"
  echo "  \"schema\": \"oomlab.first_run.v1\", \"commit\": \"$(git -C "$root" rev-parse --short HEAD)\","
  echo "  \"cpus\": $(nproc), \"cuda\": $cuda,"
  echo "  \"load_average\": \"$load_before -> $(cut -d' ' -f1-3 /proc/loadavg)\","
  [[ -n "$apt" ]] && echo "  \"apt_s\": $apt,"
  echo "  \"clone_s\": $(seconds "$cloned" "$start"), \"configure_s\": $(seconds "$configured" "$cloned"),"
  echo "  \"build_s\": $(seconds "$built" "$configured"), \"run_s\": $(seconds "$answered" "$built"),"
  echo "  \"setup_s\": $(seconds "$answered" "$cloned"), \"setup_cpu_s\": $(seconds "$user + $sys" 0),"
  echo "  \"objects_built\": $(awk '$4 ~ /\.o$/' "$build/.ninja_log" | wc -l)"
  echo "}"
} >"$out/first_run.json"
cat "$out/first_run.json"
echo "first answer:"
grep -A 2 '^oomlab · ' "$folder/answer.txt"
