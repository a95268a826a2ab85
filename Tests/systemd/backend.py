#!/usr/bin/env python3
"""backend.py - the scriptable backend Tests/systemd/run.sh runs on the
container's loopback (Python 3 standard library only).

POST /inApps/v1/notifications/history stands in for Apple's App Store Server
API for `txrecon sweep`: with "Authorization: Bearer <a JWT>" it answers an
empty page and appends the request body to STATE/history.jsonl; else 401.

GET /inApps/v1/subscriptions/ID stands in for Get All Subscription Statuses
for `txrecon reconcile`: with a bearer JWT it appends ID to
STATE/statuses.jsonl and answers 404 (errorCode 4040010), a customer Apple
does not know; else 401.

POST /inApps/v1/notifications/test and GET /inApps/v1/notifications/test/TOKEN
stand in for Apple's Request a Test Notification and Get Test Notification
Status for `txrecon probe`: with a bearer JWT, the POST answers a token and
then POSTs STATE/test-notification.json (an App Store Server Notifications
body) to the receiver, http://127.0.0.1:8081/appstore/notifications, as
Apple would; the GET answers its signedPayload and the attempt's result
(SUCCESS for a 2xx, UNSUCCESSFUL_HTTP_RESPONSE_CODE, NO_RESPONSE), as Apple
does; 404 (errorCode 4040008) for an unknown token.

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
import threading
import time
import urllib.error
import urllib.request

HISTORY_PATH = "/inApps/v1/notifications/history"
TEST_PATH = "/inApps/v1/notifications/test"
SUBSCRIPTIONS_PATH = "/inApps/v1/subscriptions/"
RECEIVER = "http://127.0.0.1:8081/appstore/notifications"
# Test notification token -> its send attempts; guarded by TESTS_LOCK.
TESTS = {}
TESTS_LOCK = threading.Lock()


def send_test_notification(token, body):
    """Apple's attempt: POST the notification to the receiver, record the result."""
    request = urllib.request.Request(RECEIVER, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            result = "SUCCESS" if 200 <= answer.status < 300 else "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
    except urllib.error.HTTPError:
        result = "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
    except OSError:
        result = "NO_RESPONSE"
    with TESTS_LOCK:
        TESTS[token].append({"attemptDate": int(time.time() * 1000), "sendAttemptResult": result})


class Handler(http.server.BaseHTTPRequestHandler):
    state = "."

    def do_GET(self):
        if self.path.startswith(SUBSCRIPTIONS_PATH):
            if not self.signed():
                return self.answer(401, {"errorCode": 4010000, "errorMessage": "no signed token"})
            with open(os.path.join(self.state, "statuses.jsonl"), "a") as log:
                log.write(json.dumps({"transactionId": self.path[len(SUBSCRIPTIONS_PATH):]}) + "\n")
            return self.answer(404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."})
        if not self.path.startswith(TEST_PATH + "/") or not self.signed():
            return self.answer(401 if self.path.startswith(TEST_PATH + "/") else 404, {"error": "not served"})
        token = self.path[len(TEST_PATH) + 1:]
        with TESTS_LOCK:
            attempts = list(TESTS.get(token, [])) if token in TESTS else None
        if attempts is None:
            return self.answer(404, {"errorCode": 4040008, "errorMessage": "Test notification not found"})
        with open(os.path.join(self.state, "test-notification.json")) as sample:
            signed_payload = json.load(sample)["signedPayload"]
        self.answer(200, {"signedPayload": signed_payload, "sendAttempts": attempts})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path == TEST_PATH:
            if not self.signed():
                return self.answer(401, {"errorCode": 4010000, "errorMessage": "no signed token"})
            with open(os.path.join(self.state, "test-notification.json"), "rb") as sample:
                notification = sample.read()
            with TESTS_LOCK:
                token = "test-%d" % (len(TESTS) + 1)
                TESTS[token] = []
            threading.Thread(target=send_test_notification, args=(token, notification), daemon=True).start()
            return self.answer(200, {"testNotificationToken": token})
        status, answer = self.decide(body)
        self.answer(status, answer)

    def signed(self):
        authorization = self.headers.get("Authorization", "")
        return authorization.startswith("Bearer ") and authorization.count(".") == 2

    def answer(self, status, answer):
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
