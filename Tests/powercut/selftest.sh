#!/bin/bash
# selftest.sh - shows that vm.sh's power cut keeps what the guest fsync'ed, and only that.
#
# Boots the VM of vm.sh with guest/selftest-start.sh as /txrecon/start.sh: a writer
# that appends "rec N" lines to /txrecon/data/records, fsyncs after every BATCH of
# them and only then reports "synced N" to a listener on the host's 127.0.0.1
# (the guest's 10.0.2.2); beside them it appends lines to /txrecon/data/unsynced that
# it never fsyncs. Then CUTS times: waits until the writer runs, cuts the power
# (SIGKILL of qemu) after a random 1-8 s, boots again, and checks the claim
#   every record reported as synced before the cut is in the file after the reboot,
# and that the guest's e2fsck (after the mount that replays the journal) is clean.
# Counted, for information: records written but not yet fsync'ed that were lost, and
# how many of the never-fsync'ed lines survived. After the last boot it stops the VM
# cleanly, runs e2fsck on the image on the host and reads the file out of the image.
# The forwarded port is checked too: the host reads the records file from the guest's
# busybox httpd (guest port 8080) through 127.0.0.1:HOSTPORT.
#
# Needs root, qemu-system-x86, e2fsprogs, cpio, python3 (the listener), and what
#   vm.sh prepare needs (apt-get download reaching Debian).
# Usage: Tests/powercut/selftest.sh
#   env: WORKDIR (default /var/cache/txrecon-powercut/selftest; kept: the downloaded
#        kernel is reused, the disk is made anew), CUTS (5), BATCH (20), SEED (random),
#        NO_FSYNC=1 (the negative control: the writer reports "synced" without fsync;
#        the cuts are then expected to FAIL, which shows the cut loses the page cache)
# Prints PASS/FAIL per check and closes with "selftest: N passed, N failed"; exit 0 = all passed.
set -Eeuo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
VM="$HERE/vm.sh"
WORKDIR="${WORKDIR:-/var/cache/txrecon-powercut/selftest}"
CUTS="${CUTS:-5}"
BATCH="${BATCH:-20}"
SEED="${SEED:-$(( $(date +%s) % 100000 ))}"
RANDOM=$SEED
ST="$WORKDIR/selftest"
REPORTS="$ST/reports.log"
LISTENER_PID= PASSES=0 FAILS=0

log()  { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }
pass() { log "PASS: $*"; PASSES=$((PASSES + 1)); }
fail() { log "FAIL: $*"; FAILS=$((FAILS + 1)); }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

cleanup() {
  if "$VM" pid "$WORKDIR" >/dev/null 2>&1; then "$VM" cut "$WORKDIR" 2>/dev/null || true; fi
  [ -z "$LISTENER_PID" ] || kill "$LISTENER_PID" 2>/dev/null || true
}
trap cleanup EXIT

# report_field KIND BOOT FIELD: FIELD (1 = the first number after BOOT) of the last "KIND BOOT ..."
# report received; empty when none.
report_field() { awk -v k="$1" -v b="$2" -v f="$3" '$2 == k && $3 == b { v = $(f + 3) } END { print v }' "$REPORTS"; }
# wait_report KIND BOOT SECONDS: until a "KIND BOOT ..." report has arrived.
wait_report() {
  local deadline=$(( $(now_ms) + $3 * 1000 ))
  until [ -n "$(report_field "$1" "$2" 1)" ]; do
    if [ "$(now_ms)" -gt "$deadline" ]; then
      log "no '$1 $2' report within $3 s; the guest's console says:"; tail -n 20 "$("$VM" log "$WORKDIR")"; return 1
    fi
    sleep 0.2
  done
}
# free_port: a TCP port nothing listens on at 127.0.0.1 right now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# http_records PORT: the guest's records file, through the forwarded port.
http_records() {
  exec 5<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET /records HTTP/1.0\r\nHost: guest\r\n\r\n' >&5
  sed '1,/^\r$/d' <&5
  exec 5<&-
}

[ "$(id -u)" = 0 ] || { echo "selftest.sh: must run as root" >&2; exit 2; }
command -v python3 >/dev/null || { echo "selftest.sh: python3 is missing" >&2; exit 2; }
log "work directory $WORKDIR, seed $SEED, $CUTS cuts, $BATCH records per fsync"
"$VM" prepare "$WORKDIR"
"$VM" install "$WORKDIR" "$HERE/guest/selftest-start.sh" /txrecon/start.sh
mkdir -p "$ST"; : > "$REPORTS"; rm -f "$ST/listener.port" "$ST/cuts.log"

# The listener: one report line per connection, appended with the host's time in ms.
python3 -u - "$ST/listener.port" "$REPORTS" <<'EOF' > "$ST/listener.log" 2>&1 &
import socket, sys, threading, time
srv = socket.create_server(("127.0.0.1", 0))
open(sys.argv[1], "w").write("%d\n" % srv.getsockname()[1])
lock = threading.Lock()
def serve(conn):
    with conn:
        conn.settimeout(10)
        line = conn.makefile("rb").readline().decode(errors="replace").strip()
    if line:
        with lock, open(sys.argv[2], "a") as out:
            out.write("%d %s\n" % (time.time() * 1000, line))
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
EOF
LISTENER_PID=$!
for _ in $(seq 50); do [ -s "$ST/listener.port" ] && break; sleep 0.1; done
REPORT_PORT=$(cat "$ST/listener.port") || { echo "selftest.sh: the listener did not start" >&2; cat "$ST/listener.log" >&2; exit 1; }
HTTP_PORT=$(free_port)
export FWD="$HTTP_PORT:8080" GUEST_ENV="REPORT_PORT=$REPORT_PORT BATCH=$BATCH NO_FSYNC=${NO_FSYNC:-0}"
log "listener on 127.0.0.1:$REPORT_PORT (the guest's 10.0.2.2:$REPORT_PORT); guest port 8080 on 127.0.0.1:$HTTP_PORT"

# boot_checked: boot; sets boot to its number; FAIL when the guest's e2fsck found errors.
boot_checked() {
  local rc=0
  "$VM" boot "$WORKDIR" > /dev/null || rc=$?
  boot=$("$VM" status "$WORKDIR" | awk '{print $4}')
  case $rc in
    0) ;;
    3) fail "boot $boot: the guest's e2fsck found errors" ;;
    *) fail "boot failed (exit $rc)"; exit 1 ;;
  esac
}

boot_checked
synced_before=0
for cut in $(seq "$CUTS"); do
  wait_report have "$boot" 120 || { fail "boot $boot: the writer did not start"; break; }
  wait_report synced "$boot" 60 || { fail "boot $boot: the writer never fsync'ed"; break; }
  served=$(http_records "$HTTP_PORT" | grep -c '^rec ' || true)
  if [ "$served" -ge "$(report_field synced "$boot" 1)" ]; then
    pass "boot $boot: the guest's httpd answered through 127.0.0.1:$HTTP_PORT ($served records)"
  else
    fail "boot $boot: through 127.0.0.1:$HTTP_PORT came $served records, fewer than synced"
  fi
  delay=$(( 1000 + RANDOM % 7000 ))
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  "$VM" cut "$WORKDIR"
  synced=$(report_field synced "$boot" 1); wrote=$(report_field wrote "$boot" 1)
  wrote_unsynced=$(report_field wrote "$boot" 2)
  [ "$synced" -ge "$synced_before" ] || synced=$synced_before   # a boot that synced nothing new

  boot_checked
  wait_report have "$boot" 120 || { fail "boot $boot: the writer did not start"; break; }
  have=$(report_field have "$boot" 1); other=$(report_field have "$boot" 2)
  found_unsynced=$(report_field have "$boot" 3)
  since_cut=$(awk -v b="$boot" '$1 == "boot=" b { sub("since_cut_ms=", "", $3); print $3 }' "$WORKDIR/boots.log")
  lost=$(( wrote > have ? wrote - have : 0 ))
  info="cut after $delay ms; $synced synced, $wrote written, $have found ($lost written but unsynced lost, $other other lines); unsynced file: $wrote_unsynced written, $found_unsynced found; cut to ready $since_cut ms"
  if [ "$have" -ge "$synced" ] && [ "$other" = 0 ]; then
    pass "cut $cut: every synced record survived: $info"
  else
    fail "cut $cut: $info"
  fi
  synced_before=$synced
  printf 'cut=%s delay_ms=%s synced=%s written=%s found=%s lost_unsynced=%s other=%s unsynced_written=%s unsynced_found=%s cut_to_ready_ms=%s\n' \
    "$cut" "$delay" "$synced" "$wrote" "$have" "$lost" "$other" "$wrote_unsynced" "$found_unsynced" "$since_cut" >> "$ST/cuts.log"
done

# The end: a clean stop, then the host's own look at the image.
wait_report synced "$boot" 60 || fail "boot $boot: the writer never fsync'ed"
final_synced=$(report_field synced "$boot" 1); final_synced=${final_synced:-0}
if "$VM" stop "$WORKDIR"; then pass "boot $boot: clean power-off"; else fail "boot $boot: no clean power-off"; fi
if "$VM" fsck "$WORKDIR" > "$ST/host-fsck.log" 2>&1; then pass "host e2fsck -fn of the image: clean"
else fail "host e2fsck -fn of the image: see $ST/host-fsck.log"; fi
rm -f "$ST/records"
"$VM" fetch "$WORKDIR" /txrecon/data/records "$ST/records"
valid=$(awk '$0 != "rec " NR { exit } { p = NR } END { print p + 0 }' "$ST/records")
total=$(awk 'END { print NR }' "$ST/records")
if [ "$valid" = "$total" ] && [ "$valid" -ge "$final_synced" ]; then
  pass "the image holds records 1 to $valid in order after the clean stop ($final_synced reported synced)"
else
  fail "the image holds $total lines, $valid of them in order; $final_synced were reported synced"
fi

log "per boot (WORKDIR/boots.log):"; sed 's/^/  /' "$WORKDIR/boots.log"
awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
       if (v["since_cut_ms"] != "-") { n++; s += v["since_cut_ms"]; if (v["since_cut_ms"] > mx) mx = v["since_cut_ms"] }
       r += v["ready_ms"]; m++ }
     END { if (n) printf "cut to ready: %d cuts, mean %d ms, max %d ms; boot to ready: mean %d ms over %d boots\n", n, s / n, mx, r / m, m }' \
  "$WORKDIR/boots.log" | while read -r line; do log "$line"; done
echo "selftest: $PASSES passed, $FAILS failed"
[ "$FAILS" = 0 ]
