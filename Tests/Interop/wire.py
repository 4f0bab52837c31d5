#!/usr/bin/env python3
"""Runs two signaling peers, each one's stdout lines fed to the other's stdin.

usage: wire.py TIMEOUT '["cmd", "arg", ...]' '["cmd", "arg", ...]'
With WIRE_LOG_PREFIX set, each peer's stderr goes to PREFIX.first.err /
PREFIX.second.err and the signals it sent to PREFIX.first.out / PREFIX.second.out. When one exits, the other's stdin is closed. Prints
one JSON line at the end: {"first": status, "second": status, "cpu": [seconds, seconds]}
(a status is null if the peer was killed; cpu is each peer's user+system time).
"""
import json
import os
import selectors
import subprocess
import sys
import time

timeout = float(sys.argv[1])
commands = [json.loads(sys.argv[2]), json.loads(sys.argv[3])]
prefix = os.environ.get("WIRE_LOG_PREFIX")
errors = [open(f"{prefix}.{name}.err", "w") if prefix else subprocess.DEVNULL for name in ("first", "second")]
peers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors[index])
         for index, command in enumerate(commands)]


outputs = [open(f"{prefix}.{name}.out", "wb") if prefix else None for name in ("first", "second")]


def forward(index, data):
    """Passes what peer `index` printed to the other peer's stdin, as it comes
    (whole lines or not: the reader splits lines), and logs it."""
    if outputs[index]:
        outputs[index].write(data)
        outputs[index].flush()
    target = peers[1 - index].stdin
    try:
        os.write(target.fileno(), data)
    except (BrokenPipeError, ValueError, OSError):
        pass


def close_stdin(index):
    try:
        peers[index].stdin.close()
    except (BrokenPipeError, ValueError, OSError):
        pass


# One thread relays both ways (select, no Python threads: a relay thread
# waiting for the GIL added up to milliseconds per signal to setup times).
selector = selectors.DefaultSelector()
for index, peer in enumerate(peers):
    selector.register(peer.stdout.fileno(), selectors.EVENT_READ, index)
statuses, cpu = [None, None], [0.0, 0.0]
deadline = time.monotonic() + timeout
pending = {peer.pid: index for index, peer in enumerate(peers)}


def relay(wait):
    """Forwards what is ready within `wait` seconds."""
    if not selector.get_map():
        time.sleep(wait)
        return
    for key, _ in selector.select(timeout=wait):
        data = os.read(key.fd, 65536)
        if data:
            forward(key.data, data)
        else:
            # The source closed its stdout (it is exiting): the signaling channel is gone.
            selector.unregister(key.fd)
            close_stdin(1 - key.data)


while pending and time.monotonic() < deadline:
    relay(0.01)
    for pid, index in list(pending.items()):
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            peers[index].returncode = os.waitstatus_to_exitcode(status)
            statuses[index] = peers[index].returncode
            cpu[index] = round(usage.ru_utime + usage.ru_stime, 3)
            del pending[pid]
            # What it printed before exiting still goes through, then its peer's stdin closes.
            drain_deadline = time.monotonic() + 1
            while peers[index].stdout.fileno() in selector.get_map() and time.monotonic() < drain_deadline:
                relay(0.05)
            close_stdin(1 - index)
for pid, index in pending.items():
    peers[index].kill()
    os.wait4(pid, 0)
print(json.dumps({"first": statuses[0], "second": statuses[1], "cpu": cpu}), flush=True)
