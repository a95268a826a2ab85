#!/bin/bash
# check-docs.sh - checks the operator documentation with the tools that read it:
#   * groff renders man/txrecon.8 and man/txrecon.conf.5 without a warning (-ww);
#   * journalctl compiles systemd/txrecon.catalog, in a scratch root (never the
#     host's catalog database), and lists one entry per "-- <id>" line.
# That the catalog and MessageID.swift agree, that txrecon.conf.5 documents
# every key with its real default, and that every README (or docs/) section a
# message or document names exists, is checked by `swift test`
# (JournalCatalogTests, ManualPageTests, DocumentationSectionTests).
# Usage: Tests/systemd/check-docs.sh   (from anywhere; exit 0 = all passed)
# Needs: groff, journalctl (Debian packages groff, systemd).
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

for page in man/txrecon.8 man/txrecon.conf.5; do
  warnings=$(groff -man -Tutf8 -ww -z "$ROOT/$page" 2>&1)
  if [ -z "$warnings" ]; then pass "groff -ww: $page renders without warnings"
  else fail "groff -ww: $page:"; echo "$warnings" | sed 's/^/    /'; fi
done

scratch=$(mktemp -d /tmp/txrecon-catalog.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/usr/lib/systemd/catalog" "$scratch/var/lib/systemd/catalog"
cp "$ROOT/systemd/txrecon.catalog" "$scratch/usr/lib/systemd/catalog/"
expected=$(grep -c '^-- [0-9a-f]\{32\}$' "$ROOT/systemd/txrecon.catalog")
if output=$(journalctl --root="$scratch" --update-catalog 2>&1) && [ -z "$output" ]; then
  listed=$(journalctl --root="$scratch" --list-catalog | grep -c ' txrecon: ')
  if [ "$listed" = "$expected" ] && [ "$expected" -gt 0 ]; then
    pass "journalctl --update-catalog: $listed entries compiled"
  else fail "journalctl compiled $listed catalog entries, the file has $expected"; fi
else
  fail "journalctl --update-catalog: $output"
fi

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
