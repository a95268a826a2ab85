#!/bin/bash
# check-docs.sh - checks the operator documentation with the tools that read it:
#   * groff renders man/txrecon.8 and man/txrecon.conf.5 without a warning (-ww);
#   * journalctl compiles systemd/txrecon.catalog, in a scratch root (never the
#     host's catalog database), and lists one entry per "-- <id>" line;
#   * README.md is a front page of at most 25,000 bytes (the rest is in docs/);
#   * each configuration key is documented once: one item in txrecon.conf(5),
#     no table of keys in README.md or docs/;
#   * every relative Markdown link in README.md and docs/*.md, [text](path) or
#     [text](path#anchor) or [text](#anchor), names a file or directory that
#     exists, and its anchor a heading of that file, by GitHub's rule: the
#     heading's text lower-cased, spaces made '-', punctuation other than '-'
#     and '_' removed, "-1", "-2" … added to repeats (code blocks and code
#     spans are skipped; links with a scheme, http: and the like, are not
#     followed).
# That the catalog and MessageID.swift agree, that txrecon.conf.5 documents
# every key with its real default, and that every README (or docs/) section a
# message or document names exists, is checked by `swift test`
# (JournalCatalogTests, ManualPageTests, DocumentationSectionTests).
# Usage: Tests/systemd/check-docs.sh   (from anywhere; exit 0 = all passed)
# Needs: groff, journalctl, python3 (Debian packages groff, systemd, python3).
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

readme_bytes=$(wc -c < "$ROOT/README.md")
if [ "$readme_bytes" -le 25000 ]; then pass "README.md is $readme_bytes bytes (at most 25000)"
else fail "README.md is $readme_bytes bytes, more than 25000: move a topic into docs/"; fi

# Each configuration key is documented once, in txrecon.conf(5) (whose
# completeness and defaults ManualPageTests checks): once there, and in no
# table of the README or docs/ that lists keys with their defaults again.
keys=$(python3 - "$ROOT" <<'PYTHON'
import os, re, sys
root = sys.argv[1]
manual = open(os.path.join(root, "man/txrecon.conf.5"), encoding="utf-8").read().split("\n")
section, seen, problems = None, {}, []
for line in manual:
    if line.startswith(".SH "):
        title = line[4:]
        section = title[1:title.index("]")] if title.startswith("[") else None
    match = re.match(r"\.BI (\w+)=", line)
    if section and match:
        name = section + "." + match.group(1)
        seen[name] = seen.get(name, 0) + 1
problems += ["man/txrecon.conf.5 documents %s %d times" % (name, count) for name, count in seen.items() if count != 1]
documents = ["README.md"] + sorted("docs/" + name for name in os.listdir(os.path.join(root, "docs")) if name.endswith(".md"))
for document in documents:
    for number, line in enumerate(open(os.path.join(root, document), encoding="utf-8").read().split("\n"), 1):
        # A row whose first cell is keys alone: `Key=`, or `A=`, `B=`.
        if re.match(r"\| *(`[A-Z]\w*=`(, *)?)+ *\|", line):
            problems.append("%s:%d: a table row for a key, which txrecon.conf(5) documents: %s" % (document, number, line[:60]))
print("%d keys" % len(seen))
for problem in problems:
    print("FAIL " + problem)
PYTHON
)
if ! printf '%s\n' "$keys" | grep -q '^FAIL '; then pass "each of the $(printf '%s\n' "$keys" | head -1) is documented once, in txrecon.conf(5)"
else printf '%s\n' "$keys" | grep '^FAIL ' | sed 's/^FAIL //' | while read -r line; do fail "$line"; done; FAILS=$((FAILS + 1)); fi

# The links: one PASS line per document whose links all resolve, one FAIL
# line per broken link.
links=$(python3 - "$ROOT" <<'PYTHON'
import os, re, sys

root = sys.argv[1]
documents = ["README.md"] + sorted("docs/" + name for name in os.listdir(os.path.join(root, "docs"))
                                   if name.endswith(".md") and not name.startswith("."))

def prose_lines(text):
    """(line number, line, the line with its code spans blanked) for the lines
    outside fenced and indented code blocks."""
    fence = None
    previous_blank, in_indented = True, False
    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.lstrip(" ")
        if fence:
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fence = stripped[:3]
            continue
        if line.strip() == "":
            previous_blank = True
            continue
        if (line.startswith("    ") or line.startswith("\t")) and (previous_blank or in_indented):
            in_indented, previous_blank = True, False
            continue
        in_indented, previous_blank = False, False
        yield number, line, re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)

def anchor(title):
    """GitHub's anchor of a heading: its text (a link's text, no markup),
    lower-cased, punctuation but '-' and '_' removed, spaces made '-'."""
    title = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", title)
    title = title.strip().lower()
    return "".join("-" if ch == " " else ch for ch in title if ch.isalnum() or ch in "-_ ")

anchors_of = {}
def anchors(path):
    if path not in anchors_of:
        found, seen = set(), {}
        with open(path, encoding="utf-8") as f:
            for _, line, _ in prose_lines(f.read()):
                m = re.match(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$", line)
                if not m:
                    continue
                base = anchor(m.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        anchors_of[path] = found
    return anchors_of[path]

link = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
for document in documents:
    path = os.path.join(root, document)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    checked, broken = 0, 0
    for number, line, blanked in prose_lines(text):
        for m in link.finditer(blanked):
            target = line[m.start(1):m.end(1)]
            if not target or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", target):
                continue
            checked += 1
            file_part, _, fragment = target.partition("#")
            resolved = path if file_part == "" else os.path.normpath(os.path.join(os.path.dirname(path), file_part))
            shown = os.path.relpath(resolved, root)
            problem = None
            if not os.path.exists(resolved):
                problem = f"{shown} does not exist"
            elif fragment and not resolved.endswith(".md"):
                problem = f"an anchor into {shown}, which is not Markdown"
            elif fragment and fragment not in anchors(resolved):
                problem = f"{shown} has no heading with the anchor #{fragment}"
            if problem:
                broken += 1
                print(f"FAIL: link {document}:{number}: ({target}): {problem}")
    if not broken:
        print(f"PASS: links: {document}: {checked} relative link(s) resolve")
PYTHON
); status=$?
echo "$links"
if [ "$status" != 0 ]; then fail "the link check itself failed (python3 exit $status)"; fi
FAILS=$((FAILS + $(printf '%s\n' "$links" | grep -c '^FAIL: ' || true)))

[ "$FAILS" = 0 ] || { echo "$FAILS check(s) failed"; exit 1; }
