#!/bin/bash
# demo.sh — `make demo`: the whole path as an operator runs it, on loopback
# and throw-away spools, in about ten seconds:
#
#   the example backend (Examples/backend/receiver.py)
#   per app, one installation (one BundleID= each): `txrecon run` (the daemon)
#     and `txrecon receive` (the HTTP receiver) on their own spool
#   Apple's notifications POSTed to the receiver, the app's uploads beside
#     them (a StoreKit 2 transaction; a StoreKit 1 receipt, for the second
#     app), a forged transaction refused, a producer's files dropped with
#     `txrecon submit`
#   what the daemons delivered, held and rejected, and what the backend stored
#
# Uses only what the repository holds: Apple's real Sandbox samples in
# Examples/samples/, a real StoreKit 1 receipt from the tests' fixtures, and
# Apple's two roots in Config/ (Apple Root CA - G3 for StoreKit 2, Apple Inc.
# Root Certificate for receipts). Everything it starts it ends again, by PID,
# also on failure; its files stay in a directory under /tmp, named at the end.
set -euo pipefail

BIN=${BIN:-.build/debug/txrecon}
REPO=$(cd "$(dirname "$0")/.." && pwd)
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
WORK=$(mktemp -d /tmp/txrecon-demo.XXXXXX)
SAMPLES=$REPO/Examples/samples
RECEIPT=$REPO/Tests/TxReconTests/Fixtures/receipts/sandbox-tpinappreceipt-1.receipt
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    echo "(demo files kept in $WORK)"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
fail() { echo "demo: $*" >&2; exit 1; }

# wait_for SECONDS DESCRIPTION COMMAND...: runs COMMAND every 0.1 s until it
# succeeds; fails the demo naming DESCRIPTION after SECONDS.
wait_for() {
    local seconds=$1 what=$2; shift 2
    local tries=$((seconds * 10))
    until "$@"; do
        tries=$((tries - 1))
        [ "$tries" -gt 0 ] || fail "$what did not happen within ${seconds}s (logs in $WORK)"
        sleep 0.1
    done
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# post APP PATH FILE [TOKEN]: what an HTTP client (Apple, the app) sends to
# APP's receiver: FILE as the body; prints the answer.
post() {
    python3 - "$(cat "$WORK/$1/port")" "$2" "$3" "${4:-}" <<'PY'
import sys, urllib.request, urllib.error
port, path, name, token = sys.argv[1:5]
body = open(name, "rb").read()
request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
if token:
    request.add_header("Authorization", "Bearer " + token)
try:
    with urllib.request.urlopen(request) as answer:
        status, text = answer.status, answer.read().decode()
except urllib.error.HTTPError as error:
    status, text = error.code, error.read().decode()
print(f"  POST {path} {name.rsplit('/', 1)[-1]} ({len(body)} bytes) -> {status} {text.strip()[:160]}")
PY
}

# install APP BUNDLE_ID: the configuration of one app's installation, as
# /etc/txrecon/txrecon.conf would hold it, then the daemon and the receiver.
install() {
    local app=$1 bundle=$2 dir=$WORK/$1
    mkdir -p "$dir"
    free_port > "$dir/port"
    python3 -c 'import secrets; print(secrets.token_hex(16))' > "$dir/upload-token"
    cat > "$dir/txrecon.conf" <<CONF
[Spool]
Directory=$dir/spool
LedgerFile=$dir/ledger.sqlite3

[Backend]
URL=http://127.0.0.1:$BACKEND_PORT/transactions
Timeout=5s

[Delivery]
RetryDelays=1s 2s 5s

# Apple's real Sandbox data of one app, verified against Apple's roots as
# the package installs them (/usr/share/txrecon/ there, Config/ here). The
# envelope sample carries no signature: taken only with AcceptEnvelopes=yes.
[Verification]
Mode=appstore
BundleID=$bundle
Environment=Sandbox
RootCertificateFile=$REPO/Config/AppleRootCA-G3.cer
ReceiptRootCertificateFile=$REPO/Config/AppleIncRootCertificate.cer
AcceptEnvelopes=yes

# What txrecon-receive.socket would bind, and the token the app's uploads carry.
[Receive]
Listen=127.0.0.1:$(cat "$dir/port")
UploadTokenFile=$dir/upload-token
CONF
    # Read by the daemon's user only, as secrets and configuration should be.
    chmod 0640 "$dir/txrecon.conf" "$dir/upload-token"

    say "$app: txrecon check-config"
    "$BIN" check-config --config "$dir/txrecon.conf"

    say "$app: starting the daemon (txrecon run) and the receiver (txrecon receive), logs in $dir/"
    "$BIN" run --config "$dir/txrecon.conf" 2> "$dir/daemon.log" &
    PIDS+=($!)
    wait_for 20 "the daemon of $app starting" grep -qs ' ready: ' "$dir/daemon.log"
    "$BIN" receive --config "$dir/txrecon.conf" 2> "$dir/receive.log" &
    PIDS+=($!)
    wait_for 20 "the receiver of $app starting" grep -qs 'receiving on' "$dir/receive.log"
    sed 's/^/  /' "$dir/daemon.log" "$dir/receive.log"
}

# settled APP: nothing of APP's waits to be tried or retried any more.
settled() {
    local spool=$WORK/$1/spool
    # Hidden names are temporaries, never an item.
    [ -z "$(ls "$spool/new")" ] && [ -z "$(ls "$spool/queue")" ]
}

# daemon_idle APP: APP's daemon says it has nothing in flight and its
# backend answered.
daemon_idle() {
    "$BIN" status --config "$WORK/$1/txrecon.conf" | grep -q '^daemon: .* 0 queued, 0 delivering, .*backend ok'
}

cd "$REPO"

say "starting the example backend (Examples/backend/receiver.py)"
python3 Examples/backend/receiver.py --listen 127.0.0.1:0 --db "$WORK/backend.sqlite3" 2> "$WORK/backend.log" &
PIDS+=($!)
wait_for 10 "the backend starting" grep -qs 'listening on' "$WORK/backend.log"
BACKEND_PORT=$(sed -n 's|.*listening on http://[0-9.]*:\([0-9]*\)/.*|\1|p' "$WORK/backend.log" | head -1)
echo "backend on http://127.0.0.1:$BACKEND_PORT/transactions"

install storekit2-app com.loki-project.loki-messenger
install storekit1-app dev.bonzer.weeka.app

say "Apple posts App Store Server Notifications V2 to storekit2-app's receiver"
post storekit2-app /appstore/notifications "$SAMPLES/03-notification-did-renew.json"
post storekit2-app /appstore/notifications "$SAMPLES/04-notification-refund.json"

say "storekit2-app uploads StoreKit 2 signed transactions with its upload token (a forgery, and one without the token, are refused: nothing written)"
post storekit2-app /appstore/transactions "$SAMPLES/02-transaction.jws" "$(cat "$WORK/storekit2-app/upload-token")"
post storekit2-app /appstore/transactions "$SAMPLES/08-forged-transaction.jws" "$(cat "$WORK/storekit2-app/upload-token")"
post storekit2-app /appstore/transactions "$SAMPLES/02-transaction.jws"
echo "  (the DID_RENEW notification above carried the same transaction: uploaded too, it is superseded, not sent twice)"
post storekit2-app /appstore/transactions "$SAMPLES/01-transaction.jws" "$(cat "$WORK/storekit2-app/upload-token")"

say "storekit1-app uploads its StoreKit 1 receipt with the order's context (one item per purchase, and the receipt once)"
python3 -c 'import json, sys; print(json.dumps({"receipt": open(sys.argv[1]).read().strip(), "orderID": "A-17"}))' \
    "$RECEIPT" > "$WORK/storekit1-app/receipt-upload.json"
post storekit1-app /appstore/transactions "$WORK/storekit1-app/receipt-upload.json" "$(cat "$WORK/storekit1-app/upload-token")"

say "another producer drops files into storekit2-app's spool with txrecon submit"
"$BIN" submit --config "$WORK/storekit2-app/txrecon.conf" "$SAMPLES/06-envelope.json" "$SAMPLES/07-broken.json"

for app in storekit2-app storekit1-app; do
    wait_for 30 "$app delivering everything" settled "$app"
    # The status file is rewritten at most once a second: wait for the one
    # that says so too.
    wait_for 10 "$app publishing its status" daemon_idle "$app"
done

for app in storekit2-app storekit1-app; do
    conf=$WORK/$app/txrecon.conf
    say "$app: what the daemon logged"
    sed -n '/ ready: /,$p' "$WORK/$app/daemon.log" | sed 's/^/  /'
    say "$app: txrecon status"
    "$BIN" status --config "$conf"
    say "$app: txrecon list done"
    "$BIN" list done --config "$conf"
    say "$app: txrecon list rejected"
    "$BIN" list rejected --config "$conf"
done

say "what the backend stored (GET /transactions), once each"
python3 - "$BACKEND_PORT" <<'PY'
import json, sys, urllib.request
rows = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/transactions"))
rows = rows.get("deliveries", rows) if isinstance(rows, dict) else rows
for row in rows:
    meaning = row.get("entitlement") or {}
    what = ", ".join(f"{name} {value}" for name, value in meaning.items() if name in
                     ("notificationType", "productId", "expiresDate", "revoked", "autoRenewStatus"))
    print(f"  {row['idempotencyKey']:<46} {row['kind']:<22} attempt {row['attempt']}  {what}")
PY
