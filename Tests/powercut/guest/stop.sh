#!/bin/sh
# stop.sh - the power-cut test's clean stop in the guest, run by /txrecon/init on
# `vm.sh stop` (installed by Tests/powercut/run.sh as /txrecon/stop.sh).
#
# Prints the spool's counts (`txrecon status`, each line prefixed "powercut: status: "),
# then stops the receiver and the daemon with SIGTERM, as systemd would, and waits up
# to 25 s for both to exit. Reports "powercut: stopped: receiver exit R, daemon exit D"
# (the exit status when it could be seen, "gone" for a process that had already ended).
set -u
CONF=/etc/txrecon/txrecon.conf
txrecon status --config "$CONF" 2>&1 | sed 's/^/powercut: status: /'
for d in tmp new queue hold rejected; do
  echo "powercut: spool: $d $(ls -A /var/spool/txrecon/$d | wc -l)"
done
stop() { # stop NAME: SIGTERM to the PID in /run/NAME.pid; waits for it to end
  pid=$(cat "/run/$1.pid" 2>/dev/null) || { echo gone; return; }
  kill -TERM "$pid" 2>/dev/null || { echo gone; return; }
  i=0
  while kill -0 "$pid" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; do
    i=$((i + 1)); [ "$i" -le 250 ] || { echo "still running after 25 s"; return; }
    sleep 0.1
  done
  echo ended
}
r=$(stop receive)
d=$(stop daemon)
echo "powercut: stopped: receiver $r, daemon $d"
sleep 0.5   # for start.sh to report the exit statuses before init ends every process
