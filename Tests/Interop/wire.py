#!/usr/bin/env python3
"""Runs two signaling peers, each one's stdout lines fed to the other's stdin.

usage: wire.py TIMEOUT '["cmd", "arg", ...]' '["cmd", "arg", ...]'
With WIRE_LOG_PREFIX set, each peer's stderr goes to PREFIX.first.err /
PREFIX.second.err and the signals it sent to PREFIX.first.out / PREFIX.second.out. When one exits, the other's stdin is closed. Prints
one JSON line at the end: {"first": status, "second": status} (null if killed).
"""
import json
import os
import subprocess
import sys
import threading

timeout = float(sys.argv[1])
commands = [json.loads(sys.argv[2]), json.loads(sys.argv[3])]
prefix = os.environ.get("WIRE_LOG_PREFIX")
errors = [open(f"{prefix}.{name}.err", "w") if prefix else subprocess.DEVNULL for name in ("first", "second")]
peers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors[index])
         for index, command in enumerate(commands)]


outputs = [open(f"{prefix}.{name}.out", "wb") if prefix else None for name in ("first", "second")]


def pump(source, target, log):
    for line in source.stdout:
        if log:
            log.write(line)
            log.flush()
        try:
            target.stdin.write(line)
            target.stdin.flush()
        except (BrokenPipeError, ValueError):
            break
    source.wait()
    try:
        target.stdin.close()
    except (BrokenPipeError, ValueError):
        pass


threads = [threading.Thread(target=pump, args=(peers[0], peers[1], outputs[0]), daemon=True),
           threading.Thread(target=pump, args=(peers[1], peers[0], outputs[1]), daemon=True)]
for thread in threads:
    thread.start()
statuses = []
for peer in peers:
    try:
        statuses.append(peer.wait(timeout=timeout))
    except subprocess.TimeoutExpired:
        peer.kill()
        peer.wait()
        statuses.append(None)
print(json.dumps({"first": statuses[0], "second": statuses[1]}), flush=True)
