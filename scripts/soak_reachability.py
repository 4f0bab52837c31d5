#!/usr/bin/env python3
"""A long-running node that many short-lived peers come to and leave:
one bootstrap node, one `carrier listen --accept-friends` bot, then PEERS
(default 40) processes one after another. MODE=new (default): each a new
identity that joins, befriends the bot, waits until the bot is connected and
exits. MODE=same: one identity, befriended once, started again each time
to send the bot a message and wait for its receipt (as a caller that calls
and exits). Prints, per peer, the seconds to reach the bot, and a summary;
exit 1 if one never did."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

carrier = sys.argv[1] if len(sys.argv) > 1 else ".build/release/carrier"
peers = int(os.environ.get("PEERS", "40"))
wait = os.environ.get("WAIT", "90")
root = tempfile.mkdtemp(prefix="carrier-soak-")
procs = []
try:
    node = subprocess.Popen([carrier, "node", "--host", "127.0.0.1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(node)
    entry = node.stdout.readline().strip()
    common = ["--bootstrap", entry, "--loopback"]
    bot_id = json.loads(subprocess.run([carrier, "id", "--json", "--data", root + "/bot"], capture_output=True, text=True).stdout.splitlines()[-1])
    bot = subprocess.Popen([carrier, "listen", "--accept-friends", "--data", root + "/bot"] + common,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(bot)
    same = os.environ.get("MODE", "new") == "same"
    if same:
        subprocess.run([carrier, "friend", "add", bot_id["address"], "--wait", wait, "--data", root + "/caller"] + common,
                       capture_output=True, text=True)
    times, failures = [], 0
    for index in range(peers):
        started = time.monotonic()
        if same:
            done = subprocess.run([carrier, "message", bot_id["userId"], "call %d" % index, "--wait-receipt", wait,
                                   "--data", root + "/caller"] + common, capture_output=True, text=True)
        else:
            done = subprocess.run([carrier, "friend", "add", bot_id["address"], "--wait", wait, "--json",
                                   "--data", "%s/peer-%d" % (root, index)] + common, capture_output=True, text=True)
        seconds = time.monotonic() - started
        ok = done.returncode == 0
        failures += 0 if ok else 1
        times.append(seconds)
        print("peer %3d: %s in %5.1f s" % (index + 1, "reached the bot" if ok else "NEVER reached the bot", seconds), flush=True)
        shutil.rmtree("%s/peer-%d" % (root, index), ignore_errors=True)
    print("%d peers, %d failed; seconds to reach the bot: median %.1f, max %.1f" %
          (peers, failures, statistics.median(times), max(times)))
    sys.exit(1 if failures else 0)
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(root, ignore_errors=True)
