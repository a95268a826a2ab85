#!/bin/bash
# node-exporter-check.sh — does a real Prometheus node_exporter (Debian's
# prometheus-node-exporter) take txrecon's metrics file as written?
#
#   node-exporter-check.sh DIRECTORY ['SERIES VALUE'...]
#       Runs node_exporter on 127.0.0.1 (a free port) with only the textfile
#       collector, reading DIRECTORY, and scrapes /metrics once. Passes when
#       node_textfile_scrape_error is 0, txrecon.prom's mtime is exported,
#       every txrecon family keeps its TYPE, every sample in
#       DIRECTORY/txrecon.prom is exported with the same value, and each
#       'SERIES VALUE' given (e.g. 'txrecon_up 1') is too. Needs only bash,
#       curl, awk and node_exporter, so the real-systemd test can run it
#       inside its container against /var/lib/prometheus/node-exporter.
#
#   node-exporter-check.sh --daemon
#       `make metrics-check`: the example backend and the built daemon ($BIN,
#       default .build/debug/txrecon) on a throw-away spool with
#       [Metrics] TextfileDirectory=, the samples submitted, then the check
#       above while the daemon runs and again after it stopped (txrecon_up 0).
#
# Environment: NODE_EXPORTER (default prometheus-node-exporter, then
# node_exporter, on PATH). Everything started is ended again by PID.
# Exit status 0 when every check passed, 1 otherwise; what failed is printed.
set -euo pipefail

NODE_EXPORTER=${NODE_EXPORTER:-$(command -v prometheus-node-exporter || command -v node_exporter || true)}
EXPORTER_PID=
STARTED_PIDS=()
WORK=
PASSED=no

cleanup() {
    local pid
    for pid in $EXPORTER_PID "${STARTED_PIDS[@]}"; do
        kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    done
    EXPORTER_PID=
    STARTED_PIDS=()
    if [ -n "$WORK" ] && [ "$PASSED" = yes ]; then rm -rf "$WORK"; elif [ -n "$WORK" ]; then echo "(files kept in $WORK)" >&2; fi
}
trap cleanup EXIT

fail() { echo "node-exporter-check: FAIL: $*" >&2; exit 1; }
note() { echo "node-exporter-check: $*"; }

# Starts node_exporter on a free loopback port reading $1; sets PORT.
# A random port may be taken: then node_exporter exits and another is tried.
start_node_exporter() {
    local directory=$1 log=$2 attempt
    [ -x "$NODE_EXPORTER" ] || fail "no node_exporter found; install it with" \
        "apt-get install --no-install-recommends prometheus-node-exporter, or set NODE_EXPORTER"
    for attempt in 1 2 3 4 5; do
        PORT=$((20000 + RANDOM % 40000))
        "$NODE_EXPORTER" --web.listen-address="127.0.0.1:$PORT" --web.disable-exporter-metrics \
            --collector.disable-defaults --collector.textfile --collector.textfile.directory="$directory" \
            > "$log" 2>&1 &
        EXPORTER_PID=$!
        for _ in $(seq 100); do
            kill -0 "$EXPORTER_PID" 2>/dev/null || break
            if curl -fsS -o /dev/null "http://127.0.0.1:$PORT/metrics" 2>/dev/null; then return 0; fi
            sleep 0.1
        done
        kill -TERM "$EXPORTER_PID" 2>/dev/null && wait "$EXPORTER_PID" 2>/dev/null || true
        EXPORTER_PID=
        note "node_exporter did not come up on port $PORT (attempt $attempt):"; tail -3 "$log" >&2 || true
    done
    fail "node_exporter would not start; its last output is above"
}

# Prints "SERIES VALUE" for every sample line of a text-format file, values
# as numbers, so 1800000000.25 and 1.80000000025e+09 compare equal.
samples() {
    awk '!/^#/ && NF { i = match($0, / [^ ]+$/); printf "%s %.17g\n", substr($0, 1, i - 1), substr($0, i + 1) }' "$1"
}

# The check itself, on DIRECTORY with optional expected 'SERIES VALUE' lines.
check_directory() {
    local directory=$1; shift
    local file=$directory/txrecon.prom scratch attempt series value line failures=0
    [ -r "$file" ] || fail "$file does not exist or is not readable"
    scratch=$(mktemp -d /tmp/txrecon-node-exporter.XXXXXX)
    start_node_exporter "$directory" "$scratch/node_exporter.log"
    note "node_exporter $("$NODE_EXPORTER" --version 2>&1 | awk 'NR == 1 { print $3 }') on 127.0.0.1:$PORT reading $directory"
    # A running daemon may rewrite the file meanwhile: scrape until the file
    # is the same before and after one scrape.
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        cp "$file" "$scratch/before.prom"
        curl -fsS "http://127.0.0.1:$PORT/metrics" > "$scratch/scrape.txt"
        cmp -s "$file" "$scratch/before.prom" && break
        [ "$attempt" -lt 10 ] || fail "$file kept changing during every scrape"
        sleep 1
    done
    kill -TERM "$EXPORTER_PID" 2>/dev/null && wait "$EXPORTER_PID" 2>/dev/null || true
    EXPORTER_PID=

    samples "$scratch/scrape.txt" > "$scratch/scraped.txt"
    grep -qx 'node_textfile_scrape_error 0' "$scratch/scraped.txt" \
        || { grep '^node_textfile' "$scratch/scrape.txt" >&2 || true; tail -5 "$scratch/node_exporter.log" >&2
             fail "node_textfile_scrape_error is not 0: node_exporter refused $file"; }
    grep -q '^node_textfile_mtime_seconds{file=".*txrecon.prom"}' "$scratch/scraped.txt" \
        || fail "no node_textfile_mtime_seconds for txrecon.prom"
    while read -r line; do
        grep -qxF "$line" "$scratch/scrape.txt" || { echo "  missing: $line" >&2; failures=$((failures + 1)); }
    done < <(grep '^# TYPE txrecon_' "$scratch/before.prom")
    while read -r line; do
        grep -qxF "$line" "$scratch/scraped.txt" || { echo "  not exported as written: $line" >&2; failures=$((failures + 1)); }
    done < <(samples "$scratch/before.prom")
    for line in "$@"; do
        series=${line% *} value=${line##* }
        grep -qxF "$series $(awk -v v="$value" 'BEGIN { printf "%.17g", v }')" "$scratch/scraped.txt" \
            || { echo "  expected: $line; exported: $(grep -F "$series " "$scratch/scraped.txt" || echo none)" >&2
                 failures=$((failures + 1)); }
    done
    for series in txrecon_up txrecon_start_time_seconds 'txrecon_spool_items{directory="queue"}' \
                  'txrecon_deliveries_total{outcome="delivered"}' 'txrecon_attempt_duration_seconds_bucket{le="+Inf"}' \
                  txrecon_attempt_duration_seconds_sum txrecon_attempt_duration_seconds_count \
                  txrecon_backend_consecutive_failures; do
        grep -qF "$series " "$scratch/scraped.txt" || { echo "  not exported: $series" >&2; failures=$((failures + 1)); }
    done
    [ "$failures" -eq 0 ] || { echo "  (scrape kept in $scratch)" >&2; fail "$failures problem(s) with $file"; }
    note "ok: $(grep -c '^txrecon_' "$scratch/scrape.txt") txrecon samples exported as written, node_textfile_scrape_error 0"
    rm -rf "$scratch"
}

# `make metrics-check`: a real daemon writes the file first.
run_with_daemon() {
    local bin=${BIN:-.build/debug/txrecon} port backend_pid daemon_pid
    [ -x "$bin" ] || fail "$bin is not built; run swift build (or set BIN)"
    WORK=$(mktemp -d /tmp/txrecon-metrics-check.XXXXXX)
    mkdir "$WORK/textfile"
    python3 Examples/backend/receiver.py --listen 127.0.0.1:0 --db "$WORK/backend.sqlite3" 2> "$WORK/backend.log" &
    backend_pid=$!
    STARTED_PIDS+=("$backend_pid")
    for _ in $(seq 100); do grep -q 'listening on' "$WORK/backend.log" 2>/dev/null && break; sleep 0.05; done
    port=$(sed -n 's|.*listening on http://[0-9.]*:\([0-9]*\)/.*|\1|p' "$WORK/backend.log" | head -1)
    [ -n "$port" ] || fail "the example backend did not start: $(cat "$WORK/backend.log")"
    cat > "$WORK/txrecon.conf" <<CONF
[Spool]
Directory=$WORK/spool
LedgerFile=$WORK/state/ledger.sqlite3
[Backend]
URL=http://127.0.0.1:$port/transactions
[Verification]
BundleID=com.loki-project.loki-messenger
Environment=Sandbox
RootCertificateFile=$PWD/Config/AppleRootCA-G3.cer
AcceptEnvelopes=yes
[Metrics]
TextfileDirectory=$WORK/textfile
CONF
    "$bin" run --config "$WORK/txrecon.conf" 2> "$WORK/daemon.log" &
    daemon_pid=$!
    STARTED_PIDS+=("$daemon_pid")
    for _ in $(seq 200); do grep -q 'ready' "$WORK/daemon.log" 2>/dev/null && break; sleep 0.05; done
    "$bin" submit --config "$WORK/txrecon.conf" Examples/samples/* > /dev/null
    for _ in $(seq 200); do
        [ -z "$(ls -A "$WORK/spool/new")" ] && [ -z "$(ls -A "$WORK/spool/queue")" ] && break
        sleep 0.1
    done
    [ -z "$(ls -A "$WORK/spool/queue")" ] || fail "the samples were not delivered: $(cat "$WORK/daemon.log")"
    # Rewrites are coalesced (one per 5 s): wait for the one with the end state.
    for _ in $(seq 100); do
        grep -qxF 'txrecon_deliveries_total{outcome="rejected"} 2' "$WORK/textfile/txrecon.prom" \
            && grep -qxF 'txrecon_spool_items{directory="queue"} 0' "$WORK/textfile/txrecon.prom" && break
        sleep 0.1
    done

    note "while the daemon runs:"
    check_directory "$WORK/textfile" 'txrecon_up 1' 'txrecon_spool_items{directory="queue"} 0' \
        'txrecon_deliveries_total{outcome="rejected"} 2'
    kill -TERM "$daemon_pid"
    wait "$daemon_pid" || fail "the daemon did not stop cleanly: $(tail -5 "$WORK/daemon.log")"
    note "after the daemon stopped:"
    check_directory "$WORK/textfile" 'txrecon_up 0'
    PASSED=yes
}

case "${1:-}" in
    --daemon) run_with_daemon ;;
    ""|-h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; [ -n "${1:-}" ] ;;
    *) check_directory "$@" ;;
esac
