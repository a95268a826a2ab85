#!/bin/sh
# selftest-start.sh - the power-cut selftest's writer, run in the guest as /txrecon/start.sh.
#
# Files: /txrecon/data/records  "rec N" lines, fsync'ed after every BATCH of them
#        /txrecon/data/unsynced "u N" lines, written beside them and never fsync'ed
# At start it counts what survived (the longest prefix of lines 1, 2, 3, ... of each
# file, and any other lines after it in records) and reports it; then it appends,
# and reports each batch twice: once written, once fsync'ed. The host only ever hears
# "synced" for records whose fsync(2) has returned.
#
# Reports, one line per TCP connection to the host's listener at 10.0.2.2:REPORT_PORT:
#   have BOOT RECORDS OTHER UNSYNCED   what this boot found (OTHER: lines after the prefix)
#   wrote BOOT N U                     records up to N and unsynced lines up to U written
#   synced BOOT N                      records up to N fsync'ed
# It also serves /txrecon/data over HTTP on guest port 8080 (busybox httpd), which the
# host reaches through a forwarded port.
# Environment: REPORT_PORT, BATCH (records per fsync, default 20), TXRECON_BOOT (from init),
#   NO_FSYNC=1 (the negative control: report "synced" without calling fsync).
set -u
D=/txrecon/data R=/txrecon/data/records U=/txrecon/data/unsynced
BATCH=${BATCH:-20}
report() { echo "$*" | nc -w 5 10.0.2.2 "$REPORT_PORT" || echo "selftest: report failed: $*"; }
# prefix FILE TAG: how many leading lines read "TAG 1", "TAG 2", ...
prefix() { awk -v tag="$2" '$0 != tag " " NR { exit } { p = NR } END { print p + 0 }' "$1"; }

if [ ! -e "$R" ]; then          # first boot: create both files and make their names durable
  mkdir -p "$D"
  : > "$R"; : > "$U"
  sync "$R" "$U" "$D" /txrecon
fi
have=$(prefix "$R" rec)
lines=$(awk 'END { print NR }' "$R")
other=$((lines - have))
unsynced=$(prefix "$U" u)
echo "selftest: boot $TXRECON_BOOT found $have records ($other other lines), $unsynced unsynced lines"
if [ "$other" -gt 0 ]; then     # keep the prefix only, durably, before appending again
  head -n "$have" "$R" > "$R.new"; sync "$R.new"; mv "$R.new" "$R"; sync "$D"
fi
if [ "$(awk 'END { print NR }' "$U")" -gt "$unsynced" ]; then
  head -n "$unsynced" "$U" > "$U.new"; mv "$U.new" "$U"
fi
report "have $TXRECON_BOOT $have $other $unsynced"
busybox httpd -p 8080 -h "$D"

n=$have u=$unsynced
while :; do
  i=0
  while [ "$i" -lt "$BATCH" ]; do
    n=$((n + 1)); u=$((u + 1)); i=$((i + 1))
    echo "rec $n" >> "$R"
    echo "u $u" >> "$U"
  done
  report "wrote $TXRECON_BOOT $n $u"
  [ "${NO_FSYNC:-0}" = 1 ] || sync "$R"    # coreutils: fsync(2) of the records file
  report "synced $TXRECON_BOOT $n"
done
