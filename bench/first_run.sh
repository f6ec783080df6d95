#!/usr/bin/env bash
# The first answer on a fresh machine, as a new user gets it: a fresh clone of this checkout's
# commit into a temporary folder, then the README's `ci/setup.sh run fragmentation` there with no
# compiler cache (CCACHE_DISABLE=1; the build itself names none). Each step is timed from a trace
# of setup.sh (bash -x, a timestamp and the CPU time of its children on every line): the clone,
# apt-get update and install (where packages are missing), the configuration, the build (with its
# CPU time) and the run to its answer, with the load average around it. --apt-seconds S adds apt's
# time before the clone (installing git; bench/fresh_debian.sh measures it). Needs git and awk,
# not python3 (a fresh Debian has none). Writes DIR/first_run.json for bench/summary.py.
#
#   bench/first_run.sh [--out DIR=./bench-out] [--apt-seconds S] [--keep]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="./bench-out"
apt_git=""
keep=0
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --apt-seconds) apt_git="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "bench/first_run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
folder="$(mktemp -d "${TMPDIR:-/tmp}/oomlab_first_run.XXXXXX")"
((keep)) || trap 'rm -rf "$folder"' EXIT
export CCACHE_DISABLE=1
load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
debs=/var/cache/apt/archives
debs_now() { find "$debs" -maxdepth 1 -name '*.deb' -printf '%f\n' 2>/dev/null | sort; }
debs_now >"$folder/debs_before.txt"

# Every traced line of setup.sh: "+ <epoch seconds> <children's user ticks> <system ticks> <command>".
# shellcheck disable=SC2016  # expanded by the traced shell, on each line
echo 'PS4="+ \$EPOCHREALTIME \$(cut -d\" \" -f16,17 /proc/\$\$/stat) "' >"$folder/trace.env"
start=$EPOCHREALTIME
git clone -q "$root" "$folder/oomlab"
git -C "$folder/oomlab" checkout -q "$(git -C "$root" rev-parse HEAD)"
cloned=$EPOCHREALTIME
BASH_ENV="$folder/trace.env" bash -x "$folder/oomlab/ci/setup.sh" run fragmentation \
  >"$folder/answer.txt" 2>"$folder/setup.err" ||
  { cat "$folder/setup.err" >&2; echo "bench/first_run.sh: ci/setup.sh failed" >&2; exit 1; }
answered=$EPOCHREALTIME
build="$folder/oomlab/build"
cuda=false  # whether the kernels were built (a CUDA toolkit was found)
grep -q 'kernels\.cu\.o' "$build/build.ninja" && cuda=true
# The first traced line whose command matches $1: "<epoch> <CPU seconds of setup.sh's children>".
at() {
  awk -v re="$1" -v hz="$(getconf CLK_TCK)" '$1 == "+" {
    command = $0; sub(/^[+] [^ ]+ [^ ]+ [^ ]+ /, "", command)
    if (command ~ re) { print $2, ($3 + $4) / hz; exit } }' "$folder/setup.err"
}
read -r apt_update _ < <(at '^(sudo )?apt-get update') || apt_update=""
read -r apt_install _ < <(at 'apt-get install') || apt_install=""
read -r configured _ < <(at '^cmake -S')
read -r building cpu_before < <(at '^cmake --build')
read -r ran cpu_after < <(at '^exec ')
seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
{
  echo "{"
  echo "  \"schema\": \"oomlab.first_run.v2\", \"commit\": \"$(git -C "$root" rev-parse --short HEAD)\","
  echo "  \"cpus\": $(nproc), \"cuda\": $cuda,"
  echo "  \"load_average\": \"$load_before -> $(cut -d' ' -f1-3 /proc/loadavg)\","
  [[ -n "$apt_git" ]] && echo "  \"apt_git_s\": $apt_git,"
  if [[ -n "$apt_update" ]]; then
    missing="$(sed -n 's/^setup: installing //p' "$folder/setup.err")"
    new_debs="$(debs_now | comm -13 "$folder/debs_before.txt" -)"
    bytes="$(cd "$debs" && echo "$new_debs" | xargs -r stat -c %s | awk '{ s += $1 } END { print s + 0 }')"
    echo "  \"apt_update_s\": $(seconds "$apt_install" "$apt_update"), \"apt_install_s\": $(seconds "$configured" "$apt_install"),"
    echo "  \"apt_asked\": $(wc -w <<<"$missing"), \"apt_packages\": $(grep -c . <<<"$new_debs" || true),"
    echo "  \"apt_download_mb\": $(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }'),"
  fi
  echo "  \"clone_s\": $(seconds "$cloned" "$start"), \"configure_s\": $(seconds "$building" "$configured"),"
  echo "  \"build_s\": $(seconds "$ran" "$building"), \"build_cpu_s\": $(seconds "$cpu_after" "$cpu_before"),"
  echo "  \"run_s\": $(seconds "$answered" "$ran"), \"setup_s\": $(seconds "$answered" "$cloned"),"
  echo "  \"objects_built\": $(awk '$4 ~ /\.o$/' "$build/.ninja_log" | wc -l)"
  echo "}"
} >"$out/first_run.json"
cat "$out/first_run.json"
echo "first answer:"
grep -A 2 '^oomlab · ' "$folder/answer.txt"
