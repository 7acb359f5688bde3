#!/usr/bin/env bash
# Runs the benchmarks next to their peers and prints ONE markdown table,
#   | benchmark | vscaler | peer | vscaler/peer |
# then writes it, with the date and the machine, to bench/RESULTS.md. `make bench` calls it after
# `make build` (build/release); run directly, it builds build/release itself. A target that fails
# to build fails only the sections that need it: the others still run.
#
# The table is made of sections: every bench/sections/<name>.sh, in name order. A section builds
# what it needs beyond that (its peer into build/bench/; queue.sh also rebuilds its own target),
# runs, and prints only table rows on stdout ("| label | vscaler | peer | ratio |"; bench/lib.sh
# has helpers); anything else goes to stderr. A failing section shows as a "failed" row and makes
# this script fail, after the other sections ran. Adding a benchmark is adding a section file;
# this script does not change. A section's notes, bench/sections/<name>.md when present, are
# copied into bench/RESULTS.md after the table.
#
# Every row is also kept, with its section's name and date, in bench/RESULTS.tsv: run with section
# names, the script reruns only those and writes bench/RESULTS.md with the other sections' rows
# as they were (a line lists each section's date).
#
# Usage: bench/run.sh [section...]   (names without .sh; default: all)
# Environment: VSCALER_BENCH_RUNS (runs per program, median reported; default 3);
# VSCALER_BUILD_DIR (the release build tree the sections run from; default build/release).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export VSCALER_BUILD_DIR=${VSCALER_BUILD_DIR:-build/release}

if [ ! -f "$VSCALER_BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$VSCALER_BUILD_DIR" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=Release >/dev/null ||
    exit 1
fi
cmake --build "$VSCALER_BUILD_DIR" >&2 ||
  echo "bench/run.sh: the build failed; sections whose programs are missing will fail" >&2
mkdir -p build/bench

if [ $# -gt 0 ]; then
  sections=()
  for name in "$@"; do sections+=("bench/sections/$name.sh"); done
else
  sections=(bench/sections/*.sh)
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
tsv=bench/RESULTS.tsv
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
fresh=$(mktemp)
trap 'rm -f "$fresh"' EXIT
failed=()
for section in "${sections[@]}"; do
  name=$(basename "$section" .sh)
  echo "bench: $name ..." >&2
  start=$SECONDS
  if output=$(bash "$section"); then
    while IFS= read -r line; do
      [[ $line == \|* ]] && printf '%s\t%s\t%s\n' "$name" "$now" "$line" >>"$fresh"
    done <<<"$output"
  else
    failed+=("$name")
    printf '%s\t%s\t| %s | failed | | |\n' "$name" "$now" "$name" >>"$fresh"
  fi
  echo "bench: $name done in $((SECONDS - start)) s" >&2
done

# Every section's rows in name order: this run's, else those bench/RESULTS.tsv kept.
dated=""
if [ $# -gt 0 ] && [ -f "$tsv" ]; then
  for section in bench/sections/*.sh; do
    name=$(basename "$section" .sh)
    if grep -q "^$name	" "$fresh"; then
      grep "^$name	" "$fresh"
    else
      grep "^$name	" "$tsv" || true
    fi
  done >"$fresh.all"
  mv "$fresh.all" "$fresh"
  sections=(bench/sections/*.sh) # every section's notes
  dated=$(awk -F'\t' '!seen[$1]++ {printf "%s%s %s", n++ ? ", " : "", $1, $2}' "$fresh")
fi
cp "$fresh" "$tsv"
table=$(
  echo "| benchmark | vscaler | peer | vscaler/peer |"
  echo "|---|---:|---:|---:|"
  cut -f3- "$fresh"
)
echo "$table"

cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
memory=$(awk '/^MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
{
  echo "# Benchmark results"
  echo
  echo "Written by \`make bench\` (bench/run.sh); each value is the median of" \
    "${VSCALER_BENCH_RUNS:-3} runs."
  echo
  echo "- date: $now"
  [ -z "$dated" ] || echo "- rows of only $*, rerun then; each section's date: $dated"
  echo "- machine: $(nproc) CPUs (${cpu:-unknown}), $memory memory, Linux $(uname -r)"
  echo "- load average (1, 5, 15 min): $load_before before the run," \
    "$(cut -d' ' -f1-3 /proc/loadavg) after (other work on the machine skews results)"
  echo "- compilers: $(g++ --version | head -1); $(go version 2>/dev/null || echo 'no go')"
  echo
  echo "Each section's script in bench/sections/ says what its peer is and what it measures." \
    "ops/s and items/s: higher is better; ns/op and latencies: lower is better."
  echo
  echo "$table"
  # A section's notes (bench/sections/<name>.md: what differs from its peer, and why) follow.
  for section in "${sections[@]}"; do
    notes=${section%.sh}.md
    if [ -f "$notes" ]; then
      echo
      cat "$notes"
    fi
  done
} >bench/RESULTS.md

if [ ${#failed[@]} -gt 0 ]; then
  echo "bench: failed sections: ${failed[*]}" >&2
  exit 1
fi
