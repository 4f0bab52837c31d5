#!/usr/bin/env python3
"""How long a returning friend takes to reach a bot, when the friend is a new
process each time (a phone, a script): the pattern of issue 27, one step at a
time, beside raw c-toxcore on the same local network.

One bootstrap node (`carrier node`) on 127.0.0.1 and one listener; one friend
identity that befriends it once and then comes back RUNS times, 1.5 s after
its last process ended. Prints a line per run (seconds from the process's
start to its end, and the Unix time it began, to match with a capture) and a summary: the median, the slowest, and how many runs
took over 20 s.

MODE (all by default, in turn):
  raw   raw c-toxcore both ends (scripts/tox_befriend.c: `listen`, and
        `redial`, which stays 3 s once connected and stops with tox_kill);
  add   ours both ends: `carrier listen --accept-friends`, and the friend as
        `carrier friend add ADDRESS --wait 120` (connected, then it exits);
  call  ours both ends as soak_callers.py has them: the bot answers and
        records, and the friend is `carrier call BOT --audio … --duration 3`.

Usage: redial.py CARRIER_BINARY   (RUNS=20, MODE=raw,add,call)
Local discovery is off on both sides in every mode (ours: --loopback).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Lab"))
from bench_calls import Lines, stop_all  # noqa: E402
import lab_node  # noqa: E402
import labservices  # noqa: E402

CARRIER = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/carrier"))
RUNS = int(os.environ.get("RUNS", "20"))
MODES = os.environ.get("MODE", "raw,add,call").split(",")
SLOW = 20


def ours(mode, work, entry):
    """The bot and a function that runs the friend once (True if it reached the bot)."""
    common = ["--bootstrap", entry, "--loopback"]
    bot, caller = os.path.join(work, f"{mode}-bot"), os.path.join(work, f"{mode}-friend")
    info = json.loads(subprocess.run([CARRIER, "id", "--json", "--data", bot], capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1])
    extra = ["--answer", "--record", os.path.join(work, "rec"), "--host-ip", "127.0.0.1"] if mode == "call" else []
    listener = Lines([CARRIER, "listen", "--accept-friends", "--json", "--data", bot, *common, *extra])
    befriend = [CARRIER, "friend", "add", info["address"], "--wait", "120", "--json", "--data", caller, *common]
    tone = os.path.join(ROOT, "media", "tone-440-660.wav")
    if mode == "call":
        subprocess.run(befriend, capture_output=True, text=True, timeout=150)
        again = [CARRIER, "call", info["userId"], "--audio", tone, "--duration", "3", "--wait", "120", "--host-ip",
                 "127.0.0.1", "--json", "--data", caller, *common]
    else:
        again = befriend
    return listener, lambda: subprocess.run(again, capture_output=True, text=True, timeout=150).returncode == 0


def raw(binary, work, entry):
    host, port, key = entry.split(":")
    key = labservices.base58_to_hex(key)
    listener = Lines([binary, "listen", host, port, key])
    address = json.loads(listener.wait(lambda line: "address" in line, 10)[0])["address"]
    listener.wait(lambda line: "joinedMs" in line, 60)
    save = os.path.join(work, "raw-friend.tox")
    command = [binary, "redial", host, port, key, address, save]
    return listener, lambda: subprocess.run(command, capture_output=True, text=True, timeout=150).returncode == 0


def main():
    work = tempfile.mkdtemp(prefix="carrier-redial-")
    summaries = []
    try:
        binary = lab_node.build_raw(work, ["NO_LOCAL_DISCOVERY"]) if "raw" in MODES else None
        for mode in MODES:
            node = listener = None
            try:
                node = Lines([CARRIER, "node", "--json"])
                line, _ = node.wait(lambda text: "bootstrap" in text, 30)
                entry = json.loads(line)["bootstrap"]
                listener, once = raw(binary, work, entry) if mode == "raw" else ours(mode, work, entry)
                times, failed = [], 0
                for run in range(RUNS + 1):  # the first run befriends (raw) or is the first return
                    began, wall = time.monotonic(), time.time()
                    ok = once()
                    seconds = round(time.monotonic() - began, 1)
                    print(json.dumps({"mode": mode, "run": run, "ok": ok, "seconds": seconds, "began": round(wall, 3)}),
                          flush=True)
                    if run > 0:
                        times.append(seconds)
                        failed += not ok
                    time.sleep(1.5)  # the pattern under test: a new process 1.5 s after the last ended
                slow = sum(seconds > SLOW for seconds in times)
                summaries.append(f"{mode}: {len(times)} returns, {failed} failed, median {statistics.median(times):.1f} s, "
                                 f"slowest {max(times)} s, {slow} over {SLOW} s")
            finally:
                stop_all(listener, node)
        print("\n" + "\n".join(summaries))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
