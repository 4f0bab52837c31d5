#!/usr/bin/env python3
"""An answering bot that takes call after call must end as it began.

One bootstrap node, one `carrier listen --accept-friends --answer
--receive-dir` bot (Bob), and a caller (Alice's `carrier daemon`) that places
CALLS calls one after another with audio both ways: every third one sends a
file over the call, most end by their duration, every seventh by Ctrl-C on
the `carrier call` command, and every twenty-fifth by killing the caller's
whole process mid-call (the daemon is started again for the next call). After
ten calls to warm up, and again at the end (once the bot has seen the last
call end), it reads the bot's threads, open descriptors, heap in use and
resident memory from its control socket (`status`). Prints the figures; exit 1 if the thread or descriptor count did
not come back, or the heap grew by more than LIMIT_KB.
Usage: soak_calls.py CARRIER_BINARY
Environment: CALLS (200), LIMIT_KB (1024).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_calls import Lines, carrier, stop_all  # noqa: E402

CARRIER = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/carrier"))
CALLS = int(os.environ.get("CALLS", "200"))
LIMIT_KB = int(os.environ.get("LIMIT_KB", "1024"))
WARM_UP = 10


def figures(socket_path):
    """The bot's threads, descriptors, resident memory and heap in use, from its control socket's status."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(10)
    connection.connect(socket_path)
    connection.sendall(b'{"op":"status"}\n')
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(65536)
        if not chunk:
            break
        data += chunk
    connection.close()
    return json.loads(data)["process"]


def count(listener, text):
    return sum(text in line for line in list(listener.lines))


def settled(bot_socket, baseline, listener, calls, timeout=30):
    """Waits until the bot has seen `calls` calls end and its threads and descriptors are back (or timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if count(listener, '"callEnded"') >= calls:
            now = figures(bot_socket)
            if baseline is None or (now["threads"] <= baseline["threads"] and now["fds"] <= baseline["fds"]):
                return now
        time.sleep(0.2)
    return figures(bot_socket)


def main():
    work = tempfile.mkdtemp(prefix="carrier-soak-calls-")
    node = listener = daemon = None
    try:
        node = Lines([CARRIER, "node", "--host", "127.0.0.1"])
        entry, _ = node.wait(lambda line: line.startswith("127.0.0.1:"), 30)
        common = ["--bootstrap", entry, "--loopback"]
        alice, bob = os.path.join(work, "alice"), os.path.join(work, "bob")
        tone = os.path.join(ROOT, "media", "tone-440-660.wav")
        payload = os.path.join(work, "payload.bin")
        with open(payload, "wb") as out:
            out.write(os.urandom(200_000))
        bob_info = json.loads(carrier("id", "--json", "--data", bob)[-1])
        listener = Lines([CARRIER, "listen", "--accept-friends", "--answer", "--audio", tone, "--loop",
                          "--receive-dir", os.path.join(work, "in"), "--json", "--data", bob, *common])

        def start_daemon():
            process = Lines([CARRIER, "daemon", "--json", "--data", alice, *common])
            process.wait(lambda line: "daemonReady" in line, 30)
            return process

        daemon = start_daemon()
        carrier("friend", "add", bob_info["address"], "--wait", "120", "--data", alice, timeout=180)
        bot_socket = os.path.join(bob, "carrier.sock")
        baseline = None
        outcomes = {"duration": 0, "file": 0, "ctrl-c": 0, "killed": 0, "failed": 0}
        started = time.monotonic()
        for index in range(CALLS):
            if index == WARM_UP:
                baseline = settled(bot_socket, None, listener, WARM_UP)
            args = [CARRIER, "call", bob_info["userId"], "--audio", tone, "--loop", "--json", "--wait", "120",
                    "--data", alice]
            if index % 25 == 24 or index % 7 == 6:
                kind = "killed" if index % 25 == 24 else "ctrl-c"
                before = count(listener, '"state":"connected"')
                call = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                deadline = time.monotonic() + 60
                while count(listener, '"state":"connected"') <= before and time.monotonic() < deadline:
                    time.sleep(0.1)
                time.sleep(1)
                if kind == "killed":
                    daemon.process.send_signal(signal.SIGKILL)  # the caller vanishes mid-call
                    daemon.process.wait(10)
                    call.wait(30)
                    daemon = start_daemon()
                else:
                    call.send_signal(signal.SIGINT)
                    if call.wait(30) != 0:
                        kind = "failed"
            else:
                kind = "file" if index % 3 == 2 else "duration"
                extra = ["--send-file", payload] if kind == "file" else ["--duration", "1"]
                done = subprocess.run(args + extra, capture_output=True, text=True, timeout=180)
                if done.returncode != 0:
                    kind = "failed"
                    print(f"call {index}: {done.stderr[-300:]} {done.stdout[-600:]}", file=sys.stderr)
            outcomes[kind] += 1
            if index % 25 == 0:
                print(f"  {index} calls, {time.monotonic() - started:.0f} s, bot {figures(bot_socket)}", file=sys.stderr)
        end = settled(bot_socket, baseline, listener, CALLS, timeout=60)
        growth = end["heapKB"] - baseline["heapKB"]
        print(f"\nAn answering bot after {CALLS} calls one after another ({outcomes}), after {WARM_UP} to warm up:")
        print(f"  threads {baseline['threads']} -> {end['threads']}, descriptors {baseline['fds']} -> {end['fds']}, "
              f"heap in use {baseline['heapKB']} -> {end['heapKB']} kB ({growth:+d} kB), "
              f"resident {baseline['rssKB']} -> {end['rssKB']} kB")
        ok = end["threads"] <= baseline["threads"] and end["fds"] <= baseline["fds"] and growth <= LIMIT_KB \
            and outcomes["failed"] == 0
        print("  ok" if ok else "  NOT OK")
        return 0 if ok else 1
    finally:
        stop_all(daemon, listener, node)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
