#!/usr/bin/env python3
"""Files between friends, both paths, two processes on 127.0.0.1, beside the
references in one run:

- the direct path (a session: ICE, DTLS, SCTP): `carrier send-file` through
  the sender's daemon to `carrier listen --receive-dir`, a DIRECT_MB file
  (default 200) RUNS times, counted from the command's start to its exit
  (which waits for the receiver's SHA-256 verdict); beside aiortc's data
  channel moving the same file between two aiortc peers
  (Tests/Interop/aiortc_peer.py, as scripts/bench_transport.py runs it);
- toxcore's path (`send-file --toxcore`): a SIZE_MB file (default 30) RUNS
  times (default 4) back to back on one friend link, through the daemon and
  as a process of its own each time (a cold link every time, as a user without
  a daemon gets), beside raw c-toxcore (scripts/tox_file_bench.c, built at run
  time from Debian's headers: chunks sent from the chunk-request callback, the
  loop at tox_iteration_interval) from the offer to the last byte. The first
  run starts on a cold link (toxcore's congestion control in slow start);
  later ones find it warm. Raw toxcore joins the network as ours does,
  through the same `carrier node` (its DHT and its TCP relay), so a new link
  may come up over the relay and move to UDP a moment later on both sides
  (RAW_JOIN=receiver: the raw sender bootstraps straight to the raw receiver,
  a network of two where the link is UDP from the start).

PATHS=toxcore (or direct) runs one path only. Prints MB/s for each run, the medians, and the ratios: our direct path over
aiortc's data channel, our toxcore path over raw toxcore's. On toxcore's path it also prints the CPU time that sender and
receiver spent per 100 MB (user and system, over all the runs on one link): the two processes share this machine's
cores, so at speed what each chunk costs sets the rate, and the CPU time varies far less from run to run than MB/s."""
import json, os, resource, shutil, statistics, subprocess, sys, tempfile, threading, time

carrier = sys.argv[1] if len(sys.argv) > 1 else ".build/release/carrier"
size_mb = int(os.environ.get("SIZE_MB", "30"))
direct_mb = int(os.environ.get("DIRECT_MB", "200"))
runs = int(os.environ.get("RUNS", "4"))
paths = os.environ.get("PATHS", "direct,toxcore").split(",")
raw_join = os.environ.get("RAW_JOIN", "node")
root = tempfile.mkdtemp(prefix="carrier-bench-files-")
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from labservices import base58_to_hex  # noqa: E402
procs = []
entry = None  # the network's `carrier node` (HOST:PORT:KEY), which raw toxcore joins too
cpu = {}  # toxcore's path: CPU seconds of (sender, receiver) over all the runs on one link
at_receiver = []  # toxcore's path through the daemon, MB/s at the receiver (offer to completion)
heard = []  # (monotonic seconds, event) for each JSON line the receiving `listen` printed


def start(args, stdout=subprocess.PIPE, **kwargs):
    """A process in the background. Its stdout is a pipe only when we read it
    to the end: a pipe nobody reads fills, and `listen`, blocked printing its
    events, stopped answering its friend (the direct runs hung on that)."""
    p = subprocess.Popen(args, stdout=stdout, stderr=subprocess.DEVNULL, text=True, **kwargs)
    procs.append(p)
    return p


def payload(run, megabytes=None):
    path = os.path.join(root, "payload-%d-%d.bin" % (run, megabytes or size_mb))
    with open(path, "wb") as f:
        for _ in range(megabytes or size_mb):
            f.write(os.urandom(1 << 20))
    return path


def send(bob, path, extra, wall=False, expect="toxcore"):
    """MB/s (the summary's, from the accept; or with `wall` from the command's
    start to its exit), or 0 for a transfer that did not end within 180 s (said
    on stderr: a finding, not a crash)."""
    started = time.monotonic()
    try:
        out = subprocess.run([carrier, "send-file", bob["userId"], path, "--json", "--data", root + "/alice"]
                             + extra, capture_output=True, text=True, timeout=180)
    except subprocess.TimeoutExpired as stuck:
        print("send-file of %s did not end within 180 s: %s" % (path, (stuck.stderr or b"")[-300:]), file=sys.stderr)
        return 0.0
    seconds = time.monotonic() - started
    result = json.loads(out.stdout.strip().splitlines()[-1]) if out.stdout.strip() else {}
    if out.returncode != 0 or not result.get("sha256Match"):
        sys.exit("send-file failed: " + out.stderr[-500:])
    if result.get("path") != expect:
        sys.exit("send-file went over %s, not %s" % (result.get("path"), expect))
    return result["bytes"] / 1e6 / seconds if wall else result["MBps"]


def cpu_seconds(pid):
    """User and system CPU time of a running process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_seconds():
    """User and system CPU time of the children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def hear(listener):
    """Reads the receiver's events to the end (so its pipe never fills), each
    with the time it came."""
    for line in listener.stdout:
        try:
            heard.append((time.monotonic(), json.loads(line)))
        except ValueError:
            pass


def received_rates(after):
    """MB/s at the receiver for each incoming file offered after `after`
    (monotonic): from its offer to its completion, as raw toxcore's receiver
    counts from the offer to the last byte (ours also checks the SHA-256)."""
    offered, rates = {}, []
    for at, event in list(heard):
        if at < after or event.get("event") != "file" or event.get("direction") != "in":
            continue
        if event.get("state") == "offered":
            offered[event["transfer"]] = at
        elif event.get("outcome") == "completed" and event["transfer"] in offered:
            rates.append(event["bytes"] / 1e6 / (at - offered.pop(event["transfer"])))
    return rates


def ours():
    global entry
    node = start([carrier, "node", "--host", "127.0.0.1"])
    entry = node.stdout.readline().strip()
    common = ["--bootstrap", entry, "--loopback"]
    bob = json.loads(subprocess.run([carrier, "id", "--json", "--data", root + "/bob"], capture_output=True,
                                    text=True).stdout.strip().splitlines()[-1])
    listener = start([carrier, "listen", "--accept-friends", "--receive-dir", root + "/inbox", "--host-ip",
                      "127.0.0.1", "--json", "--data", root + "/bob"] + common)
    threading.Thread(target=hear, args=(listener,), daemon=True).start()
    added = subprocess.run([carrier, "friend", "add", bob["address"], "--wait", "90", "--data", root + "/alice"]
                           + common, capture_output=True, text=True, timeout=150)
    if added.returncode != 0:
        sys.exit("friend add failed: " + added.stderr[-500:])
    # Written before the runs: writing one between runs left the link idle
    # long enough for toxcore to fall back to slow start, which raw toxcore,
    # sending back to back, never does.
    payloads = [payload(run) for run in range(runs)] if "toxcore" in paths else []
    alone = [send(bob, path, common + ["--toxcore"]) for path in payloads]
    payloads = [payload(runs + run) for run in range(len(payloads))]
    daemon = start([carrier, "daemon", "--host-ip", "127.0.0.1", "--json", "--data", root + "/alice"] + common)
    while "daemonReady" not in (daemon.stdout.readline() or "daemonReady"):
        pass
    before = (cpu_seconds(daemon.pid), cpu_seconds(listener.pid))
    daemon_started = time.monotonic()
    through_daemon = [send(bob, path, ["--toxcore"]) for path in payloads]
    at_receiver.extend(received_rates(daemon_started))
    cpu["ours"] = (cpu_seconds(daemon.pid) - before[0], cpu_seconds(listener.pid) - before[1])
    direct = []
    big = payload(0, direct_mb) if "direct" in paths else None
    for run in range(runs if big else 0):
        direct.append(send(bob, big, ["--host-ip", "127.0.0.1"], wall=True, expect="direct"))
        shutil.rmtree(root + "/inbox", ignore_errors=True)  # room on the disk for the next run
    return alone, through_daemon, direct


def aiortc_data_channel():
    """MB/s of aiortc's data channel for the direct path's file (bench_transport's runs)."""
    os.environ.setdefault("MEGABYTES", str(direct_mb))
    import bench_transport
    big = payload(0, direct_mb)
    rates = []
    for _ in range(runs):
        offered, _ = bench_transport.run("aiortc", big)
        rates.append(offered.get("MBps", 0))
    return rates


def raw_toxcore():
    binary = os.path.join(root, "tox_file_bench")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "toxcore"], capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", binary, os.path.join(here, "tox_file_bench.c"), *flags], check=True)
    host, port, key = entry.split(":")  # as `carrier node` prints it
    node = [host, port, base58_to_hex(key)]
    receiver = start([binary, "recv"] + (node if raw_join == "node" else []))
    me = json.loads(receiver.stdout.readline())
    join = node if raw_join == "node" else ["127.0.0.1", str(me["port"]), me["dhtKey"]]
    before = (children_cpu_seconds(), cpu_seconds(receiver.pid))
    sent = subprocess.run([binary, "send", *join, me["address"], str(size_mb << 20), str(runs)],
                          capture_output=True, text=True, timeout=900)
    if sent.returncode != 0:
        sys.exit("tox_file_bench failed: " + sent.stderr[-500:])
    links = [json.loads(line)["link"] for line in sent.stdout.splitlines() if line.startswith("{")]
    print("raw toxcore (joined through the %s): each run started over %s" % (raw_join, " ".join(links)), flush=True)
    rates = []
    for _ in range(runs):
        line = json.loads(receiver.stdout.readline())
        rates.append(line["received"] / 1e6 / (line["ms"] / 1000))  # MB (10^6 bytes), as send-file counts
    cpu["raw"] = (children_cpu_seconds() - before[0], cpu_seconds(receiver.pid) - before[1])
    return rates


def row(name, rates):
    warm = statistics.median(rates[1:]) if len(rates) > 1 else float("nan")
    print("%-58s %8.2f %8.2f   %s" % (name, rates[0], warm, " ".join("%.1f" % r for r in rates)), flush=True)
    return warm


try:
    alone, through_daemon, direct = ours()
    if direct:
        aiortc = aiortc_data_channel()
        print("%-58s %8s %8s   %s" % ("direct path, %d MB, %d runs (MB/s)" % (direct_mb, runs), "first", "median",
                                      "each run"))
        print("%-58s %8.2f %8.2f   %s" % ("ours: send-file through the daemon, start to verdict", direct[0],
                                          statistics.median(direct), " ".join("%.1f" % r for r in direct)), flush=True)
        print("%-58s %8.2f %8.2f   %s" % ("aiortc: one data channel, offer to last byte", aiortc[0],
                                          statistics.median(aiortc), " ".join("%.1f" % r for r in aiortc)), flush=True)
        print("ours direct / aiortc's data channel: %.2f" % (statistics.median(direct) / statistics.median(aiortc)))
    if through_daemon:
        raw = raw_toxcore()
        print("%-58s %8s %8s   %s" % ("toxcore's path, %d MB, %d runs on one link (MB/s)" % (size_mb, runs), "cold",
                                      "warm", "each run"))
        row("ours: send-file --toxcore, a new process each time", alone)
        ours_warm = row("ours: send-file --toxcore through the daemon, one link", through_daemon)
        if len(at_receiver) == len(through_daemon):
            ours_heard = row("ours through the daemon, at the receiver: offer to completion", at_receiver)
        raw_warm = row("raw c-toxcore (tox_file_bench), one link", raw)
        print("ours through the daemon / raw toxcore: cold %.2f, warm %.2f" % (through_daemon[0] / raw[0],
                                                                             ours_warm / raw_warm))
        if len(at_receiver) == len(through_daemon):
            print("the same, both counted at the receiver from the offer: cold %.2f, warm %.2f"
                  % (at_receiver[0] / raw[0], ours_heard / raw_warm))
        megabytes = size_mb * runs * 1.048576  # the payloads are MiB
        per_100 = {name: [seconds * 100 / megabytes for seconds in pair] for name, pair in cpu.items()}
        for name, label in (("ours", "ours (daemon, listen)"), ("raw", "raw c-toxcore (send, recv)")):
            print("CPU seconds per 100 MB, %-27s %6.2f  (%.2f + %.2f)" % (label, sum(per_100[name]), *per_100[name]))
        print("CPU per MB, ours / raw toxcore: %.2f" % (sum(per_100["ours"]) / sum(per_100["raw"])))
finally:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(root, ignore_errors=True)
