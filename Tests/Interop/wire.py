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
import subprocess
import sys
import threading
import time

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
    # The source closed its stdout (it is exiting): the signaling channel is gone.
    try:
        target.stdin.close()
    except (BrokenPipeError, ValueError):
        pass


threads = [threading.Thread(target=pump, args=(peers[0], peers[1], outputs[0]), daemon=True),
           threading.Thread(target=pump, args=(peers[1], peers[0], outputs[1]), daemon=True)]
for thread in threads:
    thread.start()
statuses, cpu = [None, None], [0.0, 0.0]
deadline = time.monotonic() + timeout
pending = {peer.pid: index for index, peer in enumerate(peers)}
while pending and time.monotonic() < deadline:
    for pid, index in list(pending.items()):
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            peers[index].returncode = os.waitstatus_to_exitcode(status)
            statuses[index] = peers[index].returncode
            cpu[index] = round(usage.ru_utime + usage.ru_stime, 3)
            del pending[pid]
            try:
                peers[1 - index].stdin.close()
            except (BrokenPipeError, ValueError):
                pass
    time.sleep(0.01)
for pid, index in pending.items():
    peers[index].kill()
    os.wait4(pid, 0)
print(json.dumps({"first": statuses[0], "second": statuses[1], "cpu": cpu}), flush=True)
