#!/usr/bin/env python3
"""soak.py: the kill test behind `make soak` (docs/crash-consistency.md).

A backend on 127.0.0.1 that fails at random (5xx, 202, 429, connection
resets, slow and too-slow answers) and records every 2xx it gave per
key and version; a producer dropping thousands of envelopes (several
versions per key, in shuffled order, so that supersede runs both ways)
plus some junk files; and the release-built daemon killed with SIGKILL
at random moments, dozens of times, and restarted. Afterwards it checks:

  delivered   every dropped (key, version) was answered 2xx, or was
              superseded by a version >= it of the same key that was
              answered 2xx; so the newest version of every key was
              answered 2xx at least once ("every item")
  finished    every done/KEY holds a (key, version) the backend answered
              2xx; snapshots finished without delivery are named
              KEY.superseded-VERSION[.N] and are the only other files there
  accounted   every dropped file is accounted for: junk in rejected/ with
              a .reason, envelopes delivered or superseded; nothing left in
              new/, queue/, hold/ or tmp/
  duplicates  a 2xx repeated for one (key, version) is explained by a kill
              (at most MaxConcurrentDeliveries per kill, the attempts that
              can be in flight) or by an answer slower than Timeout=; none
              otherwise
  no hammer   no attempt of a key before the next-attempt time persisted in
              queue/KEY.state when the daemon was killed
  ledger      the ledger (LedgerFile=) names no version the backend did not
              answer 2xx, and holds every delivered snapshot in done/ at
              its version, after all the kills (its writes are lost by a
              kill, never invented; the start catches up from done/)
  remembered  done/ emptied as DoneRetention= would, the daemon started
              again and every key's newest answered version dropped again
              with an older one: none reaches the backend again (the
              ledger supersedes them)

It prints the counts and exits 1 on any violation. Python stdlib only.
Parameters (environment): SOAK_KEYS (800), SOAK_MAX_VERSIONS (5),
SOAK_KILLS (40), SOAK_MAX_UP seconds between kills (2.5), SOAK_JUNK
fraction of junk files (0.02), SOAK_SEED (random), SOAK_DRAIN_TIMEOUT
seconds (240), SOAK_KEEP=1 keeps the spool directory.
"""

import http.server
import json
import os
import sqlite3
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

TIMEOUT_SECONDS = 2
MAX_CONCURRENT = 4
# Early-attempt tolerance: the daemon and this script read the same wall
# clock, a few ms apart.
TOLERANCE = 0.05

# The one place where daemon settings for the soak are written. The soak drops
# unsigned envelopes, which App Store verification (the default) refuses.
VERIFICATION_SECTION = os.environ.get("SOAK_VERIFICATION_SECTION", "[Verification]\nMode=none\nAcceptEnvelopes=yes\n")


def env_number(name, default, kind=int):
    value = os.environ.get(name)
    return kind(value) if value else default


class Backend:
    """Answers at random and records what it answered."""

    def __init__(self, rng):
        self.rng = rng
        self.lock = threading.Lock()
        self.requests = []      # (time, key, version)
        self.ok = []            # (request time, answer time, key, version, late)
        self.faults = {"503": 0, "202": 0, "429": 0, "reset": 0, "slow": 0, "too-slow": 0}
        self.mode_all_ok = False

    def decide(self):
        with self.lock:
            roll = self.rng.random()
        if self.mode_all_ok:
            return "ok"
        for name, share in (("503", 0.12), ("202", 0.05), ("429", 0.03), ("reset", 0.05),
                            ("slow", 0.05), ("too-slow", 0.02)):
            if roll < share:
                return name
            roll -= share
        return "ok"

    def serve(self):
        backend = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def finish(self):
                try:
                    super().finish()
                except OSError:
                    pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                self.rfile.read(length)
                key, _, version = (self.headers.get("Idempotency-Key") or "").rpartition(":")
                now = time.time()
                with backend.lock:
                    backend.requests.append((now, key, version))
                decision = backend.decide()
                if decision != "ok":
                    with backend.lock:
                        backend.faults[decision] += 1
                if decision == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                if decision in ("503", "202", "429"):
                    headers = [("Retry-After", "1")] if decision == "429" else []
                    return self.answer(int(decision), headers)
                late = False
                if decision == "slow":
                    time.sleep(backend.rng.uniform(0.2, 0.8))
                elif decision == "too-slow":
                    time.sleep(TIMEOUT_SECONDS + 1)
                    late = True
                # Recorded before the answer is written: from here on the
                # backend has applied the item, whether or not txrecon hears it.
                with backend.lock:
                    backend.ok.append((now, time.time(), key, version, late))
                self.answer(200 if backend.rng.random() < 0.5 else 204, [])

            def answer(self, status, headers):
                try:
                    self.send_response(status)
                    for name, value in headers:
                        self.send_header(name, value)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    self.wfile.flush()
                except OSError:
                    self.close_connection = True

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self.server.server_address[1]


def envelope(key, version):
    return json.dumps({"id": key, "version": version, "payload": {"amount": version, "note": "soak"}})


JUNK = [b"", b"\x00\xff\xfe binary \x01", b'{"id": "half', b"\xc3\x28 not utf-8", b"[" * 100 + b"]" * 100]


class Producer:
    """Drops every file the Maildir way (tmp/, then rename into new/)."""

    def __init__(self, root, rng, keys, max_versions, junk_share):
        self.root = root
        self.items = []         # (key, version)
        for index in range(keys):
            key = "soak-%05d" % index
            for version in range(1, rng.randint(1, max_versions) + 1):
                self.items.append((key, version))
        rng.shuffle(self.items)
        self.junk = [JUNK[i % len(JUNK)] for i in range(int(len(self.items) * junk_share))]
        self.files = [("item", item) for item in self.items] + [("junk", body) for body in self.junk]
        rng.shuffle(self.files)
        self.dropped = 0
        self.done = threading.Event()

    def run(self, seconds):
        pause = seconds / max(1, len(self.files))
        for serial, (kind, what) in enumerate(self.files):
            name = "soak-%06d.%d" % (serial, os.getpid())
            data = envelope(*what).encode() if kind == "item" else what
            temporary = os.path.join(self.root, "tmp", name)
            with open(temporary, "wb") as handle:
                handle.write(data)
            os.rename(temporary, os.path.join(self.root, "new", name))
            self.dropped += 1
            time.sleep(pause)
        self.done.set()


def read_ledger(path):
    """{key: version} of what the ledger says `backend` confirmed (the
    soak's envelopes have integer versions)."""
    connection = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        rows = connection.execute(
            "SELECT key, version_primary FROM confirmations WHERE destination = 'backend'").fetchall()
    finally:
        connection.close()
    return {key: version for key, version in rows}


def delivered_snapshots(root):
    """{key: version} of the delivered snapshots in done/ (done/KEY)."""
    delivered = {}
    done = os.path.join(root, "done")
    for name in os.listdir(done):
        if "." in name:
            continue
        with open(os.path.join(done, name)) as handle:
            item = json.load(handle)
        delivered[item["id"]] = item["version"]
    return delivered


def replay_after_reaping(root, start, backend, delivered):
    """Empties done/ as DoneRetention= would, starts the daemon again, drops
    each delivered key's version again and the one before it, and waits
    until all are superseded. Returns the (key, version) pairs that reached
    the backend again, and whether new/ and queue/ drained."""
    for name in os.listdir(os.path.join(root, "done")):
        os.unlink(os.path.join(root, "done", name))
    backend.mode_all_ok = True
    with backend.lock:
        seen = len(backend.requests)
    process = start()
    wait_until_running(root, process.pid)
    serial = 0
    for key, version in delivered.items():
        for old in {version, max(1, version - 1)}:
            name = "again-%06d" % serial
            serial += 1
            temporary = os.path.join(root, "tmp", name)
            with open(temporary, "w") as handle:
                handle.write(envelope(key, old))
            os.rename(temporary, os.path.join(root, "new", name))
    deadline = time.time() + 60
    drained = False
    while time.time() < deadline:
        if not os.listdir(os.path.join(root, "new")) and not os.listdir(os.path.join(root, "queue")):
            drained = True
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)
    with backend.lock:
        again = [(key, version) for _, key, version in backend.requests[seen:]]
    return again, drained


def pending_keys(root):
    """Keys with a snapshot in queue/, read while no daemon runs."""
    return {decode_key(name) for name in os.listdir(os.path.join(root, "queue"))
            if "." not in name}


def wait_until_running(root, pid, limit=30):
    """Waits for the daemon's status file to show it running (READY=1 was sent)."""
    deadline = time.time() + limit
    while time.time() < deadline:
        try:
            with open(os.path.join(root, "txrecon.status")) as handle:
                status = json.load(handle)
            if status.get("pid") == pid and status.get("phase") == "running":
                return True
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return False


def persisted_next_attempts(root):
    """queue/KEY.state -> {key: nextAttemptAt in seconds}, read while no daemon runs.

    A state without its item is the record of a delivered item that a kill
    kept from following it into done/; the next start removes it."""
    found = {}
    queue = os.path.join(root, "queue")
    names = set(os.listdir(queue))
    for name in names:
        if not name.endswith(".state") or name[:-6] not in names:
            continue
        try:
            with open(os.path.join(queue, name)) as handle:
                state = json.load(handle)
        except (OSError, ValueError):
            continue
        if "nextAttemptAt" in state:
            found[decode_key(name[:-6])] = state["nextAttemptAt"] / 1000
    return found


def decode_key(file_name):
    out = bytearray()
    index = 0
    while index < len(file_name):
        if file_name[index] == "%":
            out.append(int(file_name[index + 1:index + 3], 16))
            index += 3
        else:
            out.append(ord(file_name[index]))
            index += 1
    return out.decode()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/txrecon"
    seed = env_number("SOAK_SEED", random.randrange(1 << 30))
    keys = env_number("SOAK_KEYS", 800)
    max_versions = env_number("SOAK_MAX_VERSIONS", 5)
    kills = env_number("SOAK_KILLS", 40)
    max_up = env_number("SOAK_MAX_UP", 2.5, float)
    junk_share = env_number("SOAK_JUNK", 0.02, float)
    drain_timeout = env_number("SOAK_DRAIN_TIMEOUT", 240, float)
    rng = random.Random(seed)
    print("soak: seed %d (SOAK_SEED=%d reproduces the schedule), binary %s" % (seed, seed, binary), flush=True)

    work = tempfile.mkdtemp(prefix="txrecon-soak.")
    root = os.path.join(work, "spool")
    for sub in ("tmp", "new"):
        os.makedirs(os.path.join(root, sub))
    backend = Backend(random.Random(seed + 1))
    port = backend.serve()
    config = os.path.join(work, "txrecon.conf")
    with open(config, "w") as handle:
        handle.write("[Spool]\nDirectory=%s\nLedgerFile=%s\n\n[Backend]\nURL=http://127.0.0.1:%d/soak\nTimeout=%ds\n\n"
                     "[Delivery]\nRetryDelays=200ms 500ms 1s 2s\nMaxConcurrentDeliveries=%d\n\n%s\n"
                     % (root, os.path.join(work, "state", "ledger.sqlite3"), port, TIMEOUT_SECONDS, MAX_CONCURRENT,
                        VERIFICATION_SECTION))
    log = open(os.path.join(work, "daemon.log"), "ab")

    def start():
        return subprocess.Popen([binary, "run", "--config", config], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL)

    producer = Producer(root, rng, keys, max_versions, junk_share)
    produce_seconds = kills * (max_up / 2 + 0.15) * 0.8
    print("soak: %d envelopes for %d keys and %d junk files over %.0fs; %d SIGKILLs"
          % (len(producer.items), keys, len(producer.junk), produce_seconds, kills), flush=True)
    threading.Thread(target=producer.run, args=(produce_seconds,), daemon=True).start()

    runs = []       # (start time, end time, killed, persisted next attempts, pending keys at the end)
    log_path = os.path.join(work, "daemon.log")
    log_spans = []  # per run: where its lines are in daemon.log (start, end offsets)
    early = []
    pulled_in = 0
    after_restart = 0
    pending_after_restart = 0
    due_after_restart = 0
    for _ in range(kills):
        started = time.time()
        log_start = os.path.getsize(log_path)
        process = start()
        time.sleep(rng.uniform(0.02, max_up))
        process.send_signal(signal.SIGKILL)
        process.wait()
        ended = time.time()
        runs.append((started, ended, True, persisted_next_attempts(root), pending_keys(root)))
        log_spans.append((log_start, os.path.getsize(log_path)))

    producer.done.wait()
    started = time.time()
    log_start = os.path.getsize(log_path)
    process = start()
    running = wait_until_running(root, process.pid)
    deadline = started + drain_timeout
    drained = False
    while running and time.time() < deadline:
        pending = sum(len(os.listdir(os.path.join(root, sub))) for sub in ("new", "queue"))
        if pending == 0:
            drained = True
            break
        if time.time() > started + drain_timeout * 0.75:
            backend.mode_all_ok = True   # a last chance for anything unlucky; reported below
        time.sleep(0.2)
    process.send_signal(signal.SIGTERM)
    final_status = process.wait(timeout=30)
    runs.append((started, time.time(), False, {}, set()))
    log_spans.append((log_start, os.path.getsize(log_path)))
    ledger_rows = read_ledger(os.path.join(work, "state", "ledger.sqlite3"))
    delivered_at_stop = delivered_snapshots(root)

    # --- checks ---
    violations = []
    with backend.lock:
        requests = list(backend.requests)
        answers = list(backend.ok)
    ok = {}
    for asked, answered, key, version, late in answers:
        ok.setdefault((key, int(version)), []).append((asked, answered, late))

    # no hammer: attempts after each restart vs the times persisted at the
    # kill. The one exception is the daemon's own recovery: once it has
    # called the backend failing and then got a 2xx, it makes every key that
    # waited on the backend due at once. An early attempt counts as pulled
    # in when that run logged "backend recovered" and the backend had
    # answered a 2xx in that run before the attempt.
    with open(log_path, "rb") as daemon_log:
        log_bytes = daemon_log.read()
    for index in range(1, len(runs)):
        persisted, pending = runs[index - 1][3], runs[index - 1][4]
        begin, end = runs[index][0], runs[index][1]
        span = log_spans[index]
        recovered = b"backend recovered" in log_bytes[span[0]:span[1]]
        first_ok = min((answered for _, answered, _, _, _ in answers if begin <= answered <= end), default=None)
        due_after_restart += sum(1 for key in pending if persisted.get(key, 0) <= begin + 1)
        for moment, key, _ in requests:
            if begin <= moment <= end:
                if moment < begin + 1:
                    after_restart += 1
                    if key in pending:
                        pending_after_restart += 1
                due = persisted.get(key)
                if due is not None and moment < due - TOLERANCE:
                    if recovered and first_ok is not None and moment >= first_ok:
                        pulled_in += 1
                    else:
                        early.append((key, due - moment))
    deferred_at_kills = sum(len(run[3]) for run in runs)
    if early:
        violations.append("%d attempts before their persisted next-attempt time, e.g. %s" % (len(early), early[:3]))

    # delivered / superseded
    done = os.listdir(os.path.join(root, "done"))
    superseded = {}
    plain = []
    for name in done:
        if name.endswith(".state"):
            continue  # the failure record of a retried item, moved in beside it
        if ".superseded-" in name:
            key_part, _, rest = name.partition(".superseded-")
            version = int(rest.split(".")[0].rstrip("r"))
            superseded.setdefault((decode_key(key_part), version), 0)
            superseded[(decode_key(key_part), version)] += 1
        else:
            plain.append(name)
    best = {}
    for (key, version) in ok:
        best[key] = max(best.get(key, 0), version)
    lost = []
    for key, version in producer.items:
        if (key, version) in ok:
            continue
        if (key, version) in superseded and best.get(key, 0) >= version:
            continue
        lost.append((key, version))
    if lost:
        violations.append("%d dropped items neither answered 2xx nor superseded by a delivered version: %s"
                          % (len(lost), lost[:5]))
    latest = {}
    for key, version in producer.items:
        latest[key] = max(latest.get(key, 0), version)
    latest_missing = [key for key, version in latest.items() if (key, version) not in ok]
    if latest_missing:
        violations.append("%d keys whose newest version was never answered 2xx: %s" % (len(latest_missing), latest_missing[:5]))

    # finished only with a 2xx
    finished_without = []
    for name in plain:
        with open(os.path.join(root, "done", name)) as handle:
            item = json.load(handle)
        if (item["id"], item["version"]) not in ok:
            finished_without.append(name)
    if finished_without:
        violations.append("%d files in done/ the backend never answered 2xx: %s" % (len(finished_without), finished_without[:5]))
    unknown_superseded = [entry for entry in superseded if entry not in set(producer.items)]
    if unknown_superseded:
        violations.append("superseded files that were never dropped: %s" % unknown_superseded[:5])

    # accounted: nothing left behind, junk rejected with reasons
    leftovers = {sub: sorted(os.listdir(os.path.join(root, sub))) for sub in ("new", "queue", "hold", "tmp")}
    for sub, names in leftovers.items():
        if names:
            violations.append("%d files left in %s/: %s" % (len(names), sub, names[:5]))
    # receipts/ and outbox/ the daemon makes at every start (StoreKit 1
    # receipts stored once; the answers for Apple), even when empty.
    expected_root = {"tmp", "new", "queue", "hold", "rejected", "done", "ctl", "receipts", "outbox",
                     "txrecon.lock", "txrecon.status"}
    strays = sorted(set(os.listdir(root)) - expected_root)
    if strays:
        violations.append("files outside the spool's directories: %s" % strays)
    rejected = os.listdir(os.path.join(root, "rejected"))
    rejected_files = [name for name in rejected if not name.endswith(".reason")]
    reasons = [name for name in rejected if name.endswith(".reason")]
    if len(rejected_files) != len(producer.junk) or len(reasons) != len(rejected_files):
        violations.append("%d junk files dropped, %d in rejected/ with %d reasons"
                          % (len(producer.junk), len(rejected_files), len(reasons)))

    # duplicates: each explained by a kill or by an answer slower than Timeout=
    kill_times = [run[1] for run in runs if run[2]]
    by_kill = {}
    late_duplicates = 0
    unexplained = []
    duplicates = 0
    for entry, moments in ok.items():
        moments.sort()
        for previous, current in zip(moments, moments[1:]):
            duplicates += 1
            if previous[2]:
                late_duplicates += 1
                continue
            # A kill after the earlier request was sent and before the later
            # answer: the daemon died before it could finish the item (it may
            # even have died before the earlier answer arrived).
            kill = next((k for k in kill_times if previous[0] <= k <= current[1]), None)
            if kill is None:
                unexplained.append(entry)
            else:
                by_kill[kill] = by_kill.get(kill, 0) + 1
    worst = max(by_kill.values(), default=0)
    if worst > MAX_CONCURRENT:
        violations.append("a kill caused %d duplicates, more than the %d attempts that can be in flight"
                          % (worst, MAX_CONCURRENT))
    if unexplained:
        violations.append("%d duplicates without a kill or a late answer: %s" % (len(unexplained), unexplained[:5]))
    # the ledger: only confirmed versions, and every delivered snapshot
    invented = [(key, version) for key, version in ledger_rows.items() if (key, version) not in ok]
    if invented:
        violations.append("%d ledger rows name a version the backend never answered 2xx: %s"
                          % (len(invented), invented[:5]))
    unrecorded = [(key, version) for key, version in delivered_at_stop.items()
                  if ledger_rows.get(key, -1) < version]
    if unrecorded:
        violations.append("%d delivered snapshots in done/ the ledger does not hold at their version: %s"
                          % (len(unrecorded), unrecorded[:5]))
    # Last, for it changes done/, which the checks above read.
    repeated, replay_drained = replay_after_reaping(root, start, backend, delivered_at_stop)
    backend.server.shutdown()
    if repeated:
        violations.append("%d confirmed snapshots reached the backend again after done/ was emptied: %s"
                          % (len(repeated), repeated[:5]))
    if not replay_drained:
        violations.append("the snapshots dropped again after done/ was emptied were not all superseded within 60s")
    if not drained:
        violations.append("new/ and queue/ did not drain within %.0fs" % drain_timeout)
    if not running:
        violations.append("the last daemon did not report running within 30s")
    if final_status != 0:
        violations.append("the last daemon exited %s after SIGTERM" % final_status)

    faults = dict(backend.faults)
    injected = sum(faults.values())
    print("soak: inputs dropped      %d (%d envelopes for %d keys, %d junk)"
          % (producer.dropped, len(producer.items), keys, len(producer.junk)))
    print("soak: SIGKILLs            %d" % kills)
    print("soak: backend requests    %d; faults injected %d (%s)"
          % (len(requests), injected, ", ".join("%s %d" % item for item in sorted(faults.items()))))
    print("soak: answered 2xx        %d (key, version) pairs; newest version of all %d keys: %s"
          % (len(ok), len(latest), "yes" if not latest_missing else "NO"))
    print("soak: superseded          %d snapshots, each by a delivered version >= it" % sum(superseded.values()))
    print("soak: rejected            %d junk files, each with a reason" % len(rejected_files))
    print("soak: lost                %d" % len(lost))
    print("soak: ledger              %d rows after %d kills, %d naming a version not answered 2xx, %d delivered "
          "snapshots it lacks; after done/ was emptied %d old snapshots went out again"
          % (len(ledger_rows), kills, len(invented), len(unrecorded), len(repeated)))
    print("soak: finished w/o 2xx    %d" % len(finished_without))
    print("soak: duplicates          %d (%d after kills, at most %d for one kill; %d after answers slower "
          "than Timeout=; %d unexplained)" % (duplicates, sum(by_kill.values()), worst, late_duplicates, len(unexplained)))
    print("soak: restarts            %d requests in the first second after restarts, %d of them for the %d "
          "items left queued by the kills that were due in that second; %d items had a persisted next attempt, "
          "%d attempts came before it (and %d were pulled in by a recovery after a 2xx)"
          % (after_restart, pending_after_restart, due_after_restart, deferred_at_kills, len(early), pulled_in))
    if backend.mode_all_ok:
        print("soak: note                the backend stopped failing for the end of the drain")
    log.close()
    if violations:
        print("soak: FAILED; spool and daemon.log kept in %s" % work)
        for violation in violations:
            print("soak: violation: " + violation)
        print("soak: 0 passed, 1 failed")
        return 1
    if os.environ.get("SOAK_KEEP") == "1":
        print("soak: spool kept in %s" % work)
    else:
        shutil.rmtree(work)
    print("soak: 1 passed, 0 failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
