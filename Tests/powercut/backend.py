#!/usr/bin/env python3
"""backend.py - the power-cut test's backend on the host: records every 2xx it gives.

Listens on 127.0.0.1 (the guest's daemon reaches it as 10.0.2.2:PORT) and answers
the daemon's POSTs. Every body it answers 2xx is first appended to LOG, one JSON line,
and the file fsynced; only then is the answer sent. So LOG is a superset of what the
daemon was told was delivered (an answer lost on the way is delivered again: the
daemon retries, at least once). Lines:
  {"t": ms, "id", "version", "versionToken", "kind", "attempt", "idem", "sha", "status"}
with "sha" the SHA-256 of the envelope's payload (canonical JSON) or of the
notification's signedPayload, for the check to compare with what was posted.

Faults, while MODE_FILE does not say "healthy" (run.sh writes that for the final
drain), from a seeded generator: outages (the time cut into 5 s windows, each one
down with probability OUTAGE, every request then 503), and outside them 10 % 503,
3 % a connection closed without an answer, 7 % a slow answer (0.3 to 2 s, under the
daemon's Timeout=5s). So at a cut some acknowledged bodies wait in new/ and queue/,
which is what the test must find again. A request that is not a daemon's POST is 404.

Usage: backend.py PORT_FILE LOG MODE_FILE SEED [OUTAGE]
  writes the port it listens on to PORT_FILE; stats to LOG + ".stats" on SIGTERM.
"""
import hashlib
import http.server
import json
import os
import random
import signal
import socketserver
import sys
import threading
import time

port_file, log_path, mode_file, seed = sys.argv[1:5]
outage = float(sys.argv[5]) if len(sys.argv) > 5 else 0.4
rng = random.Random(int(seed))
rng_lock = threading.Lock()
log_lock = threading.Lock()
log = open(log_path, "a", encoding="utf-8")
started = time.monotonic()
window_down = {}
stats = {"requests": 0, "2xx": 0, "503": 0, "reset": 0, "slow": 0, "outage_503": 0, "bad": 0}


def healthy():
    try:
        with open(mode_file, encoding="utf-8") as f:
            return f.read().strip() == "healthy"
    except OSError:
        return False


def fault():
    """None, "503", "reset" or a delay in seconds (then 2xx)."""
    if healthy():
        return None
    with rng_lock:
        window = int((time.monotonic() - started) / 5)
        if window not in window_down:
            window_down[window] = random.Random(int(seed) * 100003 + window).random() < outage
        if window_down[window]:
            return "outage"
        r = rng.random()
        if r < 0.10:
            return "503"
        if r < 0.13:
            return "reset"
        if r < 0.20:
            return 0.3 + rng.random() * 1.7
    return None


def digest(body):
    if body.get("kind") == "envelope":
        canonical = json.dumps(body.get("payload"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()
    return hashlib.sha256(str(body.get("signedPayload", "")).encode()).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, text=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def do_GET(self):
        self.answer(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        with log_lock:
            stats["requests"] += 1
        try:
            body = json.loads(raw)
            assert isinstance(body, dict) and "id" in body
        except (ValueError, AssertionError):
            with log_lock:
                stats["bad"] += 1
            return self.answer(400, b"not a txrecon body\n")
        f = fault()
        if f in ("503", "outage"):
            with log_lock:
                stats["outage_503" if f == "outage" else "503"] += 1
            return self.answer(503, b"injected\n")
        if f == "reset":
            with log_lock:
                stats["reset"] += 1
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if f is not None:
            with log_lock:
                stats["slow"] += 1
            time.sleep(f)
        entry = {"t": int(time.time() * 1000), "id": body["id"], "version": body.get("version"),
                 "versionToken": body.get("versionToken"), "kind": body.get("kind"),
                 "attempt": body.get("attempt"), "idem": self.headers.get("Idempotency-Key"),
                 "sha": digest(body), "status": 204}
        with log_lock:
            log.write(json.dumps(entry) + "\n")
            log.flush()
            os.fsync(log.fileno())
            stats["2xx"] += 1
        self.answer(204)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass    # a connection the daemon dropped (its Timeout=, a cut of the guest)


server = Server(("127.0.0.1", 0), Handler)


def stop(*_):
    with log_lock:
        with open(log_path + ".stats", "w", encoding="utf-8") as f:
            json.dump(stats, f)
    os._exit(0)


signal.signal(signal.SIGTERM, stop)
with open(port_file + ".tmp", "w", encoding="utf-8") as f:
    f.write("%d\n" % server.server_address[1])
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
