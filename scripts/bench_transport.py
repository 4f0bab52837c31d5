#!/usr/bin/env python3
"""WebRTC transport benchmark, this stack side by side with aiortc in one run.

Connection setup (median of 5, createOffer to connected, on 127.0.0.1) and a
50 MB file over one reliable data channel (MB/s, and CPU seconds of each
side; the median of 3 transfers), plain and through a coturn relay started
here. The two stacks take turns, run by run, so that a noisy moment of the
machine does not land on one of them only. Prints a table with the ratio
to aiortc. Usage: bench_transport.py CARRIER_BINARY
Environment: RUNS (setups, 5), REPEAT (transfers, 3), MEGABYTES (50).
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
REPEAT = int(os.environ.get("REPEAT", "3"))
STACKS = ("carrier", "aiortc")
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


def taking_turns(times, measure):
    """`measure(stack)` `times` times for each stack, the stacks alternating."""
    results = {stack: [] for stack in STACKS}
    for _ in range(times):
        for stack in STACKS:
            results[stack].append(measure(stack))
    return results


def median(values):
    return statistics.median(list(values))


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
        handle.flush()
        os.fsync(handle.fileno())  # its write-back would otherwise compete with the first run
    rows = []
    setups = taking_turns(RUNS, lambda stack: run(stack, tiny)[0]["setupMs"])
    for stack in STACKS:
        print(f"setup, {stack} (ms): " + ", ".join("%.1f" % value for value in setups[stack]), file=sys.stderr)
    rows.append(("setup, median of %d (ms)" % RUNS, median(setups["carrier"]), median(setups["aiortc"]), False))
    server, turn = start_coturn()
    try:
        for label, relay in (("", None), (" via TURN", turn)):
            results = taking_turns(REPEAT, lambda stack: run(stack, big, relay))
            for stack in STACKS:
                print(f"{MEGABYTES} MB{label}, {stack}: " + ", ".join(
                    "%.1f MB/s (CPU %.2f / %.2f s)" % (offered["MBps"], cpu[0], cpu[1]) for offered, cpu in results[stack]),
                    file=sys.stderr)
            speed = {stack: median(offered["MBps"] for offered, _ in results[stack]) for stack in STACKS}
            rows.append((f"{MEGABYTES} MB{label} (MB/s)", speed["carrier"], speed["aiortc"], True))
            for side, index in (("sender", 0), ("receiver", 1)):
                cpu = {stack: median(cpu[index] for _, cpu in results[stack]) for stack in STACKS}
                rows.append((f"{MEGABYTES} MB{label}, {side} CPU (s)", cpu["carrier"], cpu["aiortc"], False))
    finally:
        server.terminate()
        shutil.rmtree(work, ignore_errors=True)
    print("%-36s %10s %10s %9s" % ("WebRTC transport on 127.0.0.1", "carrier", "aiortc", "ratio"))
    print("(transfers: median of %d)" % REPEAT)
    for label, ours, theirs, higher_better in rows:
        ratio = (ours / theirs) if theirs else float("nan")
        print("%-36s %10.1f %10.1f %8.2fx%s" % (label, ours, theirs, ratio, "" if higher_better else " (lower is better)"))


if __name__ == "__main__":
    main()
