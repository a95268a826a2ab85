#!/usr/bin/env python3
"""receiver.py - a reference backend for txrecon (Python 3 standard library only).

Accepts txrecon's deliveries at POST /transactions and stores each one exactly
once in SQLite, keyed by its Idempotency-Key (<id>:<version>, the id
percent-encoded as txrecon writes it). Beside every delivery it keeps each
id's current snapshot, the one of the newest version, whatever the order
they arrived in: an attempt txrecon gave up on (its answer came after
Timeout=) may be applied here after the newer snapshot that followed it, so
a backend acts on version order, never on arrival order. It answers the way
txrecon's response table expects:

  200  the delivery is stored (or was stored before: a repeat adds no row);
       sent only after the row is committed
  400  no Idempotency-Key header, or one that is not "<id>:<version>" for
       the body's id, or (signatures required) not the signed webhook-id
  401  a configured bearer token or Standard Webhooks signature does not verify
  413  the body is larger than --max-body
  422  the body is not a UTF-8 JSON object with "id", "version" and "kind"
       (txrecon holds such an item for an operator)
  503  the database is locked or unavailable (txrecon retries later)

GET /transactions lists the stored deliveries as JSON in the order they
arrived, each with what it means for the customer's entitlement
("entitlement"), read from the payloads txrecon decoded and verified
("transaction", "renewalInfo", "notification", "appTransaction"): a backend
never decodes a JWS itself. GET /transactions/current lists each id's current
snapshot alone. GET /healthz answers 200. One line per request goes to
stderr; tokens and secrets never do.

Usage:
  receiver.py --listen 127.0.0.1:8080 --db deliveries.sqlite3 \\
              [--token-file F] [--signing-secret-file F]
"""

import argparse
import base64
import binascii
import hashlib
import hmac
import http.server
import json
import signal
import sqlite3
import sys
import time

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    idempotency_key TEXT PRIMARY KEY,
    id              TEXT NOT NULL,
    version         TEXT NOT NULL,
    kind            TEXT NOT NULL,
    attempt         INTEGER,
    stored_at       TEXT NOT NULL,
    body            TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS current (
    id              TEXT PRIMARY KEY,
    primary_version INTEGER NOT NULL,
    revoked         INTEGER NOT NULL,
    secondary       INTEGER NOT NULL,
    idempotency_key TEXT NOT NULL
)
"""


class Refusal(Exception):
    """A request answered with an error status; `reason` goes to the log and the answer."""

    def __init__(self, status, reason):
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Settings:
    """What every request needs: the database path and the optional secrets."""

    def __init__(self, db_path, token, signing_key, tolerance, max_body, busy_timeout):
        self.db_path = db_path
        self.token = token
        self.signing_key = signing_key
        self.tolerance = tolerance
        self.max_body = max_body
        self.busy_timeout = busy_timeout

    def connect(self):
        """A connection for one request; SQLite connections are not shared between threads."""
        connection = sqlite3.connect(self.db_path, timeout=self.busy_timeout, isolation_level=None)
        # FULL: a committed row survives a power cut, so a 200 really means "applied".
        connection.execute("PRAGMA synchronous=FULL")
        return connection


def initialise(db_path):
    connection = sqlite3.connect(db_path)
    try:
        connection.execute("PRAGMA journal_mode=WAL")  # readers never block the writer
        connection.executescript(SCHEMA)
        connection.commit()
    finally:
        connection.close()


def check_bearer(settings, headers):
    if settings.token is None:
        return
    given = headers.get("Authorization", "")
    expected = "Bearer " + settings.token
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise Refusal(401, "bearer token missing or wrong")


def check_signature(settings, headers, body):
    """Standard Webhooks: HMAC-SHA256 over '<webhook-id>.<webhook-timestamp>.<body>'."""
    if settings.signing_key is None:
        return
    message_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not message_id or not timestamp or not signatures:
        raise Refusal(401, "webhook-id, webhook-timestamp or webhook-signature missing")
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise Refusal(401, "webhook-timestamp is not an integer")
    if abs(time.time() - sent_at) > settings.tolerance:
        raise Refusal(401, "webhook-timestamp is more than %ds away from now" % settings.tolerance)
    signed = message_id.encode() + b"." + timestamp.encode() + b"." + body
    expected = base64.b64encode(hmac.new(settings.signing_key, signed, hashlib.sha256).digest())
    # The header may carry several space-separated "v1,<base64>" entries (key rotation).
    for entry in signatures.split():
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected):
            return
    raise Refusal(401, "no webhook-signature entry verifies")


def parse_delivery(headers, body, signed):
    """The fields stored beside the body; refuses what txrecon should hold."""
    try:
        document = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise Refusal(422, "body is not UTF-8")
    except ValueError as error:
        raise Refusal(422, "body is not JSON: %s" % error)
    if not isinstance(document, dict):
        raise Refusal(422, "body is not a JSON object")
    missing = [name for name in ("id", "version", "kind") if name not in document]
    if missing:
        raise Refusal(422, "body lacks %s" % ", ".join(missing))
    item_id, version, kind = document["id"], document["version"], document["kind"]
    if not isinstance(item_id, str) or not item_id:
        raise Refusal(422, '"id" is not a non-empty string')
    # txrecon's versions are integers (a signedDate in ms, an envelope
    # version) or their text form with a revocation mark ("1690000000000r").
    if isinstance(version, bool) or not isinstance(version, (int, str)) or version == "":
        raise Refusal(422, '"version" is neither an integer nor a non-empty string')
    if not isinstance(kind, str) or not kind:
        raise Refusal(422, '"kind" is not a non-empty string')
    key = headers.get("Idempotency-Key")
    if not key:
        raise Refusal(400, "Idempotency-Key header missing")
    prefix = header_form(item_id) + ":"
    if not key.startswith(prefix) or len(key) == len(prefix):
        raise Refusal(400, "Idempotency-Key %r is not <id>:<version> for id %r" % (key, item_id))
    # The signature covers webhook-id, not Idempotency-Key: deduplicate on a
    # key someone who captured a request could not change.
    if signed and key != headers.get("webhook-id"):
        raise Refusal(400, "Idempotency-Key is not the signed webhook-id")
    order = version_order(document.get("versionToken"), version)
    if order is None:
        raise Refusal(422, '"versionToken" is not <version>[r][.<secondary>]')
    attempt = document.get("attempt")
    return key, item_id, str(version), order, kind, attempt if isinstance(attempt, int) else None


def header_form(item_id):
    """The id as txrecon writes it in Idempotency-Key: bytes that are not
    visible ASCII, and '%' itself, as %XX (transaction ids and UUIDs never
    need it; an envelope's id may be any 1 to 128 bytes)."""
    return "".join(chr(byte) if 0x20 < byte < 0x7F and byte != 0x25 else "%%%02X" % byte
                   for byte in item_id.encode("utf-8"))


def version_order(token, version):
    """(primary, revoked, secondary): how txrecon orders the snapshots of one
    id ("1690000000000", "1690000000000r", "1690000000000r.1690000000123").
    A revoked snapshot is newer than one of the same primary that is not."""
    if token is None:
        return (version, 0, 0) if isinstance(version, int) and not isinstance(version, bool) else None
    if not isinstance(token, str):
        return None
    head, _, secondary = token.partition(".")
    revoked = head.endswith("r")
    primary = head[:-1] if revoked else head
    if not primary.isdigit() or (secondary and not secondary.isdigit()):
        return None
    return (int(primary), 1 if revoked else 0, int(secondary or 0))


def entitlement(document):
    """What a delivery says about the customer's access, from txrecon's decoded
    payloads (verified by txrecon before delivery; see its
    docs/contract.md "Delivery contract"). None for envelopes and receipts'
    purchases."""
    transaction = document.get("transaction")
    renewal = document.get("renewalInfo")
    notification = document.get("notification")
    if not any(isinstance(part, dict) for part in (transaction, renewal, notification)):
        return None
    transaction = transaction if isinstance(transaction, dict) else {}
    renewal = renewal if isinstance(renewal, dict) else {}
    notification = notification if isinstance(notification, dict) else {}
    summary = {
        "productId": transaction.get("productId"),
        "type": transaction.get("type"),
        "expiresDate": transaction.get("expiresDate"),
        # A refund of part of a transaction is not a full revoke.
        "revoked": "revocationDate" in transaction,
        "revocationType": transaction.get("revocationType"),
        "revocationPercentage": transaction.get("revocationPercentage"),
        "appTransactionId": transaction.get("appTransactionId")
                            or (document.get("appTransaction") or {}).get("appTransactionId"),
        "autoRenewStatus": renewal.get("autoRenewStatus"),
        "gracePeriodExpiresDate": renewal.get("gracePeriodExpiresDate"),
        "isInBillingRetryPeriod": renewal.get("isInBillingRetryPeriod"),
        "notificationType": notification.get("notificationType"),
        "subtype": notification.get("subtype"),
        "consumptionRequestReason": (notification.get("data") or {}).get("consumptionRequestReason"),
    }
    return {name: value for name, value in summary.items() if value not in (None, False)}


def store(settings, key, item_id, version, order, kind, attempt, body):
    """Inserts the delivery unless its key is stored already, and makes it
    its id's current snapshot if it is newer than the current one, in one
    transaction; True when a row was added."""
    stored_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    try:
        connection = settings.connect()
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                cursor = connection.execute(
                    "INSERT OR IGNORE INTO deliveries"
                    " (idempotency_key, id, version, kind, attempt, stored_at, body)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (key, item_id, version, kind, attempt, stored_at, body.decode()))
                added = cursor.rowcount == 1
                # An older snapshot arriving late never replaces a newer one.
                connection.execute(
                    "INSERT INTO current (id, primary_version, revoked, secondary, idempotency_key)"
                    " VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT(id) DO UPDATE SET primary_version = excluded.primary_version,"
                    " revoked = excluded.revoked, secondary = excluded.secondary,"
                    " idempotency_key = excluded.idempotency_key"
                    " WHERE (excluded.primary_version, excluded.revoked, excluded.secondary)"
                    " > (current.primary_version, current.revoked, current.secondary)",
                    (item_id,) + order + (key,))
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            return added
        finally:
            connection.close()
    except sqlite3.OperationalError as error:
        raise Refusal(503, "database unavailable: %s" % error)


def list_deliveries(settings, current_only=False):
    query = ("SELECT d.idempotency_key, d.id, d.version, d.kind, d.attempt, d.stored_at, d.body"
             " FROM deliveries d JOIN current c ON c.idempotency_key = d.idempotency_key ORDER BY d.id"
             if current_only else
             "SELECT idempotency_key, id, version, kind, attempt, stored_at, body"
             " FROM deliveries ORDER BY stored_at, rowid")
    try:
        connection = settings.connect()
        try:
            rows = connection.execute(query).fetchall()
        finally:
            connection.close()
    except sqlite3.OperationalError as error:
        raise Refusal(503, "database unavailable: %s" % error)
    deliveries = []
    for key, item_id, version, kind, attempt, stored_at, body in rows:
        document = json.loads(body)
        row = {"idempotencyKey": key, "id": item_id, "version": version, "kind": kind,
               "attempt": attempt, "storedAt": stored_at, "body": document}
        meaning = entitlement(document) if isinstance(document, dict) else None
        if meaning is not None:
            row["entitlement"] = meaning
        deliveries.append(row)
    return deliveries


class Handler(http.server.BaseHTTPRequestHandler):
    # HTTP/1.1 keeps txrecon's connections alive between deliveries.
    protocol_version = "HTTP/1.1"
    server_version = "txrecon-example-receiver"
    settings = None  # set by main()

    def do_POST(self):
        started = time.monotonic()
        if self.path != "/transactions":
            self.close_connection = True  # the body stays unread
            return self.finish_request(404, {"error": "no such resource"}, started, "unknown path")
        try:
            body = self.read_body()
            check_bearer(self.settings, self.headers)
            check_signature(self.settings, self.headers, body)
            key, item_id, version, order, kind, attempt = parse_delivery(
                self.headers, body, signed=self.settings.signing_key is not None)
            added = store(self.settings, key, item_id, version, order, kind, attempt, body)
        except Refusal as refusal:
            extra = {"Retry-After": "1"} if refusal.status == 503 else {}
            return self.finish_request(refusal.status, {"error": refusal.reason}, started,
                                       refusal.reason, extra)
        outcome = "stored" if added else "duplicate"
        self.finish_request(200, {"status": outcome, "idempotencyKey": key}, started,
                            "%s %s attempt %s" % (outcome, key, attempt))

    def do_GET(self):
        started = time.monotonic()
        if self.path == "/healthz":
            return self.finish_request(200, {"status": "ok"}, started, "ok")
        if self.path not in ("/transactions", "/transactions/current"):
            return self.finish_request(404, {"error": "no such resource"}, started, "unknown path")
        try:
            rows = list_deliveries(self.settings, current_only=self.path.endswith("/current"))
        except Refusal as refusal:
            return self.finish_request(refusal.status, {"error": refusal.reason}, started, refusal.reason)
        self.finish_request(200, rows, started, "%d rows" % len(rows))

    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            raise Refusal(411, "Content-Length missing or invalid")
        length = int(length)
        if length > self.settings.max_body:
            # The unread body would be taken for the next request: close instead.
            self.close_connection = True
            raise Refusal(413, "body of %d bytes exceeds %d" % (length, self.settings.max_body))
        return self.rfile.read(length)

    def finish_request(self, status, document, started, detail, extra_headers=None):
        payload = (json.dumps(document, indent=2 if self.command == "GET" else None) + "\n").encode()
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        sys.stderr.write("%s %s %s %d %.1fms %s\n" % (
            time.strftime("%H:%M:%S"), self.command, self.path, status,
            (time.monotonic() - started) * 1000, detail))

    def log_message(self, format, *args):
        # finish_request writes the one line per request; keep http.server quiet.
        pass


def read_secret(path, what):
    try:
        with open(path, encoding="utf-8") as file:
            value = file.read().strip()
    except OSError as error:
        sys.exit("receiver: cannot read %s file %s: %s" % (what, path, error.strerror))
    if not value:
        sys.exit("receiver: %s file %s is empty; put the %s in it or leave the option out" % (what, path, what))
    return value


def signing_key(path):
    secret = read_secret(path, "signing secret")
    if not secret.startswith("whsec_"):
        sys.exit("receiver: signing secret file %s does not start with whsec_" % path)
    try:
        return base64.b64decode(secret[len("whsec_"):], validate=True)
    except binascii.Error:
        sys.exit("receiver: signing secret file %s: the part after whsec_ is not base64" % path)


def stop(signum, frame):
    """SIGTERM ends serve_forever the way Ctrl-C does."""
    raise KeyboardInterrupt


def main():
    parser = argparse.ArgumentParser(description="Reference backend for txrecon deliveries.")
    parser.add_argument("--listen", default="127.0.0.1:8080", help="HOST:PORT to bind (default 127.0.0.1:8080)")
    parser.add_argument("--db", required=True, help="SQLite database file (created if missing)")
    parser.add_argument("--token-file", help="require 'Authorization: Bearer <the file's content>'")
    parser.add_argument("--signing-secret-file", help="require a Standard Webhooks signature with this whsec_ secret")
    parser.add_argument("--timestamp-tolerance", type=int, default=300,
                        help="seconds a webhook-timestamp may differ from now (default 300)")
    # Above txrecon's MaxFileSize= (8 MiB by default) and the JSON around it:
    # a StoreKit 1 receipt is delivered once, whole, as an item of its own.
    parser.add_argument("--max-body", type=int, default=16 * 1024 * 1024,
                        help="largest body in bytes (default 16 MiB)")
    parser.add_argument("--busy-timeout", type=float, default=1.0,
                        help="seconds to wait for a locked database before answering 503 (default 1)")
    arguments = parser.parse_args()

    host, _, port = arguments.listen.rpartition(":")
    if not host or not port.isdigit():
        parser.error("--listen takes HOST:PORT, e.g. 127.0.0.1:8080")
    initialise(arguments.db)
    Handler.settings = Settings(
        db_path=arguments.db,
        token=read_secret(arguments.token_file, "token") if arguments.token_file else None,
        signing_key=signing_key(arguments.signing_secret_file) if arguments.signing_secret_file else None,
        tolerance=arguments.timestamp_tolerance,
        max_body=arguments.max_body,
        busy_timeout=arguments.busy_timeout)

    server = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    signal.signal(signal.SIGTERM, stop)
    sys.stderr.write("receiver: listening on http://%s:%d/transactions, database %s%s%s\n" % (
        host, server.server_address[1], arguments.db,
        ", bearer token required" if arguments.token_file else "",
        ", signatures required" if arguments.signing_secret_file else ""))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        sys.stderr.write("receiver: stopped\n")


if __name__ == "__main__":
    main()
