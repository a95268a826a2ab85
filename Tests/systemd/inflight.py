#!/usr/bin/env python3
"""inflight.py - a restart of txrecon-receive.service with a request in flight,
for Tests/systemd/run.sh (Python 3 standard library only; runs in the container).

1. Sends the headers and half the body of POST /envelopes to the socket.
2. Asks systemd to restart txrecon-receive.service (without waiting) and waits
   until the service is stopping: the receiver has stopped accepting, and
   waits for the request in flight.
3. Opens a second connection while the service is down: systemd's socket
   keeps it in its backlog.
4. Sends the rest of the first body, and the whole second request; prints
   each answer as one JSON line {"first": {"status", "body"}, "second": ...}.

Exit 0 when both answers arrived (whatever their status: run.sh judges them).

Usage: inflight.py --port 8081 --first ID --second ID
"""

import argparse
import json
import socket
import subprocess
import sys
import time

UNIT = "txrecon-receive.service"


def request(body):
    head = ("POST /envelopes HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def answer(connection):
    data = b""
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1]) if head.startswith(b"HTTP/1.1 ") else 0
    return {"status": status, "body": body.decode(errors="replace")}


def state():
    return subprocess.run(["systemctl", "show", "-p", "ActiveState", "--value", UNIT],
                          capture_output=True, text=True, check=True).stdout.strip()


def envelope(identifier):
    return json.dumps({"id": identifier, "version": 1, "payload": {"test": "inflight"}}).encode()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--first", required=True)
    parser.add_argument("--second", required=True)
    arguments = parser.parse_args()

    first = request(envelope(arguments.first))
    cut = len(first) - 10
    one = socket.create_connection(("127.0.0.1", arguments.port), timeout=60)
    one.sendall(first[:cut])
    subprocess.run(["systemctl", "restart", "--no-block", UNIT], check=True)
    deadline = time.monotonic() + 20
    while state() != "deactivating":
        if time.monotonic() > deadline:
            print("the service never reached deactivating", file=sys.stderr)
            return 1
        time.sleep(0.05)
    two = socket.create_connection(("127.0.0.1", arguments.port), timeout=60)
    one.sendall(first[cut:])
    two.sendall(request(envelope(arguments.second)))
    print(json.dumps({"first": answer(one), "second": answer(two)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
