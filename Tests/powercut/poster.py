#!/usr/bin/env python3
"""poster.py - the power-cut test's producers on the host: post bodies, record each 200.

CLIENTS threads post to the guest's `txrecon receive` through the forwarded port
127.0.0.1:PORT, each over its own keep-alive connection, until SIGTERM:
  - generic envelopes (format 5) to POST /envelopes: {"id": "pc-NNNNNN", "version": V,
    "payload": {"n": NNNNNN, "v": V, "pad": "..."}}, ids unique; after an id's version
    1 was answered 200, one id in four is posted again later with version 2 (and one
    of those in three with version 3), to exercise supersede;
  - now and then (2 % of the posts) one of Apple's real sandbox notifications, the
    bodies Apple posts ({"signedPayload": "<JWS>"}) made from SAMPLES (files
    *notification*.jws, a bare JWS, or *notification*.json, Apple's body), to
    POST /appstore/notifications, each at most MAX_APPLE times in all (Apple retries too).
A body is acknowledged when the answer is 200; only then, before the thread goes on,
is it appended to ACKED (one JSON line, flushed):
  {"t": ms, "kind": "envelope"|"apple", "id", "version", "sha", "spooled", "sample"}
("sha": SHA-256 of the envelope's payload in canonical JSON, or of the signedPayload).
A body without an answer (a cut, a refused connection while the guest boots) or with
a 429 or 5xx is posted again later (any other 4xx is printed and dropped), as a producer would; the guest being down,
a thread waits 0.2 s between tries. Statuses and errors are counted in ACKED + ".stats"
on SIGTERM (after the requests in flight ended or timed out).

Usage: poster.py PORT ACKED SAMPLES SEED [CLIENTS]
"""
import glob
import hashlib
import http.client
import json
import os
import random
import signal
import sys
import threading
import time

port, acked_path, samples_dir, seed = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
clients = int(sys.argv[5]) if len(sys.argv) > 5 else 4
MAX_APPLE = 3
rng = random.Random(seed)
lock = threading.Lock()
stop = threading.Event()
acked = open(acked_path, "a", encoding="utf-8")
stats = {"posted": 0, "errors": 0}
serial = 0
retry = []      # bodies to post again (no 200 yet)
later = []      # (due serial, body): newer versions, posted once the serial passes
apple = []
for path in sorted(glob.glob(os.path.join(samples_dir, "*notification*.json"))
                   + glob.glob(os.path.join(samples_dir, "*notification*.jws"))):
    with open(path, encoding="ascii") as f:
        jws = f.read().strip()
    if path.endswith(".json"):      # Apple's body already: {"signedPayload": "<JWS>"}
        jws = json.loads(jws)["signedPayload"]
    apple.append({"kind": "apple", "sample": os.path.basename(path), "left": MAX_APPLE,
                  "body": json.dumps({"signedPayload": jws}).encode(),
                  "sha": hashlib.sha256(jws.encode()).hexdigest()})


def envelope(n, version):
    payload = {"n": n, "v": version, "pad": "x" * rng.randrange(16, 400)}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return {"kind": "envelope", "id": "pc-%06d" % n, "version": version,
            "sha": hashlib.sha256(canonical.encode()).hexdigest(),
            "body": json.dumps({"id": "pc-%06d" % n, "version": version, "payload": payload}).encode()}


def next_body():
    global serial
    with lock:
        if retry:
            return retry.pop(0)
        if later and later[0][0] <= serial:
            return later.pop(0)[1]
        if apple and rng.random() < 0.02:
            sample = rng.choice(apple)
            sample["left"] -= 1
            if sample["left"] == 0:
                apple.remove(sample)
            return sample
        serial += 1
        return envelope(serial, 1)


def acknowledged(item, reply):
    entry = {"t": int(time.time() * 1000), "kind": item["kind"], "sha": item["sha"],
             "spooled": reply.get("spooled")}
    if item["kind"] == "envelope":
        entry.update(id=item["id"], version=item["version"])
    else:
        entry["sample"] = item["sample"]
    with lock:
        acked.write(json.dumps(entry) + "\n")
        acked.flush()
        if item["kind"] == "envelope" and item["version"] < 3:
            odds = 0.25 if item["version"] == 1 else 0.33
            if rng.random() < odds:
                n = int(item["id"][3:])
                later.append((serial + rng.randrange(20, 200), envelope(n, item["version"] + 1)))
                later.sort(key=lambda e: e[0])


def client(number):
    conn = None
    while not stop.is_set():
        item = next_body()
        path = "/envelopes" if item["kind"] == "envelope" else "/appstore/notifications"
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
            conn.request("POST", path, body=item["body"], headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            text = response.read()
            status = response.status
            with lock:
                stats["posted"] += 1
                stats[str(status)] = stats.get(str(status), 0) + 1
            if status == 200:
                acknowledged(item, json.loads(text))
                continue
            if 400 <= status < 500 and status != 429:   # refused for good: never retried
                sys.stderr.write("poster: %s %s answered %d: %s\n" % (path, item.get("id", item.get("sample")),
                                                                     status, text[:200]))
                continue
            if response.getheader("Connection", "").lower() == "close":
                conn.close(); conn = None
        except (OSError, http.client.HTTPException, ValueError):
            with lock:
                stats["errors"] += 1
            if conn is not None:
                conn.close(); conn = None
            time.sleep(0.2)
        with lock:
            retry.append(item)


threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
for t in threads:
    t.start()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
while not stop.is_set():
    stop.wait(0.5)
for t in threads:
    t.join(30)
with lock:
    with open(acked_path + ".stats", "w", encoding="utf-8") as f:
        json.dump(dict(stats, serial=serial), f)
