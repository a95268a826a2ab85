#!/usr/bin/env python3
"""Instructions per delivered envelope, counted by callgrind.

A drain's CPU time on this shared two-core host scatters by a fifth from one
run to the next, which hides a change of a few per cent (issue 44 asks each
step to leave no row more than 2 % worse). Instructions scatter far less.
For each binary, alternately: a drain of --large envelopes and one of
--small from new/ to nginx on loopback (204 to every POST), each under
`valgrind --tool=callgrind`, until the daemon's status says every envelope
was delivered; then SIGTERM (a clean stop writes what the ledger's writer
still holds, so its rows are counted too).
The difference of the two totals divided by the difference of the counts is
the per-item figure (start-up and shutdown cancel out). Every thread of the
daemon is counted; nginx is not.

Usage: bench/instructions.py BINARY [BINARY...] [--runs N] [--large N] [--small N]
Prints one line per run and the median per binary. Needs valgrind; nginx as
bench.py finds it. Minutes per run (callgrind runs the daemon ~50x slower).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (bench.py: nginx, envelopes, keys)


def status(spool):
    try:
        with open(os.path.join(spool, "txrecon.status")) as file:
            return json.load(file)
    except (OSError, ValueError):
        return {}


def drain(binary, count, url, work):
    """callgrind's total instruction count for a daemon that drains `count`."""
    root = tempfile.mkdtemp(prefix=f"drain-{count}-", dir=work)
    spool = os.path.join(root, "spool")
    for directory in ("new", "tmp"):
        os.makedirs(os.path.join(spool, directory))
    config = os.path.join(root, "txrecon.conf")
    with open(config, "w") as out:
        out.write(f"[Spool]\nDirectory={spool}\nDoneRetention=3d\nLedgerFile={root}/ledger.sqlite3\n\n"
                  f"[Backend]\nURL={url}\n\n[Delivery]\nMaxConcurrentDeliveries=8\n\n"
                  "[Verification]\nMode=none\nAcceptEnvelopes=yes\n")
    bench.write_envelopes(os.path.join(spool, "new"), bench.keys("i", count))
    counts = os.path.join(root, "callgrind.out")
    with open(os.path.join(root, "txrecon.log"), "wb") as log:
        daemon = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={counts}",
                                   "--fair-sched=yes", binary, "run", "--config", config],
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 1800
        while True:
            if status(spool).get("delivered", 0) >= count:
                break
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"instructions: the drain of {count} did not end; see {root}/txrecon.log")
            time.sleep(0.5)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait()
    with open(counts) as lines:
        for line in lines:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise SystemExit(f"instructions: no total in {counts}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--large", type=int, default=6000)
    parser.add_argument("--small", type=int, default=2000)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions: valgrind is missing (apt-get install valgrind)")
    # SIGTERM and SIGINT end the run through the `finally`s below, which
    # stop the daemon under callgrind and nginx.
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: sys.exit(1))
    work = tempfile.mkdtemp(prefix="txrecon-instructions-")
    os.chmod(work, 0o711)
    nginx = bench.Nginx(bench.find_nginx(os.path.join(bench.REPO, ".build", "bench", "nginx")),
                        os.path.join(work, "nginx"), 1)
    nginx.start()
    results = {binary: [] for binary in args.binaries}
    try:
        for run in range(args.runs):
            for binary in args.binaries:
                large = drain(binary, args.large, nginx.url(nginx.fast_port), work)
                small = drain(binary, args.small, nginx.url(nginx.fast_port), work)
                per_item = (large - small) / (args.large - args.small)
                results[binary].append(per_item)
                print(f"run {run + 1}: {binary}: {per_item:,.0f} instructions per item", flush=True)
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)
    for binary, figures in results.items():
        print(f"{binary}: median {sorted(figures)[len(figures) // 2]:,.0f} instructions per item "
              f"({', '.join(f'{figure:,.0f}' for figure in figures)})")


if __name__ == "__main__":
    main()
