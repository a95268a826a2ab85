#!/usr/bin/env python3
"""check.py - the power-cut test's verdict, after the last boot's clean stop.

Reads what the host recorded and what the image holds:
  ACKED      poster.py's record of every body answered 200 (one JSON line each)
  DELIVERED  backend.py's record of every 2xx it gave
  SAMPLES    the directory of Apple's notifications the poster took bodies from
             (*notification*.jws, a bare JWS, or *notification*.json, Apple's body)
  SPOOL      the guest's /var/spool/txrecon, read out of the image (vm.sh fetch)
  CUTS       run.sh's cuts.log: "cut=N at_ms=T done_ms=T2 ..." per power cut (SIGKILL
             sent at T, qemu gone at T2)
  BOOTS      vm.sh's boots.log (ready_ms, since_cut_ms per boot)
and checks the claim, point by point:
  1. every body answered 200 was delivered (a 2xx recorded by the backend, with the
     payload posted), or superseded by a newer version of the same key that was:
     envelopes by (id, version); Apple's notifications by their key (the
     transactionId, else the notificationUUID) and version (the transaction's
     signedDate, then revocation, then the notification's signedDate), decoded here
     from the JWS and checked against the id the daemon sent;
  2. nothing valid in rejected/ (a file there that is a body the poster sent);
  3. the spool is consistent: new/ and hold/ empty, no item in queue/ (a failure record
     queue/KEY.state left without its item is listed; it must be empty, its item
     delivered: a record whose write a cut lost, see below); every done/KEY item
     (delivered, not superseded) had a 2xx for its own version;
  4. with --ledger=PATH (the guest's LedgerFile=, read out of the image) and
     --ledger-destination=NAME (backend, or second): the ledger names no version
     the destination did not answer 2xx (a cut may lose its writes, never invent
     one), and holds every delivered item in done/ at its version or a newer one
     (after the last boot's catch-up), so that once done/ is reaped nothing
     confirmed is delivered again;
and prints the figures: bodies acknowledged, delivered, superseded, lost,
duplicates (a second 2xx for one key and version: allowed, at least once), the
time from a cut to the guest's init and to the receiver's first 200 again
(medians), tmp/ leftovers (requests in flight at a cut, never answered).

Usage: check.py ACKED DELIVERED SAMPLES SPOOL CUTS BOOTS [--control] [--ledger=PATH --ledger-destination=NAME]
       check.py --pending ACKED DELIVERED SAMPLES   (prints how many acknowledged bodies
                                                     are not delivered yet, for the drain)
  --control: the unsafe receiver's run; the verdict is then "the test can fail":
  exit 0 when bodies answered 200 were lost, 1 when none was.
Exit status (without --control): 0 every check passed, 1 one failed.
"""
import base64
import glob
import hashlib
import json
import os
import sqlite3
import statistics
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
control = "--control" in sys.argv
pending = "--pending" in sys.argv
options = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
if pending:
    acked_path, delivered_path, samples_dir = args
else:
    acked_path, delivered_path, samples_dir, spool, cuts_path, boots_path = args
failures = []


def say(text):
    print("check: " + text, flush=True)


def verdict(ok, text):
    if control:     # the control's run is judged by its losses alone, below
        say("seen: " + text)
        return
    say(("PASS: " if ok else "FAIL: ") + text)
    if not ok:
        failures.append(text)


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def jws_payload(jws):
    part = jws.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def apple_identity(jws):
    """(key, version tuple) as docs/contract.md "Keys, versions and supersede" defines them."""
    notification = jws_payload(jws)
    data = notification.get("data") or {}
    if "signedTransactionInfo" in data:
        transaction = jws_payload(data["signedTransactionInfo"])
        return (str(transaction["transactionId"]),
                (transaction["signedDate"], 1 if transaction.get("revocationDate") else 0, notification["signedDate"]))
    return notification["notificationUUID"], (notification["signedDate"],)


# ---------------------------------------------------------------- what was posted and answered
samples = {}   # sha of the signedPayload -> (name, key, version)
for path in glob.glob(os.path.join(samples_dir, "*notification*.json")) + \
        glob.glob(os.path.join(samples_dir, "*notification*.jws")):
    with open(path, encoding="ascii") as f:
        jws = f.read().strip()
    if path.endswith(".json"):
        jws = json.loads(jws)["signedPayload"]
    key, version = apple_identity(jws)
    samples[hashlib.sha256(jws.encode()).hexdigest()] = (os.path.basename(path), key, version)

acked = lines(acked_path)
delivered = lines(delivered_path)
acked_envelopes = {}    # (id, version) -> sha
acked_apple = set()     # sha
for a in acked:
    if a["kind"] == "envelope":
        acked_envelopes[(a["id"], a["version"])] = a["sha"]
    else:
        acked_apple.add(a["sha"])

# ---------------------------------------------------------------- what the backend got
got = {}        # (id, version) -> list of sha, one per 2xx
newest = {}     # envelope id -> newest version delivered
apple_got = {}  # sha -> count
apple_newest = {}   # key -> newest version tuple delivered
key_mismatch = []
for d in delivered:
    if d["kind"] == "envelope":
        got.setdefault((d["id"], d["version"]), []).append(d["sha"])
        newest[d["id"]] = max(newest.get(d["id"], d["version"]), d["version"])
    else:
        apple_got[d["sha"]] = apple_got.get(d["sha"], 0) + 1
        sample = samples.get(d["sha"])
        if sample is None:
            key_mismatch.append("a delivered %s body is none of the samples (id %s)" % (d["kind"], d["id"]))
            continue
        if sample[1] != d["id"]:
            key_mismatch.append("%s: the daemon sent id %s, the check derived %s" % (sample[0], d["id"], sample[1]))
        apple_newest[sample[1]] = max(apple_newest.get(sample[1], sample[2]), sample[2])

# ---------------------------------------------------------------- 1. every acknowledged body
lost, exact, superseded, corrupt = [], 0, 0, []
for (key, version), sha in sorted(acked_envelopes.items()):
    shas = got.get((key, version))
    if shas:
        exact += 1
        if any(s != sha for s in shas):
            corrupt.append("%s v%d: delivered with another payload" % (key, version))
    elif newest.get(key, -1) > version:
        superseded += 1
    else:
        lost.append("%s version %d" % (key, version))
for sha in sorted(acked_apple):
    name, key, version = samples[sha]
    if sha in apple_got:
        exact += 1
    elif apple_newest.get(key, ()) > version:
        superseded += 1
    else:
        lost.append("Apple %s (key %s)" % (name, key))
acknowledged = len(acked_envelopes) + len(acked_apple)
if pending:
    print(len(lost))
    sys.exit(0)
duplicates = sum(len(v) - 1 for v in got.values()) + sum(n - 1 for n in apple_got.values())
say("%d bodies answered 200 (%d answers, %d of them to Apple's notifications, %d distinct): "
    "%d envelopes of %d ids, %d with a later version" % (
        acknowledged, len(acked), sum(1 for a in acked if a["kind"] == "apple"), len(acked_apple),
        len(acked_envelopes), len({k for k, _ in acked_envelopes}),
        sum(1 for (k, v) in acked_envelopes if v > 1)))
say("backend: %d 2xx given; %d acknowledged bodies delivered as posted, %d superseded by a newer "
    "delivered version; %d duplicates (a second 2xx for one key and version)" % (
        len(delivered), exact, superseded, duplicates))
if lost:
    say("lost: " + ", ".join(lost[:20]) + (" ..." if len(lost) > 20 else ""))
verdict(not lost, "%d of %d acknowledged bodies lost (neither delivered nor superseded by a delivered newer version)"
        % (len(lost), acknowledged))
verdict(not corrupt, "every delivery carried the payload that was posted" + ("; " + "; ".join(corrupt[:5]) if corrupt else ""))
verdict(not key_mismatch, "Apple's notifications: the check's key and version agree with the daemon's id"
        + ("; " + "; ".join(key_mismatch[:5]) if key_mismatch else ""))

# ---------------------------------------------------------------- 2. rejected/, 3. the spool
def entries(directory):
    path = os.path.join(spool, directory)
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def read(directory, name):
    try:
        with open(os.path.join(spool, directory, name), "rb") as f:
            return f.read()
    except OSError:
        return b""


def posted_body(raw):
    """What the bytes are, if a body the poster sent: ("envelope", id, version, sha) or ("apple", sha)."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    if "payload" in body and "id" in body:
        canonical = json.dumps(body["payload"], sort_keys=True, separators=(",", ":"))
        return ("envelope", body["id"], body.get("version"), hashlib.sha256(canonical.encode()).hexdigest())
    if "signedPayload" in body:
        sha = hashlib.sha256(str(body["signedPayload"]).encode()).hexdigest()
        return ("apple", sha) if sha in samples else None
    return None


rejected = [n for n in entries("rejected") if not n.endswith(".reason") and not n.startswith(".")]
valid_rejected = []
for name in rejected:
    reason = read("rejected", name + ".reason").decode(errors="replace").split("\n")[0]
    say("rejected/%s (%d bytes): %s" % (name, len(read("rejected", name)), reason))
    if posted_body(read("rejected", name)) is not None:
        valid_rejected.append(name)
verdict(not valid_rejected, "nothing valid in rejected/ (%d files there, %d of them a body the poster sent)"
        % (len(rejected), len(valid_rejected)))
for directory in ("new", "hold"):
    names = entries(directory)
    verdict(not names, "%s/ is empty%s" % (directory, "" if not names else ": " + " ".join(names[:10])))
# queue/: no item may be left, and no failure record KEY.state either: written without
# fsync, one a cut caught before its data reached the disk comes back empty, and the next
# start (the check's own boot at the latest) removes it (Spool.restoreQueue), with its
# item's or after it.
names = entries("queue")
items = [n for n in names if not n.endswith(".state")]
orphans = [n for n in names if n.endswith(".state") and n[:-6] not in names]
verdict(not items, "queue/ holds no item%s" % ("" if not items else ": " + " ".join(items[:10])))
verdict(not orphans, "queue/ holds no failure record without its item%s"
        % ("" if not orphans else ": " + " ".join(orphans[:10])))

unpaid, unreadable, done_items = [], 0, 0
for name in entries("done"):
    if ".superseded-" in name or name.endswith(".state") or name.startswith("."):
        continue
    done_items += 1
    what = posted_body(read("done", name))
    if what is None:
        unreadable += 1
    elif what[0] == "envelope":
        if what[3] not in got.get((what[1], what[2]), []):
            unpaid.append(name)
    elif what[1] not in apple_got:
        unpaid.append(name)
verdict(not unpaid, "every delivered item in done/ (%d) had a 2xx for its own version%s"
        % (done_items, "" if not unpaid else ": not " + " ".join(unpaid[:10])))

# ---------------------------------------------------------------- 4. the ledger
if "ledger" in options:
    destination = options.get("ledger-destination", "backend")
    connection = sqlite3.connect("file:%s?mode=ro" % options["ledger"], uri=True)
    try:
        rows = connection.execute(
            "SELECT key, kind, version_primary, version_revoked, version_secondary FROM confirmations "
            "WHERE destination = ?", (destination,)).fetchall()
    finally:
        connection.close()
    answered_apple = {}     # key -> versions a 2xx was given for, as (primary, revoked, secondary)
    for sha in apple_got:
        _, key, version = samples[sha]
        full = tuple(version) + (0,) * (3 - len(version))
        answered_apple.setdefault(key, set()).add(full)
    recorded = {}
    invented = []
    for key, kind, primary, revoked, secondary in rows:
        recorded[key] = (primary, revoked, secondary)
        if kind == "envelope":
            if not got.get((key, primary)):
                invented.append("%s v%d" % (key, primary))
        elif (primary, revoked, secondary) not in answered_apple.get(key, set()):
            invented.append("%s %s" % (key, (primary, revoked, secondary)))
    verdict(not invented, "the ledger (%d rows for %s) names no version the destination did not answer 2xx%s"
            % (len(rows), destination, "" if not invented else ": " + ", ".join(invented[:10])))
    unrecorded = []
    for name in entries("done"):
        if ".superseded-" in name or name.endswith(".state") or name.startswith("."):
            continue
        what = posted_body(read("done", name))
        if what is None:
            continue
        if what[0] == "envelope":
            key, version = what[1], (what[2], 0, 0)
        else:
            _, key, version = samples[what[1]]
            version = tuple(version) + (0,) * (3 - len(version))
        if recorded.get(key, (-1, 0, 0)) < version:
            unrecorded.append(name)
    verdict(not unrecorded, "the ledger holds every delivered item in done/ at its version, so none is delivered "
            "again once done/ is reaped%s" % ("" if not unrecorded else ": not " + " ".join(unrecorded[:10])))
if unreadable:
    say("done/: %d items whose file holds no body (written after the answer, lost in a cut)" % unreadable)
    if not control:
        failures.append("done/ holds %d items without their body" % unreadable)
# tmp/: only the receiver writes it here (no producer runs in the guest); what a cut left of
# a request in flight (never answered 200) its next start removed.
leftovers = [n for n in entries("tmp")]
verdict(not leftovers, "tmp/ holds no leftover of a request in flight at a cut%s"
        % ("" if not leftovers else ": " + " ".join(leftovers[:10])))

# ---------------------------------------------------------------- times
cuts = []
with open(cuts_path, encoding="utf-8") as f:
    for line in f:
        cuts.append(dict(kv.split("=", 1) for kv in line.split()))
acks = sorted(a["t"] for a in acked)
to_answer = []
for c in cuts:
    after = [t for t in acks if t > int(c["done_ms"])]   # answers in flight at the SIGKILL come before
    if after:
        to_answer.append(after[0] - int(c["at_ms"]))
# The test's power: at each cut, how many bodies had been answered 200 and not yet
# delivered (no 2xx for them or a newer version yet): what the cut could have lost.
first_2xx = {}      # envelope id -> {version: first 2xx time}; Apple sha -> first 2xx time
for d in delivered:
    if d["kind"] == "envelope":
        first_2xx.setdefault(d["id"], {}).setdefault(d["version"], d["t"])
    else:
        first_2xx.setdefault(d["sha"], d["t"])
never = float("inf")
exposed = []
for c in cuts:
    at = int(c["at_ms"])
    n = 0
    for a in acked:
        if a["t"] >= at:
            continue
        if a["kind"] == "envelope":
            done_at = min([t for v, t in first_2xx.get(a["id"], {}).items() if v >= a["version"]] or [never])
        else:
            done_at = first_2xx.get(a["sha"], never)
        if done_at > at:
            n += 1
    exposed.append(n)
if exposed:
    say("at the cuts, bodies answered 200 and not yet delivered: median %d, min %d, max %d, %d in all"
        % (statistics.median(exposed), min(exposed), max(exposed), sum(exposed)))
to_ready = []
with open(boots_path, encoding="utf-8") as f:
    for line in f:
        fields = dict(kv.split("=", 1) for kv in line.split())
        if fields.get("since_cut_ms", "-") != "-":
            to_ready.append(int(fields["since_cut_ms"]))
if to_answer:
    say("cut to the receiver's first 200 again: median %.1f s, max %.1f s over %d cuts; "
        "cut to the guest's init: median %.1f s" % (
            statistics.median(to_answer) / 1000, max(to_answer) / 1000, len(to_answer),
            statistics.median(to_ready) / 1000 if to_ready else float("nan")))

summary = {"cuts": len(cuts), "acknowledged": acknowledged, "answers_200": len(acked),
           "delivered_exact": exact, "superseded": superseded, "lost": len(lost), "duplicates": duplicates,
           "backend_2xx": len(delivered), "rejected": len(rejected), "valid_rejected": len(valid_rejected),
           "tmp_leftovers": len(leftovers), "orphan_states": len(orphans), "done_without_body": unreadable,
           "median_cut_to_first_200_ms": statistics.median(to_answer) if to_answer else None,
           "median_cut_to_init_ms": statistics.median(to_ready) if to_ready else None,
           "exposed_at_cuts": exposed}
print("summary: " + json.dumps(summary), flush=True)
if control:
    if lost:
        say("the control lost %d acknowledged bodies, as a receiver that answers before its fsync must: "
            "the test can fail" % len(lost))
        sys.exit(0)
    say("FAIL: the control lost nothing: this run could not have told a broken receiver from a good one")
    sys.exit(1)
sys.exit(1 if failures else 0)
