#!/usr/bin/env python3
"""Port forwarding between friends, two `carrier` processes on 127.0.0.1:
Bob offers Python's HTTP server as a service (`listen --service`), Alice
forwards a local port to it (`carrier forward`), and curl downloads a
SIZE_MB file (default 100) through the forward and straight from the server,
RUNS times each (default 3), side by side. Also a stream: SIZE_MB piped
through `carrier session` to `listen --sessions`. Prints MB/s medians and the
forward/direct ratio."""
import hashlib, json, os, shutil, statistics, subprocess, sys, tempfile, time

carrier = sys.argv[1] if len(sys.argv) > 1 else ".build/release/carrier"
size_mb = int(os.environ.get("SIZE_MB", "100"))
runs = int(os.environ.get("RUNS", "3"))
root = tempfile.mkdtemp(prefix="carrier-bench-forward-")
procs = []


def start(args, **kwargs):
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, **kwargs)
    procs.append(p)
    return p


def download(url, target):
    started = time.monotonic()
    subprocess.run(["curl", "-sS", "--fail", "-o", target, url], check=True, timeout=600)
    seconds = time.monotonic() - started
    with open(target, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    os.remove(target)
    return size_mb * 1.048576 / seconds, digest


try:
    www = os.path.join(root, "www")
    os.makedirs(www)
    payload = os.urandom(size_mb << 20)
    expected = hashlib.sha256(payload).hexdigest()
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(payload)
    server = start([sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory", www])
    server_port = int(server.stdout.readline().split(" port ")[1].split(" ")[0])

    node = start([carrier, "node", "--host", "127.0.0.1"])
    entry = node.stdout.readline().strip()
    common = ["--bootstrap", entry, "--loopback"]
    bob = json.loads(subprocess.run([carrier, "id", "--json", "--data", root + "/bob"], capture_output=True,
                                    text=True).stdout.strip().splitlines()[-1])
    start([carrier, "listen", "--accept-friends", "--sessions", "--service", "web=127.0.0.1:%d" % server_port,
           "--json", "--data", root + "/bob"] + common)
    added = subprocess.run([carrier, "friend", "add", bob["address"], "--wait", "90", "--data", root + "/alice"] + common,
                           capture_output=True, text=True, timeout=150)
    if added.returncode != 0:
        sys.exit("friend add failed: " + added.stderr[-500:])
    forward = start([carrier, "forward", bob["userId"], "web", "--json", "--data", root + "/alice"] + common)
    port = json.loads(forward.stdout.readline())["port"]

    rates = {"forward": [], "direct": []}
    for run in range(runs):
        for kind, p in (("direct", server_port), ("forward", port)):
            rate, digest = download("http://127.0.0.1:%d/big.bin" % p, os.path.join(root, "got.bin"))
            if digest != expected:
                sys.exit("%s download %d arrived damaged" % (kind, run + 1))
            rates[kind].append(rate)
            print("run %d %-8s %.1f MB/s" % (run + 1, kind, rate), file=sys.stderr)
    forward.terminate()
    forward.wait(timeout=15)

    # A stream: the file piped through `carrier session` (one process per run, so its
    # summary's MBps counts the transfer only, not joining the network).
    session_rates = []
    for run in range(runs):
        with open(os.path.join(www, "big.bin"), "rb") as source:
            out = subprocess.run([carrier, "session", bob["userId"], "--json", "--data", root + "/alice"] + common,
                                 stdin=source, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                 timeout=600)
        summary = json.loads(out.stderr.strip().splitlines()[-1])
        if out.returncode != 0 or summary["bytesSent"] != size_mb << 20:
            sys.exit("session failed: " + out.stderr[-500:])
        session_rates.append(summary["MBps"])
        print("run %d session  %.1f MB/s" % (run + 1, summary["MBps"]), file=sys.stderr)

    print("%-46s %10s %10s %10s" % ("port forwarding, %d MB, %d runs" % (size_mb, runs), "median", "min", "max"))
    for label, values in (("MB/s, curl through carrier forward", rates["forward"]),
                          ("MB/s, curl straight to the server (TCP)", rates["direct"]),
                          ("MB/s, stdin through carrier session", session_rates)):
        print("%-46s %10.1f %10.1f %10.1f" % (label, statistics.median(values), min(values), max(values)))
    print("%-46s %10.2f" % ("forward / direct", statistics.median(rates["forward"]) / statistics.median(rates["direct"])))
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(root, ignore_errors=True)
