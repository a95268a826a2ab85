#!/bin/sh
# daemon-leak-check.sh BINARY: runs an AddressSanitizer-built txrecon on a
# throw-away spool against a loopback backend (Python stdlib), delivers and
# rejects a few files, reloads, stops it with SIGTERM, and fails when
# LeakSanitizer reports anything at its exit (exit status 23) or it does not
# exit 0. Part of `make sanitize`.
set -eu
binary=$1
work=$(mktemp -d /tmp/txrecon-leak.XXXXXX)
backend_pid=
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
    [ -n "$backend_pid" ] && kill "$backend_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/spool/tmp" "$work/spool/new"
cat > "$work/backend.py" <<'PY'
import http.server, sys
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *args): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
python3 "$work/backend.py" > "$work/port" &
backend_pid=$!
while [ ! -s "$work/port" ]; do sleep 0.1; done
printf '[Spool]\nDirectory=%s/spool\nLedgerFile=%s/ledger.sqlite3\n\n[Backend]\nURL=http://127.0.0.1:%s/leak\n\n[Verification]\nMode=none\nAcceptEnvelopes=yes\n' \
  "$work" "$work" "$(cat "$work/port")" > "$work/txrecon.conf"
ASAN_OPTIONS=detect_leaks=1 "$binary" run --config "$work/txrecon.conf" 2> "$work/daemon.log" &
daemon_pid=$!
sleep 2
for i in 1 2 3 4 5 6 7 8 9 10; do
    printf '{"id":"leak-%s","version":1,"payload":{}}' "$i" > "$work/spool/tmp/$i"
    mv "$work/spool/tmp/$i" "$work/spool/new/$i"
done
printf 'junk' > "$work/spool/tmp/junk" && mv "$work/spool/tmp/junk" "$work/spool/new/junk"
sleep 3
kill -HUP "$daemon_pid"
sleep 1
kill -TERM "$daemon_pid"
status=0
wait "$daemon_pid" || status=$?
daemon_pid=
delivered=$(ls "$work/spool/done" | wc -l)
if [ "$status" -ne 0 ] || grep -q "LeakSanitizer" "$work/daemon.log" || [ "$delivered" -ne 10 ]; then
    cat "$work/daemon.log"
    echo "daemon leak check: FAILED (exit $status, $delivered of 10 delivered)"
    exit 1
fi
echo "daemon leak check: no leak at exit, 10 of 10 delivered"
