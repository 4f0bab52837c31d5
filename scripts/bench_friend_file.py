#!/usr/bin/env python3
"""Files between friends over the node (toxcore's file transfer), two processes
on 127.0.0.1: `carrier send-file` to `carrier listen --receive-dir`. Sends a
SIZE_MB file (default 30) RUNS times (default 3) back to back on one friend
link and prints each rate and the median. The first run starts on a cold link
(toxcore's congestion control in slow start); later ones find it warm."""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

carrier = sys.argv[1] if len(sys.argv) > 1 else ".build/release/carrier"
size_mb = int(os.environ.get("SIZE_MB", "30"))
runs = int(os.environ.get("RUNS", "3"))
root = tempfile.mkdtemp(prefix="carrier-bench-files-")
procs = []

def start(args):
    p = subprocess.Popen([carrier] + args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    procs.append(p)
    return p

try:
    node = start(["node", "--host", "127.0.0.1"])
    entry = node.stdout.readline().strip()
    common = ["--bootstrap", entry, "--loopback"]
    bob = json.loads(subprocess.run([carrier, "id", "--json", "--data", root + "/bob"], capture_output=True, text=True).stdout.strip().splitlines()[-1])
    start(["listen", "--accept-friends", "--receive-dir", root + "/inbox", "--json", "--data", root + "/bob"] + common)
    added = subprocess.run([carrier, "friend", "add", bob["address"], "--wait", "90", "--data", root + "/alice"] + common,
                           capture_output=True, text=True, timeout=150)
    if added.returncode != 0:
        sys.exit("friend add failed: " + added.stderr[-500:])
    rates = []
    for run in range(runs):
        path = os.path.join(root, "payload-%d.bin" % run)
        with open(path, "wb") as f:
            f.write(os.urandom(size_mb << 20))
        started = time.monotonic()
        out = subprocess.run([carrier, "send-file", bob["userId"], path, "--json", "--data", root + "/alice"] + common,
                             capture_output=True, text=True, timeout=600)
        result = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
        if out.returncode != 0 or not result.get("sha256Match"):
            sys.exit("send-file failed: " + out.stderr[-500:])
        rates.append(result["MBps"])
        print("run %d: %d MB in %.2f s transfer (%.1f s with joining), %.2f MB/s" %
              (run + 1, size_mb, result["seconds"], time.monotonic() - started, result["MBps"]), file=sys.stderr)
    print("%-40s %10s %10s %10s" % ("file to a friend, %d MB, %d runs" % (size_mb, runs), "median", "min", "max"))
    print("%-40s %10.2f %10.2f %10.2f" % ("MB/s (send-file to listen --receive-dir)", statistics.median(rates), min(rates), max(rates)))
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(root, ignore_errors=True)
