#!/usr/bin/env bash
# Instructions per weight block of the aarch64 kernels under qemu (docs/phones.md, "ARM
# performance plan"): bench/arm_insn_count.cpp is cross-compiled against BUILD_DIR's kernel
# libraries and run under qemu-aarch64-static -singlestep -d exec, which logs one line per
# executed instruction. Only instructions inside the kernels (functions of namespace
# cellserve::engine::kernels, from the non-PIE binary's symbol table) are counted, so the
# loader's and the C library's start-up, which vary from run to run, are not. Each kernel runs
# REPS times over 16 and over 48 blocks; the difference of the two counts, over 32 × REPS blocks,
# is its cost per weight block (per weight block and token for tile and packed kernels, whose
# one call covers several rows and tokens). The activation conversion runs for the same 64
# blocks in both runs and cancels out.
# Usage: bench/arm_insn_count.sh [BUILD_DIR=build-aarch64] [REPS=4]; TYPES, ISAS and MODES (space-
# separated lists, e.g. TYPES="q4_0 q8_0" MODES=packed) narrow the table to some rows.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-aarch64}
reps=${2:-4}
for lib in engine/kernels/libcs_kernels.a engine/quant/libcs_quant.a base/libcs_base.a; do
  [[ -f $build/$lib ]] || { echo "arm_insn_count: no $build/$lib (ninja -C $build cs_kernels)" >&2; exit 1; }
done
exe=$build/arm_insn_count
aarch64-linux-gnu-g++ -std=c++20 -O2 -no-pie -I. bench/arm_insn_count.cpp "$build/engine/kernels/libcs_kernels.a" \
  "$build/engine/quant/libcs_quant.a" "$build/base/libcs_base.a" -o "$exe"
ranges=$build/arm_insn_count.ranges
aarch64-linux-gnu-nm -S --defined-only "$exe" | awk '$3 ~ /^[tTwW]$/ && $4 ~ /_ZN9cellserve6engine7kernels/ { print $1, $2 }' > "$ranges"

count() {  # ISA TYPE MODE BLOCKS: executed instructions inside the kernels
  qemu-aarch64-static -L /usr/aarch64-linux-gnu -singlestep -d exec,nochain -D /dev/stdout \
    "$exe" "$1" "$2" "$3" "$4" "$reps" | python3 -c '
import bisect, re, sys
spans = sorted((int(a, 16), int(a, 16) + int(b, 16)) for a, b in (l.split() for l in open(sys.argv[1])))
starts = [a for a, _ in spans]
pc = re.compile(r"^Trace [0-9]+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")
n = 0
for line in sys.stdin:
    m = pc.match(line)
    if m:
        x = int(m.group(1), 16)
        i = bisect.bisect_right(starts, x) - 1
        n += i >= 0 and x < spans[i][1]
print(n)' "$ranges"
}

printf '%-13s %-5s %-7s %6s %12s\n' isa type kernel tokens "insn/block"
for type in ${TYPES:-q4_0 q8_0 q4_k q6_k}; do
  for isa in ${ISAS:-generic neon neon-dotprod neon-i8mm}; do
    for mode in ${MODES:-vec tile packed}; do
      line=$(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$exe" "$isa" "$type" "$mode" 1 1 2> /dev/null) || continue
      [[ $line =~ rows=([0-9]+)\ cols=([0-9]+) ]] || continue
      rows=${BASH_REMATCH[1]}
      cols=${BASH_REMATCH[2]}
      lo=$(count "$isa" "$type" "$mode" 16)
      hi=$(count "$isa" "$type" "$mode" 48)
      per=$(python3 -c "print(f'{($hi - $lo) / (32 * $reps * $rows * $cols):.1f}')")
      printf '%-13s %-5s %-7s %6s %12s\n' "$isa" "$type" "$mode" "$cols" "$per"
    done
  done
done
