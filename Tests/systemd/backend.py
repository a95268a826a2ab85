#!/usr/bin/env python3
"""backend.py - the scriptable backend Tests/systemd/run.sh runs on the
container's loopback (Python 3 standard library only).

POST /inApps/v1/notifications/history stands in for Apple's App Store Server
API for `txrecon sweep`: with "Authorization: Bearer <a JWT>" it answers an
empty page and appends the request body to STATE/history.jsonl; else 401.

POST any other path: answers the way the test needs txrecon to see the
backend, steered by files in the state directory, which the test creates and
removes:

  401  Authorization is not "Bearer <content of STATE/token>", so a delivery
       proves that the systemd credential reached the daemon
  503  STATE/fail exists (the backend is down)
  422  the body's id starts with "hold-" and STATE/accept-held does not exist
  200  otherwise; the delivery is appended, as one JSON line (path, id,
       version, attempt, Idempotency-Key), to STATE/deliveries.jsonl

One line per request goes to stderr (the journal of the transient unit).

Usage: backend.py --listen 127.0.0.1:8080 --state DIR
"""

import argparse
import http.server
import json
import os
import sys

HISTORY_PATH = "/inApps/v1/notifications/history"


class Handler(http.server.BaseHTTPRequestHandler):
    state = "."

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        status, answer = self.decide(body)
        payload = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def decide(self, body):
        if self.path == HISTORY_PATH:
            return self.history(body)
        with open(os.path.join(self.state, "token")) as token_file:
            token = token_file.read().strip()
        if self.headers.get("Authorization") != "Bearer " + token:
            return 401, {"error": "missing or wrong bearer token"}
        if os.path.exists(os.path.join(self.state, "fail")):
            return 503, {"error": "test backend is down"}
        try:
            document = json.loads(body)
            item_id = str(document["id"])
        except (ValueError, KeyError, TypeError):
            return 400, {"error": "body is not a JSON object with an id"}
        if item_id.startswith("hold-") and not os.path.exists(os.path.join(self.state, "accept-held")):
            return 422, {"error": "test backend refuses hold- items"}
        record = {
            "path": self.path,
            "id": item_id,
            "version": document.get("version"),
            "attempt": document.get("attempt"),
            "idempotencyKey": self.headers.get("Idempotency-Key"),
        }
        with open(os.path.join(self.state, "deliveries.jsonl"), "a") as log:
            log.write(json.dumps(record) + "\n")
            log.flush()
            os.fsync(log.fileno())
        return 200, {"status": "stored"}

    def history(self, body):
        authorization = self.headers.get("Authorization", "")
        if not authorization.startswith("Bearer ") or authorization.count(".") != 2:
            return 401, {"errorCode": 4010000, "errorMessage": "no signed token"}
        with open(os.path.join(self.state, "history.jsonl"), "a") as log:
            log.write(body.decode("utf-8", "replace") + "\n")
        return 200, {"notificationHistory": [], "hasMore": False}

    def log_message(self, format, *args):
        sys.stderr.write("%s %s\n" % (self.address_string(), format % args))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8080")
    parser.add_argument("--state", required=True)
    arguments = parser.parse_args()
    host, port = arguments.listen.rsplit(":", 1)
    Handler.state = arguments.state
    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
