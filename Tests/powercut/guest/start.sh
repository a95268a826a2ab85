#!/bin/sh
# start.sh - the power-cut test's guest side, run by /txrecon/init at every boot as
# /txrecon/start.sh (installed by Tests/powercut/run.sh).
#
# Starts the two programs under test on the guest's own disk, as a server runs them
# (but as root and without systemd, whose boot under software emulation would take
# longer than the test): the delivery daemon `txrecon run` and the HTTP receiver
# `txrecon receive` (Listen=0.0.0.0:8081, forwarded to a port on the host's
# 127.0.0.1), both with /etc/txrecon/txrecon.conf, the spool /var/spool/txrecon on the
# disk's ext4. At the first boot it creates the spool's directories and syncs them
# before anything is posted.
#
# Reports on the console (the serial log), every line of its own starting "powercut: ":
#   "powercut: boot N: spool made"            (first boot only)
#   "powercut: boot N: daemon pid P, receiver pid Q"
#   "powercut: boot N: receiver answers"      once GET /healthz answered 200 in the guest
#   "powercut: boot N: receiver exited S", "... daemon exited S"   after a clean stop
# The daemon's log lines follow prefixed "daemon: ", the receiver's "receive: ".
set -u
SPOOL=/var/spool/txrecon
CONF=/etc/txrecon/txrecon.conf
boot=${TXRECON_BOOT:-?}

if [ ! -e "$SPOOL/.powercut-made" ]; then
  mkdir -p "$SPOOL"
  for d in tmp new queue hold rejected done ctl; do mkdir -p "$SPOOL/$d"; done
  : > "$SPOOL/.powercut-made"
  sync
  echo "powercut: boot $boot: spool made"
fi

# Each program's stderr through sed for its prefix; the PIDs are the programs', not sed's.
mkfifo /run/daemon.log /run/receive.log
sed -u 's/^/daemon: /' < /run/daemon.log &
sed -u 's/^/receive: /' < /run/receive.log &
txrecon run --config "$CONF" > /run/daemon.log 2>&1 &
daemon=$!
txrecon receive --config "$CONF" > /run/receive.log 2>&1 &
receiver=$!
echo "$daemon" > /run/daemon.pid
echo "$receiver" > /run/receive.pid
echo "powercut: boot $boot: daemon pid $daemon, receiver pid $receiver"

i=0
until wget -q -O /dev/null http://127.0.0.1:8081/healthz 2>/dev/null; do
  i=$((i + 1))
  if [ "$i" -gt 600 ] || ! kill -0 "$receiver" 2>/dev/null; then
    echo "powercut: boot $boot: FAILED: the receiver does not answer"; exit 1
  fi
  sleep 0.1
done
echo "powercut: boot $boot: receiver answers"
wait "$receiver"; echo "powercut: boot $boot: receiver exited $?"
wait "$daemon"; echo "powercut: boot $boot: daemon exited $?"
