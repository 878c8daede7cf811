#!/usr/bin/env bash
# Speed beside llama.cpp and ik_llama.cpp on this machine: `cellserve bench` and each engine's
# llama-bench on the same GGUF files with the same threads and tests, run alternately (llama.cpp,
# ik -rtr 0, ik -rtr 1, cellserve, then again...) so a machine that slows down or speeds up
# part-way weighs on all alike. Prints the machine (CPU, measured read bandwidth), then per model
# and test every round's t/s, cellserve's ratio to llama.cpp's mean and to ik_llama.cpp's (the
# better of -rtr 0 and -rtr 1 for that row, as issue 49 asks).
#
#   bench/compare.sh [-t 2] [-p 512] [-n 128] [-r 3] [--rounds 2] [--no-ik] [--raw DIR] MODEL.gguf...
#
# LLAMA_CPP (default ../shared/anchors/llama.cpp beside the repository) holds llama-bench;
# IK_LLAMA_CPP (default ../shared/anchors/ik_llama.cpp) holds ik's (skipped, with a line saying so,
# when absent or with --no-ik); CELLSERVE (default build/cli/cellserve) is the binary measured.
# Needs node (scripts/setup) to read the JSON. --raw DIR keeps every run's JSON there. Nothing here
# is a test: timings are never asserted, and docs/kernels.md says how to read them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
llama=${LLAMA_CPP:-$root/../shared/anchors/llama.cpp}
ik=${IK_LLAMA_CPP:-$root/../shared/anchors/ik_llama.cpp}
with_ik=1
cellserve=${CELLSERVE:-$root/build/cli/cellserve}
threads=2 prompt=512 gen=128 reps=3 rounds=2 raw=""
models=()
while (($#)); do
  case $1 in
    -t) threads=$2; shift 2 ;;
    -p) prompt=$2; shift 2 ;;
    -n) gen=$2; shift 2 ;;
    -r) reps=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --raw) raw=$2; shift 2 ;;
    --no-ik) with_ik=0; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
((${#models[@]})) || { echo "compare.sh: give at least one GGUF file (see --help)" >&2; exit 2; }
[[ -x $llama/llama-bench ]] || { echo "compare.sh: no llama-bench in $llama (set LLAMA_CPP)" >&2; exit 1; }
[[ -x $cellserve ]] || { echo "compare.sh: no $cellserve (build it, or set CELLSERVE)" >&2; exit 1; }
if ((with_ik)) && [[ ! -x $ik/llama-bench ]]; then
  echo "compare.sh: no ik_llama.cpp llama-bench in $ik (set IK_LLAMA_CPP): comparing with llama.cpp only" >&2
  with_ik=0
fi
command -v node > /dev/null || { echo "compare.sh: node is needed to read the JSON (scripts/setup)" >&2; exit 1; }
for m in "${models[@]}"; do [[ -f $m ]] || { echo "compare.sh: $m: no such file" >&2; exit 1; }; done
[[ $threads =~ ^[0-9]+$ && $rounds =~ ^[0-9]+$ && $rounds -ge 1 ]] || { echo "compare.sh: -t and --rounds take one number" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[[ -n $raw ]] && mkdir -p "$raw"

"$cellserve" bench --bandwidth -t "$threads" -r 5 -o json > "$work/bandwidth.json"
i=0
for m in "${models[@]}"; do
  for ((round = 1; round <= rounds; round++)); do
    "$llama/llama-bench" -m "$m" -t "$threads" -p "$prompt" -n "$gen" -r "$reps" -o json 2> "$work/llama.err" \
      > "$work/$i-llama-$round.json" || { cat "$work/llama.err" >&2; exit 1; }
    if ((with_ik)); then
      for rtr in 0 1; do
        "$ik/llama-bench" -m "$m" -t "$threads" -p "$prompt" -n "$gen" -r "$reps" -rtr "$rtr" -o json \
          2> "$work/ik.err" > "$work/$i-ik$rtr-$round.json" || { cat "$work/ik.err" >&2; exit 1; }
      done
    fi
    "$cellserve" bench -m "$m" -t "$threads" -p "$prompt" -n "$gen" -r "$reps" -o json --bandwidth \
      > "$work/$i-cellserve-$round.json"
  done
  i=$((i + 1))
done
[[ -n $raw ]] && cp "$work"/*.json "$raw"/

node - "$work" "${#models[@]}" "$rounds" "$threads" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')" "$with_ik" <<'JS'
const fs = require('fs');
const [dir, nModels, rounds, threads, cpu, withIk] = process.argv.slice(2);
const ik = withIk === '1';
const read = (f) => JSON.parse(fs.readFileSync(`${dir}/${f}`, 'utf8'));
const bw = read('bandwidth.json').find((r) => r.test === 'read_bandwidth');
const testName = (r) => (r.n_gen > 0 ? `tg${r.n_gen}` : `pp${r.n_prompt}`);
const fmt = (v) => v.toFixed(v >= 100 ? 0 : v >= 10 ? 1 : 2);
console.log(`CPU: ${cpu}; ${threads} threads; cellserve kernels ${bw.isa}; ` +
  `read bandwidth ${bw.best_gbs.toFixed(1)} GB/s (best of 5, ${bw.threads} threads)\n`);
console.log('| model | test | llama.cpp t/s (each round) |' + (ik ? ' ik -rtr 0 t/s | ik -rtr 1 t/s |' : '') +
  ' cellserve t/s (each round) | ÷ llama.cpp |' + (ik ? ' ÷ ik (better -rtr) |' : '') + ' cellserve share of read bandwidth |');
console.log('|---|---|---|' + (ik ? '---|---|' : '') + '---|---|' + (ik ? '---|' : '') + '---|');
for (let i = 0; i < Number(nModels); i++) {
  const runs = { llama: [], ik0: [], ik1: [], cellserve: [] };
  for (let round = 1; round <= Number(rounds); round++) {
    runs.llama.push(read(`${i}-llama-${round}.json`));
    if (ik) {
      runs.ik0.push(read(`${i}-ik0-${round}.json`));
      runs.ik1.push(read(`${i}-ik1-${round}.json`));
    }
    runs.cellserve.push(read(`${i}-cellserve-${round}.json`).filter((r) => r.test !== 'read_bandwidth'));
  }
  const model = runs.cellserve[0][0];
  for (const row of runs.cellserve[0]) {
    const test = testName(row);
    const pick = (rs) => rs.map((rows) => rows.find((r) => testName(r) === test)?.avg_ts ?? NaN);
    const l = pick(runs.llama);
    const c = pick(runs.cellserve);
    const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
    const k0 = ik ? pick(runs.ik0) : [];
    const k1 = ik ? pick(runs.ik1) : [];
    const ikBest = Math.max(mean(k0), mean(k1));
    const shares = runs.cellserve.map((rows) => rows.find((r) => testName(r) === test)?.roofline_fraction);
    const share = shares.every((s) => typeof s === 'number') ? `${(100 * mean(shares)).toFixed(0)} %` : '';
    const ikCols = ik ? ` ${k0.map(fmt).join(' / ')} | ${k1.map(fmt).join(' / ')} |` : '';
    const ikRatio = ik ? ` ${(mean(c) / ikBest).toFixed(2)} |` : '';
    console.log(`| ${model.model} ${model.file_type} | ${test} | ${l.map(fmt).join(' / ')} |${ikCols} ${c.map(fmt).join(' / ')} | ` +
      `${(mean(c) / mean(l)).toFixed(2)} |${ikRatio} ${share} |`);
  }
}
JS
