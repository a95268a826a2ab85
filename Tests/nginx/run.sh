#!/bin/bash
# run.sh - docs/receive.md's nginx snippet, run for real in front of `txrecon receive`.
#
# Proves that the reverse-proxy snippet docs/receive.md shows (between the lines
#   <!-- nginx-snippet: begin --> and <!-- nginx-snippet: end -->, read from
#   docs/receive.md itself, fence lines dropped) does what that page says: TLS 1.2
#   and 1.3 only, Apple's notification passed through to the receiver and
#   answered 200 only once it is in new/, the receiver's refusals (422 for a
#   forgery) passed through unchanged, bodies over 8 MiB refused by nginx
#   itself (413) without reaching the receiver while one of exactly 8 MiB (the
#   receiver's MaxFileSize=) reaches it, /healthz and /appstore/transactions
#   proxied, and nothing outside the snippet's locations proxied (nginx's own
#   404). And the daemon's HTTPVersion= (man txrecon.conf) against nginx as a
#   backend, in server blocks of the test's own beside the snippet: with
#   HTTPVersion=2 every delivery arrives as HTTP/2, multiplexed over one
#   connection, over https:// (ALPN) and over http:// (h2c, prior knowledge;
#   refused at check-config where libcurl is older than 7.89, whose reuse of
#   such a connection fails, curl issue 10634); with 1.1 as HTTP/1.1. Negative controls: SNIPPET_FILE= with client_max_body_size 16m fails
#   the 413 check; with ssl_protocols TLSv1.1 (and SECLEVEL=0) the TLS 1.1 one.
#
# The snippet is changed in three places only, each of which must be found:
#   `listen 443` -> `listen 127.0.0.1:PORT` (a free port), the ssl_certificate
#   and ssl_certificate_key paths -> the test's throw-away certificate, and
#   `127.0.0.1:8081` -> the test receiver's port. It is wrapped in a minimal
#   nginx.conf (workers as nobody:nogroup, pid, logs and temp paths in WORK)
#   that includes nothing else, checked with `nginx -t`, then run with
#   `-p WORK/nginx -c nginx.conf`.
#
# nginx is never installed on the host (Debian's postinst would start a
#   service on port 80): in bookworm /usr/sbin/nginx is in the package `nginx`
#   (nginx-light is only a metapackage: nginx plus libnginx-mod-http-echo; the
#   snippet needs only the built-in ssl and proxy modules, and nginx-common
#   only ships /etc/nginx, which the test does not use). It is fetched with
#   `apt-get download` (`apt-get update` only if that fails) into CACHE and
#   unpacked there with `dpkg -x`; a shared library `ldd` cannot resolve on the
#   host is fetched from nginx's Depends: the same way, and nginx alone runs
#   with LD_LIBRARY_PATH pointing there.
#
# The receiver: WORK's spool is created by `txrecon run` (started until
#   "ready", then stopped: the receiver creates only receive/), then
#   `txrecon receive --config WORK/txrecon.conf` listens on 127.0.0.1:RPORT,
#   verifying under Config/'s Apple roots (the sample is real Sandbox data).
#
# Needs root (nginx's workers switch to nobody), curl, openssl, python3,
#   apt-get reaching Debian on the first run (the cache is reused after), and
#   the debug binary .build/debug/txrecon (when it is missing: waits for a
#   swift build already running, else runs `swift build --product txrecon`).
# Usage: Tests/nginx/run.sh            prints PASS/FAIL per check and a summary line;
#   exit 0 = every check passed, 1 = a check failed, 2 = the test could not run (setup)
#   env: SNIPPET_FILE=file to test another snippet instead of docs/receive.md's (the
#          file holds the snippet itself: no markers, no fence),
#        BINARY=path (default .build/debug/txrecon), WORK=dir (default: mktemp -d),
#        KEEP=1 (keep WORK), CACHE=dir for nginx (default /var/cache/txrecon-nginx-test),
#        START_TIMEOUT=seconds to wait for each server (default 30)
set -Eeuo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
SNIPPET_DOC="$ROOT/docs/receive.md"
SNIPPET_FILE="${SNIPPET_FILE:-}"
BINARY="${BINARY:-$ROOT/.build/debug/txrecon}"
WORK="${WORK:-$(mktemp -d /tmp/txrecon-nginx-test.XXXXXX)}"
CACHE="${CACHE:-/var/cache/txrecon-nginx-test}"
START_TIMEOUT="${START_TIMEOUT:-30}"
SAMPLE="$ROOT/Examples/samples/04-notification-refund.json"
HOST=notifications.example.com
NGINX= NGINX_LD_PATH= NGINX_PID= RECEIVER_PID= DAEMON_PID= FAILS=0 CHECKS=0
STARTED_MS=$(( $(date +%s%N) / 1000000 ))

log()  { printf '[%(%H:%M:%S)T] %s\n' -1 "$*"; }
die()  { log "ERROR: $*"; exit 2; }
pass() { CHECKS=$((CHECKS + 1)); log "PASS: $*"; }
fail() { CHECKS=$((CHECKS + 1)); FAILS=$((FAILS + 1)); log "FAIL: $*"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# wait_until SECONDS COMMAND...: polls every 0.1 s until the command succeeds.
wait_until() {
  local deadline=$(( $(now_ms) + $1 * 1000 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(now_ms)" -lt "$deadline" ] || return 1; sleep 0.1; done
}
# stop PID NAME: SIGTERM, up to 10 s, then SIGKILL; only the process this script started.
stop() {
  local pid=$1 name=$2
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  wait_until 10 eval "! kill -0 $pid" || { log "$name ($pid) ignored SIGTERM: SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; }
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  stop "$NGINX_PID" nginx
  stop "$RECEIVER_PID" "txrecon receive"
  stop "$DAEMON_PID" "txrecon run"
  if [ "${KEEP:-}" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'rc=$?; log "ERROR: line $LINENO: a command failed (status $rc)"; exit 2' ERR
[ "$(id -u)" = 0 ] || die "needs root (nginx's master switches its workers to nobody)"
for tool in curl openssl python3 apt-get dpkg ldd runuser flock; do command -v "$tool" >/dev/null || die "needs $tool"; done
mkdir -p "$WORK"; chmod 0711 "$WORK"   # nginx's workers (nobody) reach their temp dirs below
log "work directory $WORK"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# ---------------------------------------------------------------- nginx from Debian, unpacked
# fetch_deb NAME: the .deb of package NAME in CACHE/debs (downloaded once; apt-get update if needed).
fetch_deb() {
  local name=$1 deb
  deb=$(ls "$CACHE/debs/${name}"_*.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then
    log "downloading Debian's package $name into $CACHE/debs" >&2
    if ! (cd "$CACHE/debs" && apt-get download -q "$name" >"$WORK/apt.log" 2>&1); then
      log "apt-get download $name failed; apt-get update, then again" >&2
      apt-get update -q >>"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log" >&2; die "apt-get update failed"; }
      (cd "$CACHE/debs" && apt-get download -q "$name" >>"$WORK/apt.log" 2>&1) \
        || { cat "$WORK/apt.log" >&2; die "apt-get download $name failed"; }
    fi
    deb=$(ls "$CACHE/debs/${name}"_*.deb | head -1)
  fi
  echo "$deb"
}
# unpack NAME: dpkg -x the package into CACHE/root, once per .deb.
unpack() {
  local deb; deb=$(fetch_deb "$1")
  if ! grep -qxF "$(basename "$deb")" "$CACHE/root/.unpacked" 2>/dev/null; then
    dpkg -x "$deb" "$CACHE/root"
    basename "$deb" >> "$CACHE/root/.unpacked"
  fi
}
prepare_nginx() {
  mkdir -p "$CACHE/debs" "$CACHE/root"
  exec 9>"$CACHE/lock"; flock 9          # two runs at once share one cache
  unpack nginx
  NGINX="$CACHE/root/usr/sbin/nginx"
  [ -x "$NGINX" ] || die "the package nginx holds no usr/sbin/nginx"
  local libdirs="$CACHE/root/usr/lib/x86_64-linux-gnu:$CACHE/root/lib/x86_64-linux-gnu" missing pkg
  missing=$(ldd "$NGINX" | awk '/not found/ {print $1}')
  if [ -n "$missing" ]; then
    log "libraries the host lacks: $(echo $missing); fetching nginx's library dependencies"
    # Its Depends: that are libraries (libc6 ... zlib1g) and not installed on the host.
    for pkg in $(dpkg-deb -f "$(fetch_deb nginx)" Depends | tr ',|' '\n\n' | awk '{print $1}' | grep -E '^(lib|zlib)' | sort -u); do
      dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || unpack "$pkg"
    done
    NGINX_LD_PATH="$libdirs"       # for nginx alone: curl, openssl and txrecon keep the host's
    missing=$(LD_LIBRARY_PATH="$NGINX_LD_PATH" ldd "$NGINX" | awk '/not found/ {print $1}')
    [ -z "$missing" ] || die "still missing after fetching nginx's dependencies: $(echo $missing)"
  fi
  flock -u 9; exec 9>&-
  log "nginx: $NGINX ($(LD_LIBRARY_PATH="$NGINX_LD_PATH" "$NGINX" -v 2>&1 | sed 's/^nginx version: //'))"
  case "$(LD_LIBRARY_PATH="$NGINX_LD_PATH" "$NGINX" -V 2>&1)" in
    *--with-http_ssl_module*) ;;
    *) die "this nginx has no ssl module" ;;
  esac
}

# ---------------------------------------------------------------- the throw-away CA and certificate
make_certificates() {
  local d="$WORK/pki"; mkdir -p "$d"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=txrecon nginx test CA" -keyout "$d/ca.key" -out "$d/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>>"$WORK/openssl.log"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -subj "/CN=$HOST" -keyout "$d/server.key" -out "$d/server.csr" 2>>"$WORK/openssl.log"
  printf '%s\n' "subjectAltName=DNS:$HOST,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" > "$d/server.ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 2 -extfile "$d/server.ext" -out "$d/server.pem" 2>>"$WORK/openssl.log"
  openssl verify -CAfile "$d/ca.pem" "$d/server.pem" >/dev/null || die "the test certificate does not verify"
  CA="$d/ca.pem"
}

# ---------------------------------------------------------------- the snippet and nginx.conf
# The snippet from docs/receive.md: the lines between the markers, without the ``` fence lines.
readme_snippet() {
  local begins ends
  begins=$(grep -c -x '<!-- nginx-snippet: begin -->' "$SNIPPET_DOC" || true)
  ends=$(grep -c -x '<!-- nginx-snippet: end -->' "$SNIPPET_DOC" || true)
  [ "$begins" = 1 ] && [ "$ends" = 1 ] || die "docs/receive.md must have each nginx-snippet marker once (begin: $begins, end: $ends)"
  awk '/^<!-- nginx-snippet: begin -->$/ {on=1; next} /^<!-- nginx-snippet: end -->$/ {on=0} on && !/^```/' "$SNIPPET_DOC"
}
# substitute FROM-REGEX TO WHAT: sed -E on WORK/snippet.conf; the pattern must match.
substitute() {
  grep -Eq "$1" "$WORK/snippet.conf" || die "the snippet has no $3 to replace (no match for /$1/)"
  sed -E -i "s#$1#$2#g" "$WORK/snippet.conf"
}
write_nginx_conf() {
  if [ -n "$SNIPPET_FILE" ]; then
    [ -f "$SNIPPET_FILE" ] || die "SNIPPET_FILE=$SNIPPET_FILE: no such file"
    log "snippet: $SNIPPET_FILE (SNIPPET_FILE), not docs/receive.md's"
    cp "$SNIPPET_FILE" "$WORK/snippet.readme"
  else
    readme_snippet > "$WORK/snippet.readme"
  fi
  grep -q '[^[:space:]]' "$WORK/snippet.readme" || die "the snippet is empty"
  cp "$WORK/snippet.readme" "$WORK/snippet.conf"
  substitute 'listen[[:space:]]+443([[:space:];])' "listen 127.0.0.1:$PORT\\1" "listen 443"
  substitute '^([[:space:]]*ssl_certificate)[[:space:]]+[^;]+;' "\\1 $WORK/pki/server.pem;" "ssl_certificate"
  substitute '^([[:space:]]*ssl_certificate_key)[[:space:]]+[^;]+;' "\\1 $WORK/pki/server.key;" "ssl_certificate_key"
  substitute '127\.0\.0\.1:8081([^0-9]|$)' "127.0.0.1:$RPORT\\1" "127.0.0.1:8081"
  # No listen may be left as it was: the test would bind the host's real ports.
  if grep -E '^[[:space:]]*listen[[:space:]]' "$WORK/snippet.conf" | grep -vq "listen 127.0.0.1:$PORT[[:space:];]"; then
    die "the snippet has a listen the test cannot rewrite: $(grep -E '^[[:space:]]*listen' "$WORK/snippet.conf" | tr -s ' ' | tr '\n' ' ')"
  fi
  log "the snippet's changes for the test:"
  diff "$WORK/snippet.readme" "$WORK/snippet.conf" | sed 's/^/    /' || true
  local n="$WORK/nginx"; mkdir -p "$n/temp"
  for t in body proxy fastcgi uwsgi scgi; do mkdir -p "$n/temp/$t"; done
  chown -R nobody:nogroup "$n/temp"
  runuser -u nobody -g nogroup -- test -w "$n/temp/body" \
    || die "nginx's workers (nobody) cannot reach $n/temp: is a directory above WORK closed to others?"
  {
    cat <<EOF
# nginx.conf for Tests/nginx/run.sh: nothing but docs/receive.md's snippet (rewritten as shown above).
daemon off;
master_process on;
worker_processes 1;
user nobody nogroup;
pid $n/nginx.pid;
error_log $n/error.log info;
events { worker_connections 64; }
http {
    access_log $n/access.log;
    client_body_temp_path $n/temp/body;
    proxy_temp_path $n/temp/proxy;
    fastcgi_temp_path $n/temp/fastcgi;
    uwsgi_temp_path $n/temp/uwsgi;
    scgi_temp_path $n/temp/scgi;

# ---- the snippet
EOF
    cat "$WORK/snippet.conf"
    echo "# ---- end of the snippet"
    cat <<EOF
# ---- backends for the daemon's HTTP/2 deliveries (the test's own, not the snippet's).
# Each reads the whole request body before it answers, as a backend does, by passing the
# request on to a server that answers 204 (an answer before the body would reset the stream).
    log_format delivery '\$server_protocol \$connection \$http_idempotency_key';
    server {
        listen 127.0.0.1:$H2PORT ssl http2;
        ssl_certificate $WORK/pki/server.pem;
        ssl_certificate_key $WORK/pki/server.key;
        access_log $n/delivery.log delivery;
        location / { proxy_pass http://127.0.0.1:$ANSWERPORT; }
    }
    server {
        listen 127.0.0.1:$H2CPORT http2;
        access_log $n/delivery.log delivery;
        location / { proxy_pass http://127.0.0.1:$ANSWERPORT; }
    }
    server {
        listen 127.0.0.1:$ANSWERPORT;
        access_log off;
        location / { return 204; }
    }
EOF
    echo "}"
  } > "$n/nginx.conf"
}

# ---------------------------------------------------------------- the receiver
ensure_binary() {
  if [ ! -x "$BINARY" ]; then
    if pgrep -f swift-build >/dev/null; then
      log "$BINARY is missing and a swift build is running: waiting for it (up to 20 min)"
      wait_until 1200 eval '! pgrep -f swift-build' || die "the running swift build did not finish"
    fi
    if [ ! -x "$BINARY" ]; then
      log "building txrecon (swift build --product txrecon)"
      (cd "$ROOT" && swift build --product txrecon) || die "swift build failed"
    fi
  fi
  [ -x "$BINARY" ] || die "no binary at $BINARY"
}
write_receiver_conf() {
  cat > "$WORK/txrecon.conf" <<EOF
[Spool]
Directory=$WORK/spool
LedgerFile=$WORK/state/ledger.sqlite3

[Backend]
URL=http://127.0.0.1:9/unused

[Verification]
BundleID=com.loki-project.loki-messenger
Environment=Sandbox
RootCertificateFile=$ROOT/Config/AppleRootCA-G3.cer
ReceiptRootCertificateFile=$ROOT/Config/AppleIncRootCertificate.cer

[Receive]
Listen=127.0.0.1:$RPORT
EOF
}
# The receiver creates only receive/: the daemon creates the spool at start. Started until ready, then stopped.
create_spool() {
  "$BINARY" run --config "$WORK/txrecon.conf" 2> "$WORK/daemon.log" &
  DAEMON_PID=$!
  wait_until "$START_TIMEOUT" grep -q ' ready: ' "$WORK/daemon.log" || { cat "$WORK/daemon.log" >&2; die "txrecon run did not get ready"; }
  stop "$DAEMON_PID" "txrecon run"; DAEMON_PID=
  [ -d "$WORK/spool/new" ] && [ -d "$WORK/spool/tmp" ] || die "txrecon run created no spool"
}
start_receiver() {
  "$BINARY" receive --config "$WORK/txrecon.conf" 2> "$WORK/receive.log" &
  RECEIVER_PID=$!
  wait_until "$START_TIMEOUT" curl -sf -o /dev/null "http://127.0.0.1:$RPORT/healthz" \
    || { cat "$WORK/receive.log" >&2; die "txrecon receive does not answer /healthz on 127.0.0.1:$RPORT"; }
  log "txrecon receive ($RECEIVER_PID) on 127.0.0.1:$RPORT"
}
start_nginx() {
  local n="$WORK/nginx"
  LD_LIBRARY_PATH="$NGINX_LD_PATH" "$NGINX" -t -p "$n" -e "$n/error.log" -c nginx.conf > "$WORK/nginx-t.log" 2>&1 \
    || { cat "$WORK/nginx-t.log" >&2; die "nginx -t refuses the configuration ($n/nginx.conf)"; }
  log "nginx -t: $(grep -o 'test is successful' "$WORK/nginx-t.log" || cat "$WORK/nginx-t.log")"
  LD_LIBRARY_PATH="$NGINX_LD_PATH" "$NGINX" -p "$n" -e "$n/error.log" -c nginx.conf > "$WORK/nginx.out" 2>&1 &
  NGINX_PID=$!
  wait_until "$START_TIMEOUT" curl -s -o /dev/null --cacert "$CA" --resolve "$HOST:$PORT:127.0.0.1" "https://$HOST:$PORT/" \
    || { cat "$n/error.log" "$WORK/nginx.out" >&2; die "nginx does not answer on 127.0.0.1:$PORT"; }
  log "nginx ($NGINX_PID) on 127.0.0.1:$PORT"
}

# ---------------------------------------------------------------- the checks
# through [CURL-OPTIONS...] PATH: curl through the proxy; body in WORK/body, headers in
#   WORK/headers, curl's -v in WORK/curl.err; prints the status code ("000" when it failed).
through() {
  local path=${*: -1}; set -- "${@:1:$#-1}"
  curl -sS -v -o "$WORK/body" -D "$WORK/headers" -w '%{http_code}' --max-time 20 \
    --cacert "$CA" --resolve "$HOST:$PORT:127.0.0.1" "$@" "https://$HOST:$PORT$path" 2> "$WORK/curl.err" || true
}
inbox() { ls -A "$WORK/spool/new" | sort; }
# receiver_answered PATH: how many answers for PATH the receiver logged (it logs every answer but
#   a plain 200). First a barrier: a request straight to the receiver, waited for in its log.
BARRIERS=0
receiver_answered() {
  BARRIERS=$((BARRIERS + 1))
  curl -s -o /dev/null --max-time 10 "http://127.0.0.1:$RPORT/test-barrier-$BARRIERS" || true
  wait_until 10 grep -q "TXRECON_PATH=/test-barrier-$BARRIERS\$" "$WORK/receive.log" || die "the receiver did not log the barrier request"
  grep -c "TXRECON_PATH=$1\$" "$WORK/receive.log" || true
}
show_answer() { log "    answered $1: $(head -c 300 "$WORK/body" | tr -d '\n')"; }

check_notification() {
  local before code name
  before=$(inbox)
  code=$(through --data-binary @"$SAMPLE" -H 'Content-Type: application/json' /appstore/notifications)
  name=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["spooled"])' "$WORK/body" 2>/dev/null || true)
  if [ "$code" = 200 ] && [ -n "$name" ] && [ -f "$WORK/spool/new/$name" ] && cmp -s "$SAMPLE" "$WORK/spool/new/$name" \
     && [ "$(comm -13 <(echo "$before") <(inbox))" = "$name" ]; then
    pass "Apple's notification through the proxy: 200 {\"spooled\": \"$name\"}, new/$name holds the body byte for byte"
  else
    fail "Apple's notification through the proxy: expected 200 with {\"spooled\": NAME} and new/NAME"; show_answer "$code"
  fi
}
check_healthz() {
  local code; code=$(through /healthz)
  if [ "$code" = 200 ] && grep -q '"status":"ok"' "$WORK/body"; then
    pass "GET /healthz through the proxy: 200 $(cat "$WORK/body")"
  else
    fail "GET /healthz through the proxy: expected 200 {\"status\":\"ok\"}"; show_answer "$code"
  fi
}
check_forgery() {
  local before code
  python3 - "$SAMPLE" > "$WORK/forged.json" <<'EOF'
import json, sys
body = json.load(open(sys.argv[1]))
header, payload, signature = body["signedPayload"].split(".")
i = len(signature) // 2            # the middle: every bit of that character counts
flipped = "A" if signature[i] != "A" else "B"
body["signedPayload"] = ".".join([header, payload, signature[:i] + flipped + signature[i + 1:]])
json.dump(body, sys.stdout)
EOF
  before=$(inbox)
  code=$(through --data-binary @"$WORK/forged.json" -H 'Content-Type: application/json' /appstore/notifications)
  if [ "$code" = 422 ] && grep -q '"error":"invalid-signature"' "$WORK/body" && [ "$(inbox)" = "$before" ]; then
    pass "a forged notification (one character of the signature flipped): the receiver's 422 invalid-signature passed through, nothing new in new/"
  else
    fail "a forged notification: expected the receiver's 422 and new/ unchanged"; show_answer "$code"
  fi
  # The receiver logs the refusal; behind the proxy its client is the proxy's address.
  if wait_until 5 grep -q 'TXRECON_HTTP_STATUS=422 .*TXRECON_CLIENT=127\.0\.0\.1 ' "$WORK/receive.log"; then
    pass "the receiver logged the 422 with the proxy's address: $(grep -o 'TXRECON_HTTP_STATUS=422 .*TXRECON_CLIENT=[^ ]*' "$WORK/receive.log" | tail -1)"
  else
    fail "the receiver's log has no 422 from client 127.0.0.1"
  fi
}
check_too_big() {
  local before seen code
  head -c $((9 * 1024 * 1024)) /dev/zero | tr '\0' 'x' > "$WORK/big.json"
  before=$(inbox); seen=$(receiver_answered /appstore/notifications)
  code=$(through --data-binary @"$WORK/big.json" /appstore/notifications)
  if [ "$code" = 413 ] && grep -qi '<center>nginx' "$WORK/body" && [ "$(inbox)" = "$before" ] \
     && [ "$(receiver_answered /appstore/notifications)" = "$seen" ]; then
    pass "a body of 9 MiB: nginx's own 413 (client_max_body_size), the receiver never saw it, nothing new in new/"
  else
    fail "a body of 9 MiB: expected nginx's 413, not proxied, new/ unchanged"; show_answer "$code"
  fi
  # 8 MiB exactly is the receiver's MaxFileSize= (default 8M): nginx lets it through and the
  # receiver decides (400: it is no JSON), so that nginx refuses nothing the receiver would take.
  head -c $((8 * 1024 * 1024)) /dev/zero | tr '\0' 'x' > "$WORK/max.json"
  code=$(through --data-binary @"$WORK/max.json" /appstore/notifications)
  if [ "$code" = 400 ] && grep -q '"error":' "$WORK/body" && [ "$(inbox)" = "$before" ]; then
    pass "a body of exactly 8 MiB (MaxFileSize=): nginx passes it, the receiver answers $code $(grep -o '"error":"[^"]*"' "$WORK/body")"
  else
    fail "a body of exactly 8 MiB: expected nginx to pass it to the receiver (its 400 for junk)"; show_answer "$code"
  fi
}
check_not_proxied() {
  local code
  code=$(through --data-binary '{}' /envelopes)
  if [ "$code" = 404 ] && grep -qi '<center>nginx' "$WORK/body" && [ "$(receiver_answered /envelopes)" = 0 ]; then
    pass "POST /envelopes (outside the snippet's locations): nginx's own 404, not proxied"
  else
    fail "POST /envelopes: expected nginx's 404, the receiver never asked"; show_answer "$code"
  fi
}
check_uploads_proxied() {
  local code; code=$(through --data-binary @"$ROOT/Examples/samples/07-broken.json" /appstore/transactions)
  if [ "$code" = 400 ] && grep -q '"error":' "$WORK/body"; then
    pass "POST /appstore/transactions is proxied too (location /appstore/): the receiver's 400 $(grep -o '"error":"[^"]*"' "$WORK/body")"
  else
    fail "POST /appstore/transactions: expected the receiver's 400 for a broken body"; show_answer "$code"
  fi
}
check_tls() {
  # TLS 1.1: the client allows it (SECLEVEL=0: OpenSSL 3 refuses TLS < 1.2 at its default
  # level), so that a refusal comes from the server's ssl_protocols.
  # s_client prints "Protocol : TLSv1.1" even for a refused handshake: only a cipher counts.
  openssl s_client -connect "127.0.0.1:$PORT" -servername "$HOST" -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0' \
    -CAfile "$CA" </dev/null > "$WORK/tls11.log" 2>&1 || true
  if grep -Eq '^New, .*Cipher is [^(]' "$WORK/tls11.log"; then
    fail "TLS 1.1: the proxy accepted a TLS 1.1 handshake ($(grep -m1 '^New, ' "$WORK/tls11.log"))"
  else
    pass "TLS 1.1: refused (client: $(grep -o 'tlsv1 alert [a-z ]*\|no protocols available\|unsupported protocol\|wrong version number' "$WORK/tls11.log" | head -1 || true))"
  fi
  local v code
  for v in 1.2 1.3; do
    code=$(through --tlsv"$v" --tls-max "$v" /healthz)
    if [ "$code" = 200 ] && grep -q "SSL connection using TLSv$v" "$WORK/curl.err"; then
      pass "TLS $v: works ($(grep -o "SSL connection using TLSv$v.*" "$WORK/curl.err"), certificate verified for $HOST)"
    else
      fail "TLS $v: expected a verified TLSv$v connection and 200 on /healthz"; show_answer "$code"
      grep -i 'ssl\|tls\|error' "$WORK/curl.err" | head -5 | sed 's/^/    /'
    fi
  done
}

# deliver_through NAME URL HTTPVERSION: a daemon of its own (spool WORK/NAME) delivers 24
#   envelopes to URL with HTTPVersion=HTTPVERSION and MaxConcurrentDeliveries=8; prints
#   "PROTOCOLS CONNECTIONS": the protocols nginx logged for its keys, and on how many connections.
deliver_through() {
  local name=$1 url=$2 version=$3 spool="$WORK/$1/spool" pid i
  mkdir -p "$WORK/$name"
  cat > "$WORK/$name/txrecon.conf" <<EOF
[Spool]
Directory=$spool
LedgerFile=$WORK/$name/ledger.sqlite3

[Backend]
URL=$url
CAFile=$CA
HTTPVersion=$version

[Delivery]
MaxConcurrentDeliveries=8

[Verification]
Mode=none
AcceptEnvelopes=yes
EOF
  "$BINARY" run --config "$WORK/$name/txrecon.conf" 2> "$WORK/$name/daemon.log" &
  pid=$!; DAEMON_PID=$pid
  wait_until "$START_TIMEOUT" grep -q ' ready: ' "$WORK/$name/daemon.log" \
    || { cat "$WORK/$name/daemon.log" >&2; die "txrecon run ($name) did not get ready"; }
  for i in $(seq -w 1 24); do
    printf '{"id":"%s-%s","version":1,"payload":{"n":%d}}' "$name" "$i" "$((10#$i))" > "$spool/tmp/$name-$i"
  done
  # One burst (one mv), so that the deliveries overlap.
  mv "$spool/tmp/$name"-* "$spool/new/"
  # Delivered: no item left in new/ or queue/ (done/ holds a retried item's record beside it).
  wait_until 60 eval "[ -z \"\$(ls -A '$spool/new')\$(ls -A '$spool/queue')\" ]" \
    || { tail -5 "$WORK/$name/daemon.log" >&2; log "    $name: not all delivered within 60 s" >&2; }
  stop "$pid" "txrecon run ($name)"; DAEMON_PID=
  echo "$(awk -v p="$name-" 'index($3, p) == 1 {print $1}' "$WORK/nginx/delivery.log" | sort -u | tr '\n' ',')" \
       "$(awk -v p="$name-" 'index($3, p) == 1 {print $2}' "$WORK/nginx/delivery.log" | sort -u | wc -l)"
}
# curl_reuses_h2c: whether the host's libcurl is 7.89 or later.
curl_reuses_h2c() {
  local v major minor; v=$(curl -V | head -1 | sed -n 's/.*libcurl\/\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  read -r major minor <<< "$v"
  [ "${major:-0}" -gt 7 ] || { [ "${major:-0}" = 7 ] && [ "${minor:-0}" -ge 89 ]; }
}
check_h2c_refused() {
  local url=$1 rc=0
  mkdir -p "$WORK/h2c"
  printf '[Spool]\nDirectory=%s\n[Backend]\nURL=%s\nHTTPVersion=2\n[Verification]\nMode=none\nAcceptEnvelopes=yes\n' \
    "$WORK/h2c/spool" "$url" > "$WORK/h2c/txrecon.conf"
  "$BINARY" check-config --config "$WORK/h2c/txrecon.conf" > "$WORK/h2c/check.log" 2>&1 || rc=$?
  if [ "$rc" = 78 ] && grep -q 'needs libcurl 7.89 or later' "$WORK/h2c/check.log"; then
    pass "HTTPVersion=2 to $url: refused at check-config (exit 78) on this libcurl ($(curl -V | head -1 | grep -o 'libcurl/[0-9.]*'), curl issue 10634)"
  else
    fail "HTTPVersion=2 to $url on libcurl < 7.89: expected check-config to refuse it with exit 78, got $rc: $(head -c 300 "$WORK/h2c/check.log")"
  fi
}
check_http2_deliveries() {
  local spec name url version expected result lines protocols connections
  for spec in "h2-tls https://127.0.0.1:$H2PORT/deliver 2 HTTP/2.0," \
              "h2c http://127.0.0.1:$H2CPORT/deliver 2 HTTP/2.0," \
              "h1-tls https://127.0.0.1:$H2PORT/deliver 1.1 HTTP/1.1,"; do
    read -r name url version expected <<< "$spec"
    # Cleartext HTTP/2 needs libcurl 7.89 or later (curl issue 10634): refused before, at check-config.
    if [ "$name" = h2c ] && ! curl_reuses_h2c; then
      check_h2c_refused "$url"; continue
    fi
    result=$(deliver_through "$name" "$url" "$version")
    read -r protocols connections <<< "$result"
    lines=$(awk -v p="$name-" 'index($3, p) == 1' "$WORK/nginx/delivery.log" | wc -l)
    # Exactly 24: a request that failed and was sent again would show as more.
    # HTTP/2: one connection; HTTP/1.1: one per concurrent delivery at most (MaxConcurrentDeliveries=8).
    if [ "$lines" = 24 ] && [ "$protocols" = "$expected" ] \
       && { [ "$version" != 2 ] || [ "$connections" = 1 ]; } && [ "$connections" -le 8 ]; then
      pass "HTTPVersion=$version to $url: $lines deliveries as ${protocols%,} over $connections connection(s)"
    else
      fail "HTTPVersion=$version to $url: expected 24 requests, each delivered at its first attempt, as ${expected%,}$([ "$version" != 2 ] && echo ' over at most 8 connections' || echo ' over one connection'); nginx logged $lines as ${protocols%,} over $connections connection(s)"
    fi
  done
}

# ---------------------------------------------------------------- main
ensure_binary
prepare_nginx
make_certificates
PORT=$(free_port); RPORT=$(free_port)
while [ "$RPORT" = "$PORT" ]; do RPORT=$(free_port); done
H2PORT=$(free_port)
while [ "$H2PORT" = "$PORT" ] || [ "$H2PORT" = "$RPORT" ]; do H2PORT=$(free_port); done
H2CPORT=$(free_port)
while [ "$H2CPORT" = "$PORT" ] || [ "$H2CPORT" = "$RPORT" ] || [ "$H2CPORT" = "$H2PORT" ]; do H2CPORT=$(free_port); done
ANSWERPORT=$(free_port)
while [ "$ANSWERPORT" = "$PORT" ] || [ "$ANSWERPORT" = "$RPORT" ] || [ "$ANSWERPORT" = "$H2PORT" ] \
      || [ "$ANSWERPORT" = "$H2CPORT" ]; do ANSWERPORT=$(free_port); done
write_nginx_conf
write_receiver_conf
create_spool
start_receiver
start_nginx

check_notification
check_healthz
check_forgery
check_too_big
check_tls
check_not_proxied
check_uploads_proxied
check_http2_deliveries

if grep -q '\[emerg\]\|\[alert\]\|\[crit\]' "$WORK/nginx/error.log"; then
  log "nginx's error log has serious entries:"; grep '\[emerg\]\|\[alert\]\|\[crit\]' "$WORK/nginx/error.log" | sed 's/^/    /'
fi
log "summary: $((CHECKS - FAILS)) of $CHECKS checks passed in $(( ($(now_ms) - STARTED_MS) / 1000 )) s$([ "$FAILS" = 0 ] || echo "; $FAILS FAILED")"
[ "$FAILS" = 0 ] || exit 1
