#!/usr/bin/env bash
# Size and start-up cost of the self-contained bundles (scripts/bundle). Usage:
#   bench/bundle_startup.sh [BUNDLE_DIR=/tmp/bundle-out] [A64_BUILD=build-aarch64] [X86_BUILD=build] [N=10]
# For each of aarch64 and x86_64 (skipped when its bundle or binary is missing): the tarball and
# unpacked sizes, then the median wall time of `cellserve --version` over N alternating runs of
# the bundled binary (the loader run as bin/cellserve runs it), the normally linked one, and
# bin/cellserve itself (its sh adds a start of its own). aarch64 runs under qemu-aarch64-static:
# the bundle with -L EMPTY_DIR, the normal binary with the cross toolchain's libraries, as ctest
# does.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle_dir=${1:-/tmp/bundle-out}
a64_build=${2:-build-aarch64}
x86_build=${3:-build}
n=${4:-10}
version=$(sed -nE 's/^project\(cellserve[^)]*VERSION[[:space:]]+([0-9][0-9.]*).*/\1/p' CMakeLists.txt)

work=$(mktemp -d "${TMPDIR:-/tmp}/cs-bundle-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/empty"

# ms COMMAND...: wall milliseconds of one run (output discarded; a failed run aborts).
ms() {
  local start end
  start=$EPOCHREALTIME
  "$@" > /dev/null 2>&1 || { echo "bundle_startup: '$*' failed" >&2; exit 1; }
  end=$EPOCHREALTIME
  awk -v a="${start/,/.}" -v b="${end/,/.}" 'BEGIN { printf "%.1f\n", (b - a) * 1000 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

bench() {
  local arch=$1 binary=$2 tarball=$bundle_dir/cellserve-$version-linux-$1.tar.gz
  shift 2
  if [[ ! -f $tarball || ! -x $binary ]]; then
    echo "$arch: skipped (no $tarball or $binary)"
    return 0
  fi
  tar -C "$work" -xzf "$tarball"
  local root=$work/cellserve-$version-linux-$arch loader
  loader=$(cd "$root/lib" && echo ld-linux-*)
  local emulator=()
  [[ $arch == aarch64 ]] && emulator=(qemu-aarch64-static -L "$work/empty")
  local bundled=("${emulator[@]}" "$root/lib/$loader" --inhibit-cache --library-path "$root/lib" "$root/libexec/cellserve" --version)
  local normal=("$@" "$binary" --version)
  local launcher=(env CELLSERVE_EMULATOR="${emulator[*]}" "$root/bin/cellserve" --version)

  echo "$arch:"
  printf '  tarball   %8.2f MiB  %s\n' "$(stat -c %s "$tarball" | awk '{ print $1 / 1048576 }')" "$tarball"
  printf '  unpacked  %8.2f MiB  (%s files; lib/ %.2f MiB, libexec/cellserve %.2f MiB stripped, was %.2f MiB)\n' \
    "$(du -sb "$root" | awk '{ print $1 / 1048576 }')" "$(find "$root" -type f | wc -l)" \
    "$(du -sb "$root/lib" | awk '{ print $1 / 1048576 }')" \
    "$(stat -c %s "$root/libexec/cellserve" | awk '{ print $1 / 1048576 }')" \
    "$(stat -c %s "$binary" | awk '{ print $1 / 1048576 }')"
  # One warm-up of each, then N alternating pairs.
  ms "${bundled[@]}" > /dev/null
  ms "${normal[@]}" > /dev/null
  ms "${launcher[@]}" > /dev/null
  : > "$work/bundled.ms"
  : > "$work/normal.ms"
  : > "$work/launcher.ms"
  for ((i = 0; i < n; ++i)); do
    ms "${bundled[@]}" >> "$work/bundled.ms"
    ms "${normal[@]}" >> "$work/normal.ms"
    ms "${launcher[@]}" >> "$work/launcher.ms"
  done
  printf '  --version, median of %d alternating: bundle %s ms, normal %s ms, bundle via bin/cellserve %s ms\n' "$n" \
    "$(median < "$work/bundled.ms")" "$(median < "$work/normal.ms")" "$(median < "$work/launcher.ms")"
  echo "    bundle:   $(paste -sd' ' "$work/bundled.ms")   ${bundled[*]}"
  echo "    normal:   $(paste -sd' ' "$work/normal.ms")   ${normal[*]}"
  echo "    launcher: $(paste -sd' ' "$work/launcher.ms")   ${launcher[*]}"
  chmod -R u+w "$root" && rm -rf "$root"
}

bench aarch64 "$a64_build/cli/cellserve" qemu-aarch64-static -L /usr/aarch64-linux-gnu \
  -E LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib:/usr/lib/aarch64-linux-gnu
bench x86_64 "$x86_build/cli/cellserve"
