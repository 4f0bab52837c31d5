#!/usr/bin/env bash
# The API documentation, made with the toolchain's DocC (no package plugin
# needed): symbol graphs from a clean build of the package in its own
# scratch path (a few minutes), then one archive per library module in
# .build/docs/MODULE.doccarchive, and a line per module saying how many
# public types and members have a doc comment (DocC's coverage summary).
# Serve an archive's directory with any static web server to read it.
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build/symbol-graphs
out=.build/docs
rm -rf "$graphs" "$out" .build/docs-build
mkdir -p "$graphs" "$out"
swift build --scratch-path .build/docs-build \
  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$PWD/$graphs" >/dev/null 2>&1
printf "%-18s %-22s %s\n" module "types documented" "members documented"
for graph in "$graphs"/*.symbols.json; do
  module=$(basename "$graph" .symbols.json)
  case "$module" in *@*) continue ;; esac
  # Library modules only (samples, tools and tests are not API).
  [ -d "Sources/$module" ] && [ "$module" != CarrierCLI ] && [ "$module" != FuzzTargets ] || continue
  work=$(mktemp -d)
  cp "$graphs/$module".symbols.json "$work/"
  cp "$graphs/$module"@*.symbols.json "$work/" 2>/dev/null || true
  summary=$(docc convert --additional-symbol-graph-dir "$work" --output-path "$out/$module.doccarchive" \
    --fallback-display-name "$module" --fallback-bundle-identifier "org.carrier-rtc.$module" \
    --fallback-bundle-version 1 --experimental-documentation-coverage --coverage-summary-level brief 2>/dev/null)
  types=$(echo "$summary" | awk -F'|' '/^Types/ {gsub(/ /, "", $2); print $2}')
  members=$(echo "$summary" | awk -F'|' '/^Members/ {gsub(/ /, "", $2); print $2}')
  printf "%-18s %-22s %s\n" "$module" "${types:--}" "${members:--}"
  rm -rf "$work"
done
echo "docs: $(ls -d "$out"/*.doccarchive | wc -l) module archives in $out"
