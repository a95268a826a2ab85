#!/bin/bash
# run.sh - the power-cut test: txrecon's receiver and daemon in a virtual machine whose
# power is cut at random moments while the host posts notifications to it.
#
# SIGKILL cannot test "200 only after durable": the page cache survives a killed
# process. Here `txrecon receive` and `txrecon run` run in the qemu guest of vm.sh
# (Debian's kernel, software emulation, the spool on the guest's own ext4 disk with
# cache=none: see vm.sh), and SIGKILL of qemu loses the guest's page cache with it.
#
# The host side, all on 127.0.0.1:
#   backend.py  the backend the guest's daemon delivers to (URL=http://10.0.2.2:PORT/):
#               records every 2xx it gives (appended and fsynced before it answers),
#               injects outages, 503s, dropped connections and slow answers
#   poster.py   4 concurrent producers posting envelopes (unique ids, one in four
#               posted again with a newer version) and Apple's real sandbox
#               notifications (SAMPLES) to the guest's receiver through a forwarded
#               port; records every body answered 200 before it goes on
#   check.py    the verdict, after the last boot
# The test: boot, wait until posts are answered 200, cut the power after a random
# delay (seeded; DELAY_MIN to DELAY_MAX ms), boot again, CUTS times. After the last cut:
# boot, stop posting, let the daemon drain against a backend that no longer fails
# (until every body answered 200 was delivered, or nothing happened for IDLE s, at
# most DRAIN_TIMEOUT s), stop the guest cleanly, e2fsck the image on the host, read
# the spool out of it and check: every body answered 200 was delivered (or superseded
# by a newer version that was), nothing valid in rejected/, new/ and hold/ empty, no
# item in queue/, nothing in done/ without its 2xx. The guest's initramfs runs
# e2fsck -fn after the journal replay at every boot, and a boot whose check is not
# clean fails the test. Figures: bodies answered 200, delivered, superseded, lost,
# duplicates, bodies at risk at each cut, time from a cut to the guest's init and to
# the receiver's first 200 again (medians), the run's total time.
#
# The guest's configuration (written here into the image's /etc/txrecon/txrecon.conf):
#   [Receive] Listen=0.0.0.0:8081, MaxRequestsPerSecondPerAddress=0 (every client is
#   qemu's 10.0.2.2); [Verification] AcceptEnvelopes=yes, BundleID= and Environment=Sandbox
#   of Apple's samples; [Backend] Timeout=5s; [Delivery] RetryDelays=1s 2s 3s. The disk
#   is mounted with the kernel's defaults (rw,relatime: data=ordered, barriers on).
#
# DESTINATIONS=2 adds a further destination, destinations/second.conf, delivering to a
# second backend.py of its own (the same faults): every drop is then fanned out into
# both destinations' inboxes (Spool+FanOut) while the power is cut, and every check
# above is made for each destination (the second through a view of the spool in which
# destinations/second/ stands for new/, queue/, hold/ and done/), and
# destinations/backend/new/ must be empty too.
#
# VARIANT=unsafe is the negative control: BINARY is then a receiver built with
# -DTXRECON_POWERCUT_ANSWER_BEFORE_FSYNC (`make powercut-control`), which answers 200
# before anything is fsynced (Sources/TxRecon/Receive/GroupCommit.swift); the run must
# lose acknowledged bodies, and exits 0 when it did (1 when it did not).
#
# Needs root, and what vm.sh needs (`make deps-powercut` installs it: qemu-system-x86,
#   e2fsprogs, cpio, xz-utils, debootstrap), python3, the release binary.
# Usage: Tests/powercut/run.sh      (make powercut; make powercut-control)
#   env: CUTS (20), SEED (random, printed), VARIANT (safe|unsafe), BINARY (.build/release/
#        txrecon), WORKDIR (/var/cache/txrecon-powercut/run, or .../control: kept, the
#        kernel is reused, the disk made anew), DELAY_MIN/DELAY_MAX (1000/8000 ms after
#        the boot's first 200), DRAIN_TIMEOUT (300 s), IDLE (30 s), CLIENTS (4),
#        SAMPLES (/work/shared/testdata/appstore/real, 16 notifications, if there; else
#        Examples/samples, 3 of them: the app com.loki-project.loki-messenger, Sandbox)
# Prints progress, PASS/FAIL lines from check.py and a "summary:" JSON line; the files
#   are in WORKDIR/test (acked.log, delivered.log, cuts.log, spool/, check.log) and the
#   guest's console of each boot in WORKDIR/logs/serial-N.log.
# Exit status: 0 all checks passed (control: bodies were lost), 1 a check failed,
#   2 usage or a missing tool.
set -Eeuo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VM="$HERE/vm.sh"
VARIANT="${VARIANT:-safe}"
case "$VARIANT" in
  safe)   BINARY="${BINARY:-$ROOT/.build/release/txrecon}"; WORKDIR="${WORKDIR:-/var/cache/txrecon-powercut/run}" ;;
  unsafe) BINARY="${BINARY:-$ROOT/.build/powercut-unsafe/release/txrecon}"; WORKDIR="${WORKDIR:-/var/cache/txrecon-powercut/control}" ;;
  *) echo "run.sh: VARIANT=$VARIANT: safe or unsafe" >&2; exit 2 ;;
esac
CUTS="${CUTS:-20}"
SEED="${SEED:-$(( $(date +%s%N) / 1000 % 1000000 ))}"
DELAY_MIN="${DELAY_MIN:-1000}"
DELAY_MAX="${DELAY_MAX:-8000}"
DRAIN_TIMEOUT="${DRAIN_TIMEOUT:-300}"
IDLE="${IDLE:-30}"
CLIENTS="${CLIENTS:-4}"
DESTINATIONS="${DESTINATIONS:-1}"
case "$DESTINATIONS" in 1|2) ;; *) echo "run.sh: DESTINATIONS=$DESTINATIONS: 1 or 2" >&2; exit 2 ;; esac
if [ -z "${SAMPLES:-}" ]; then
  SAMPLES=/work/shared/testdata/appstore/real
  ls "$SAMPLES"/*notification*.jws >/dev/null 2>&1 || SAMPLES="$ROOT/Examples/samples"
fi
T="$WORKDIR/test"
RANDOM=$SEED
BACKEND_PID= BACKEND2_PID= POSTER_PID=
START_MS=$(( $(date +%s%N) / 1000000 ))

log() { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }
die() { log "FAIL: $*"; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
count() { [ -f "$1" ] && wc -l < "$1" || echo 0; }

cleanup() {
  if "$VM" pid "$WORKDIR" >/dev/null 2>&1; then "$VM" cut "$WORKDIR" 2>/dev/null || true; fi
  [ -z "$POSTER_PID" ] || kill "$POSTER_PID" 2>/dev/null || true
  [ -z "$BACKEND_PID" ] || kill "$BACKEND_PID" 2>/dev/null || true
  [ -z "$BACKEND2_PID" ] || kill "$BACKEND2_PID" 2>/dev/null || true
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || { echo "run.sh: must run as root" >&2; exit 2; }
command -v python3 >/dev/null || { echo "run.sh: python3 is missing" >&2; exit 2; }
[ -x "$BINARY" ] || { echo "run.sh: no $BINARY (make release, or make powercut-control for the unsafe one)" >&2; exit 2; }
compgen -G "$SAMPLES/*notification*.jws" >/dev/null || compgen -G "$SAMPLES/*notification*.json" >/dev/null || { echo "run.sh: no Apple notification samples in $SAMPLES" >&2; exit 2; }

log "power-cut test, $VARIANT receiver ($BINARY): $CUTS cuts, $DESTINATIONS destination(s), seed $SEED, work directory $WORKDIR, samples $SAMPLES"
# The guest's root needs the binary's libraries (libcurl4, libssl3, libmicrohttpd12, libsqlite3-0,
# libsystemd0): the systemd test's cached root has them; a root of vm.sh's own gets them.
export ROOT_PACKAGES="libcurl4,libssl3,libmicrohttpd12,libnats3.4,libsqlite3-0,libsystemd0"
"$VM" prepare "$WORKDIR"
guest_root=$(sed -n 's/^root=//p' "$WORKDIR/prepared")
# Every library the binary needs, resolved by the guest root's own loader in that root.
missing=$("$guest_root/lib64/ld-linux-x86-64.so.2" --library-path "$guest_root/lib/x86_64-linux-gnu:$guest_root/usr/lib/x86_64-linux-gnu" \
          --list "$BINARY" | awk -v r="$guest_root" '/=>/ && index($3, r) != 1 && $3 != "" { print $1 } /not found/ { print $1 }' || true)
[ -z "$missing" ] || die "the guest root $guest_root lacks libraries of the binary: $missing"

rm -rf "$T"; mkdir -p "$T/image/etc/txrecon"
: > "$T/acked.log"; : > "$T/delivered.log"; : > "$T/cuts.log"
echo faults > "$T/backend.mode"
python3 "$HERE/backend.py" "$T/backend.port" "$T/delivered.log" "$T/backend.mode" "$SEED" > "$T/backend.err" 2>&1 &
BACKEND_PID=$!
for _ in $(seq 100); do [ -s "$T/backend.port" ] && break; sleep 0.1; done
BACKEND_PORT=$(cat "$T/backend.port" 2>/dev/null) || die "the backend did not start: $(cat "$T/backend.err")"
if [ "$DESTINATIONS" = 2 ]; then
  : > "$T/delivered-second.log"
  python3 "$HERE/backend.py" "$T/backend2.port" "$T/delivered-second.log" "$T/backend.mode" "$((SEED + 1))" \
    > "$T/backend2.err" 2>&1 &
  BACKEND2_PID=$!
  for _ in $(seq 100); do [ -s "$T/backend2.port" ] && break; sleep 0.1; done
  BACKEND2_PORT=$(cat "$T/backend2.port" 2>/dev/null) || die "the second backend did not start: $(cat "$T/backend2.err")"
  mkdir -p "$T/image/etc/txrecon/destinations"
  cat > "$T/image/etc/txrecon/destinations/second.conf" <<EOF
# The power-cut test's further destination (Tests/powercut/run.sh, DESTINATIONS=2).
[Backend]
URL=http://10.0.2.2:$BACKEND2_PORT/powercut
Timeout=5s

[Delivery]
RetryDelays=1s 2s 3s
EOF
fi
RECEIVER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

cat > "$T/image/etc/txrecon/txrecon.conf" <<EOF
# The power-cut test's configuration (Tests/powercut/run.sh).
[Spool]
Directory=/var/spool/txrecon

[Backend]
URL=http://10.0.2.2:$BACKEND_PORT/powercut
Timeout=5s

[Delivery]
RetryDelays=1s 2s 3s

[Verification]
BundleID=com.loki-project.loki-messenger
Environment=Sandbox
AcceptEnvelopes=yes

[Receive]
Listen=0.0.0.0:8081
# Every connection comes from qemu's user-mode network, one address.
MaxRequestsPerSecondPerAddress=0
EOF
install_file() { "$VM" install "$WORKDIR" "$1" "$2" 2> "$T/install.err" || { cat "$T/install.err"; die "vm.sh install $1 $2"; }; }
install_file "$BINARY" /usr/bin/txrecon
install_file "$T/image/etc/txrecon/txrecon.conf" /etc/txrecon/txrecon.conf
[ "$DESTINATIONS" = 1 ] || install_file "$T/image/etc/txrecon/destinations/second.conf" /etc/txrecon/destinations/second.conf
install_file "$ROOT/Config/AppleRootCA-G3.cer" /usr/share/txrecon/AppleRootCA-G3.cer
install_file "$ROOT/Config/AppleIncRootCertificate.cer" /usr/share/txrecon/AppleIncRootCertificate.cer
install_file "$HERE/guest/start.sh" /txrecon/start.sh
install_file "$HERE/guest/stop.sh" /txrecon/stop.sh
log "backend on 127.0.0.1:$BACKEND_PORT (the guest's 10.0.2.2:$BACKEND_PORT); the guest's receiver on 127.0.0.1:$RECEIVER_PORT"

python3 "$HERE/poster.py" "$RECEIVER_PORT" "$T/acked.log" "$SAMPLES" "$SEED" "$CLIENTS" > "$T/poster.err" 2>&1 &
POSTER_PID=$!
export FWD="$RECEIVER_PORT:8081"

# boot_up: boots and waits until a body posted after the boot began is answered 200.
# Sets BOOT (its number). A guest that stalls before its disk is mounted (vm.sh exit 4:
# nothing of the disk, the daemon or the cut has run yet, so the stall is the
# emulator's) is booted once more, said in the log and counted in STALLED_BOOTS;
# a second stall in a row fails the run.
STALLED_BOOTS=0
boot_up() {
  local rc=0 before since deadline
  before=$(now_ms)
  "$VM" boot "$WORKDIR" > /dev/null || rc=$?
  BOOT=$(cat "$WORKDIR/run/boot.count")
  if [ "$rc" = 4 ]; then
    STALLED_BOOTS=$((STALLED_BOOTS + 1))
    log "boot $BOOT stalled before the guest mounted its disk (serial log $("$VM" log "$WORKDIR")); booting again"
    rc=0; "$VM" boot "$WORKDIR" > /dev/null || rc=$?
    BOOT=$(cat "$WORKDIR/run/boot.count")
  fi
  case $rc in
    0) ;;
    3) die "boot $BOOT: the guest's e2fsck after the journal replay found errors (see $("$VM" log "$WORKDIR"))" ;;
    *) die "boot $BOOT failed (vm.sh exit $rc)" ;;
  esac
  if [ "$VARIANT" = unsafe ] && ! grep -q "answers before fsync" "$("$VM" log "$WORKDIR")"; then
    "$VM" wait "$WORKDIR" "answers before fsync" 60 || die "boot $BOOT: the receiver is not the unsafe variant"
  fi
  deadline=$(( $(now_ms) + 180000 ))
  until [ "$(tail -n 1 "$T/acked.log" | sed -n 's/^{"t": \([0-9]*\),.*/\1/p')" -gt "$before" ] 2>/dev/null; do
    "$VM" pid "$WORKDIR" >/dev/null || die "boot $BOOT: qemu ended; see $("$VM" log "$WORKDIR")"
    if grep -q '^powercut: .*FAILED' "$("$VM" log "$WORKDIR")" || [ "$(now_ms)" -gt "$deadline" ]; then
      tail -n 30 "$("$VM" log "$WORKDIR")"; die "boot $BOOT: no post answered 200 within 180 s"
    fi
    sleep 0.2
  done
}

for cut in $(seq "$CUTS"); do
  boot_up
  delay=$(( DELAY_MIN + (RANDOM * 32768 + RANDOM) % (DELAY_MAX - DELAY_MIN + 1) ))
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  at=$(now_ms)
  "$VM" cut "$WORKDIR" 2>/dev/null
  echo "cut=$cut at_ms=$at done_ms=$(now_ms) delay_ms=$delay boot=$BOOT acked=$(count "$T/acked.log") delivered=$(count "$T/delivered.log")" >> "$T/cuts.log"
  log "cut $cut/$CUTS: boot $BOOT, $delay ms after its first 200; so far $(count "$T/acked.log") answered 200, $(count "$T/delivered.log") 2xx at the backend"
done

# The last boot: post a little longer, then stop posting and let the daemon drain.
boot_up
sleep 3
kill -TERM "$POSTER_PID"; wait "$POSTER_PID" || true; POSTER_PID=
echo healthy > "$T/backend.mode"
log "boot $BOOT: posting stopped ($(count "$T/acked.log") answered 200 in all); the backend no longer fails; draining"
drain_start=$(now_ms); last_change=$drain_start; last_count=-1
while :; do
  pending=$(python3 "$HERE/check.py" --pending "$T/acked.log" "$T/delivered.log" "$SAMPLES")
  if [ "$DESTINATIONS" = 2 ]; then
    pending=$(( pending + $(python3 "$HERE/check.py" --pending "$T/acked.log" "$T/delivered-second.log" "$SAMPLES") ))
  fi
  n=$(count "$T/delivered.log")
  [ "$n" = "$last_count" ] || { last_count=$n; last_change=$(now_ms); }
  [ "$pending" != 0 ] || { log "drained: every body answered 200 was delivered, $(( ($(now_ms) - drain_start) / 1000 )) s"; break; }
  if [ $(( $(now_ms) - last_change )) -gt $(( IDLE * 1000 )) ]; then
    log "no delivery for $IDLE s with $pending acknowledged bodies undelivered: the drain is over"; break
  fi
  if [ $(( $(now_ms) - drain_start )) -gt $(( DRAIN_TIMEOUT * 1000 )) ]; then
    log "$pending acknowledged bodies undelivered after $DRAIN_TIMEOUT s: the drain is over"; break
  fi
  sleep 1
done
sleep 2   # the moves into done/ that follow the last answers
"$VM" stop "$WORKDIR" 2>/dev/null || die "the guest did not stop cleanly; see $("$VM" log "$WORKDIR")"
grep '^powercut: \(status\|spool\|stopped\|boot [0-9]*: .* exited\)' "$("$VM" log "$WORKDIR")" | sed 's/^/  guest| /' || true
kill -TERM "$BACKEND_PID"; wait "$BACKEND_PID" || true; BACKEND_PID=
[ -z "$BACKEND2_PID" ] || { kill -TERM "$BACKEND2_PID"; wait "$BACKEND2_PID" || true; BACKEND2_PID=; }

result=0
if "$VM" fsck "$WORKDIR" > "$T/host-fsck.log" 2>&1; then
  log "PASS: the host's e2fsck -fn of the image after the clean stop: clean"
else
  log "FAIL: the host's e2fsck -fn of the image: see $T/host-fsck.log"; result=1
fi
"$VM" fetch "$WORKDIR" /var/spool/txrecon "$T/spool" 2>/dev/null
"$VM" fetch "$WORKDIR" /var/lib/txrecon "$T/state" 2>/dev/null
mount_opts=$(sed -n 's/^txrecon-vm: mounted \([^ ]*\) at.*/\1/p' "$("$VM" log "$WORKDIR")")
log "the guest's disk: ext4 mounted $mount_opts (the kernel's defaults), qemu cache=${DISK_CACHE:-none}; $(sed -n 's/^txrecon-vm: vda write cache: //p' "$("$VM" log "$WORKDIR")") cache as the guest sees it"
control=(); [ "$VARIANT" = safe ] || control=(--control)
python3 "$HERE/check.py" "$T/acked.log" "$T/delivered.log" "$SAMPLES" "$T/spool" "$T/cuts.log" "$WORKDIR/boots.log" \
  "${control[@]}" --ledger="$T/state/ledger.sqlite3" --ledger-destination=backend 2>&1 | tee "$T/check.log" || result=1
if [ "$DESTINATIONS" = 2 ]; then
  # The second destination's directories, as check.py reads a spool.
  view="$T/spool-second"; rm -rf "$view"; mkdir -p "$view"
  for d in new queue hold done; do ln -s "$T/spool/destinations/second/$d" "$view/$d"; done
  for d in rejected tmp; do ln -s "$T/spool/$d" "$view/$d"; done
  log "the checks again for the destination second (its own backend, destinations/second/):"
  python3 "$HERE/check.py" "$T/acked.log" "$T/delivered-second.log" "$SAMPLES" "$view" "$T/cuts.log" \
    "$WORKDIR/boots.log" "${control[@]}" --ledger="$T/state/ledger.sqlite3" --ledger-destination=second \
    2>&1 | tee "$T/check-second.log" || result=1
  inbox=$(ls -A "$T/spool/destinations/backend/new" 2>/dev/null | head -5)
  if [ -z "$inbox" ]; then
    log "PASS: destinations/backend/new/ (the first destination's inbox) is empty"
  else
    log "FAIL: destinations/backend/new/ holds $inbox"; result=1
  fi
fi
log "poster: $(cat "$T/acked.log.stats" 2>/dev/null); backend: $(cat "$T/delivered.log.stats" 2>/dev/null)"
[ "$DESTINATIONS" = 1 ] || log "second backend: $(cat "$T/delivered-second.log.stats" 2>/dev/null)"
log "$CUTS cuts, $BOOT boots ($STALLED_BOOTS stalled before the disk was mounted and booted again), seed $SEED, total $(( ($(now_ms) - START_MS) / 1000 )) s"
[ "$result" = 0 ] && log "power-cut test ($VARIANT): PASS" || log "power-cut test ($VARIANT): FAIL"
exit "$result"
