#!/usr/bin/env python3
"""WebRTC transport benchmark, this stack side by side with aiortc in one run.

Connection setup (median of 5, createOffer to connected, on 127.0.0.1) and a
50 MB file over one reliable data channel (MB/s, and CPU seconds of each
side), plain and through a coturn relay started here. Prints a table with
the ratio to aiortc. Usage: bench_transport.py CARRIER_BINARY
"""
import base64
import hashlib
import hmac
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIRE = os.path.join(ROOT, "Tests", "Interop", "wire.py")
AIORTC = os.path.join(ROOT, "Tests", "Interop", "aiortc_peer.py")
CARRIER = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/carrier"))
RUNS = int(os.environ.get("RUNS", "5"))
MEGABYTES = int(os.environ.get("MEGABYTES", "50"))


def peers(stack, work, send, receive, turn=None):
    """The offer and answer command lines for one stack."""
    stats = [os.path.join(work, "offer.json"), os.path.join(work, "answer.json")]
    if stack == "carrier":
        offer = [CARRIER, "rtc", "offer", "--host-ip", "127.0.0.1", "--send-file", send, "--stats", stats[0]]
        answer = [CARRIER, "rtc", "answer", "--host-ip", "127.0.0.1", "--receive-dir", receive, "--stats", stats[1]]
        if turn:
            offer += ["--relay-only", "--turn", turn["url"], "--turn-user", turn["user"], "--turn-pass", turn["password"]]
    else:
        offer = ["python3", AIORTC, "--loopback", "offer", "--send-file", send, "--stats", stats[0]]
        answer = ["python3", AIORTC, "--loopback", "answer", "--receive-dir", receive, "--stats", stats[1]]
        if turn:
            offer += ["--relay-only", "--turn", turn["url"], "--turn-user", turn["user"], "--turn-pass", turn["password"]]
    return offer, answer, stats


def run(stack, send, turn=None):
    """One transfer; a failed run is retried once (aioice on loopback fails now and then)."""
    try:
        return run_once(stack, send, turn)
    except RuntimeError as error:
        print(f"retrying after: {error}", file=sys.stderr)
        return run_once(stack, send, turn)


def run_once(stack, send, turn=None):
    work = tempfile.mkdtemp(prefix="carrier-bench-")
    try:
        receive = os.path.join(work, "in")
        offer, answer, stats = peers(stack, work, send, receive, turn)
        out = subprocess.run([sys.executable, WIRE, "300", json.dumps(offer), json.dumps(answer)],
                             capture_output=True, text=True, timeout=330)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        offered = json.load(open(stats[0])) if os.path.exists(stats[0]) else {}
        if result["first"] != 0 or not offered.get("ok", False):
            raise RuntimeError(f"{stack} run failed: {result} {offered}")
        return offered, result["cpu"]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def start_coturn():
    port = random.randint(20000, 29999)
    secret = "bench-%d" % random.randint(0, 1 << 30)
    server = subprocess.Popen(["turnserver", "-n", "--listening-ip=127.0.0.1", "--relay-ip=127.0.0.1",
                               f"--listening-port={port}", f"--min-port={port + 10000}", f"--max-port={port + 10200}",
                               "--use-auth-secret", f"--static-auth-secret={secret}", "--realm=carrier.bench",
                               "--allow-loopback-peers", "--no-cli", "--no-tls", "--no-dtls", "--log-file=stdout",
                               "--simple-log"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    user = "%d:bench" % (int(time.time()) + 3600)
    password = base64.b64encode(hmac.new(secret.encode(), user.encode(), hashlib.sha1).digest()).decode()
    return server, {"url": f"turn:127.0.0.1:{port}", "user": user, "password": password}


def main():
    work = tempfile.mkdtemp(prefix="carrier-bench-files-")
    tiny, big = os.path.join(work, "tiny.bin"), os.path.join(work, "big.bin")
    with open(tiny, "wb") as handle:
        handle.write(b"x")
    with open(big, "wb") as handle:
        handle.write(os.urandom(MEGABYTES << 20))
    rows = []
    setup = {stack: statistics.median(run(stack, tiny)[0]["setupMs"] for _ in range(RUNS)) for stack in ("carrier", "aiortc")}
    rows.append(("setup, median of %d (ms)" % RUNS, setup["carrier"], setup["aiortc"], False))
    server, turn = start_coturn()
    try:
        for label, relay in (("", None), (" via TURN", turn)):
            results = {stack: run(stack, big, relay) for stack in ("carrier", "aiortc")}
            rows.append((f"{MEGABYTES} MB{label} (MB/s)", results["carrier"][0]["MBps"], results["aiortc"][0]["MBps"], True))
            for side, index in (("sender", 0), ("receiver", 1)):
                rows.append((f"{MEGABYTES} MB{label}, {side} CPU (s)", results["carrier"][1][index],
                             results["aiortc"][1][index], False))
    finally:
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)
    print("%-36s %10s %10s %9s" % ("WebRTC transport on 127.0.0.1", "carrier", "aiortc", "ratio"))
    for label, ours, theirs, higher_better in rows:
        ratio = (ours / theirs) if theirs else float("nan")
        print("%-36s %10.1f %10.1f %8.2fx%s" % (label, ours, theirs, ratio, "" if higher_better else " (lower is better)"))


if __name__ == "__main__":
    main()
