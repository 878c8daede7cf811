#!/usr/bin/env bash
# Refreshes web/vendor/ from the npm registry at the versions pinned in web/package.json: the
# browser (ES module) builds of Preact, its hooks, htm and uPlot, each with its licence. Run by a
# developer when a version changes; the build and the hub only read the committed copies.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
version() { node -e "console.log(require(process.argv[1]).dependencies[process.argv[2]])" "$PWD/package.json" "$1"; }
for p in preact htm uplot; do
  v=$(version "$p")
  (cd "$tmp" && npm pack --silent "$p@$v" > /dev/null && mkdir "$p" && tar xzf "$p-$v.tgz" -C "$p")
done
out=vendor
mkdir -p "$out"
sed '/sourceMappingURL/d' "$tmp/preact/package/dist/preact.module.js" > "$out/preact.module.js"
# hooks import the bare specifier "preact"; a browser without an import map needs the file's path.
sed -e '/sourceMappingURL/d' -e 's/from"preact"/from".\/preact.module.js"/g' \
  "$tmp/preact/package/hooks/dist/hooks.module.js" > "$out/hooks.module.js"
cp "$tmp/htm/package/dist/htm.module.js" "$out/"
cp "$tmp/uplot/package/dist/uPlot.esm.js" "$tmp/uplot/package/dist/uPlot.min.css" "$out/"
cp "$tmp/preact/package/LICENSE" "$out/preact.LICENSE"
cp "$tmp/htm/package/LICENSE" "$out/htm.LICENSE"
cp "$tmp/uplot/package/LICENSE" "$out/uPlot.LICENSE"
echo "vendor.sh: web/vendor/ refreshed"
