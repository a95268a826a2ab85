#!/bin/bash
# demo.sh — `make demo`: the example backend on 127.0.0.1, the daemon on a
# throw-away spool, the sample transactions dropped in, and what happened to
# them. Everything it starts it ends again (by PID), also on failure.
set -euo pipefail

BIN=${BIN:-.build/debug/txrecon}
REPO=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/txrecon-demo.XXXXXX)
BACKEND_PID= DAEMON_PID=
cleanup() {
    [ -n "$DAEMON_PID" ] && kill -TERM "$DAEMON_PID" 2>/dev/null && wait "$DAEMON_PID" 2>/dev/null || true
    [ -n "$BACKEND_PID" ] && kill -TERM "$BACKEND_PID" 2>/dev/null && wait "$BACKEND_PID" 2>/dev/null || true
    echo "(demo files kept in $WORK)"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "starting the example backend (Examples/backend/receiver.py)"
python3 Examples/backend/receiver.py --listen 127.0.0.1:0 --db "$WORK/backend.sqlite3" 2> "$WORK/backend.log" &
BACKEND_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$WORK/backend.log" 2>/dev/null && break; sleep 0.05; done
PORT=$(sed -n 's|.*listening on http://[0-9.]*:\([0-9]*\)/.*|\1|p' "$WORK/backend.log" | head -1)
echo "backend on http://127.0.0.1:$PORT/transactions"

cat > "$WORK/txrecon.conf" <<CONF
[Spool]
Directory=$WORK/spool

[Backend]
URL=http://127.0.0.1:$PORT/transactions
Timeout=5s

[Delivery]
RetryDelays=1s 2s 5s

# The samples are real Sandbox data of one app, signed by Apple: each is
# verified against Apple Root CA - G3 at its signedDate. The envelope sample
# carries no signature and is taken only because AcceptEnvelopes=yes.
[Verification]
Mode=appstore
BundleID=com.loki-project.loki-messenger
Environment=Sandbox
RootCertificateFile=$REPO/Config/AppleRootCA-G3.cer
AcceptEnvelopes=yes
CONF
cat "$WORK/txrecon.conf"

say "txrecon check-config"
"$BIN" check-config --config "$WORK/txrecon.conf"

say "starting the daemon: txrecon run (log in $WORK/daemon.log)"
"$BIN" run --config "$WORK/txrecon.conf" 2> "$WORK/daemon.log" &
DAEMON_PID=$!
for _ in $(seq 100); do grep -q 'ready' "$WORK/daemon.log" 2>/dev/null && break; sleep 0.05; done

say "dropping the samples with txrecon submit"
"$BIN" submit --config "$WORK/txrecon.conf" Examples/samples/*

for _ in $(seq 100); do
    [ -z "$(ls -A "$WORK/spool/queue" 2>/dev/null)" ] && [ -z "$(ls -A "$WORK/spool/new" 2>/dev/null)" ] && break
    sleep 0.1
done

say "what the daemon logged"
cat "$WORK/daemon.log"

sleep 1.2   # STATUS and the status file are published at most once a second
say "txrecon status"
"$BIN" status --config "$WORK/txrecon.conf"

say "txrecon list done"
"$BIN" list done --config "$WORK/txrecon.conf"

say "txrecon list rejected"
"$BIN" list rejected --config "$WORK/txrecon.conf"

say "what the backend stored (GET /transactions)"
python3 - "$PORT" <<'PY'
import json, sys, urllib.request
rows = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/transactions"))
rows = rows.get("deliveries", rows) if isinstance(rows, dict) else rows
for row in rows:
    print({k: row[k] for k in row if k in ("idempotency_key", "id", "version", "kind", "attempt", "received_at")})
PY
