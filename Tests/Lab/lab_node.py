#!/usr/bin/env python3
"""How fast friends find each other across the network lab's NATs: our node
beside raw c-toxcore (scripts/tox_befriend.c, the library's defaults).

usage: lab_node.py CARRIER [RUNS]

For each case, RUNS times each, taking turns: Bob, a fresh identity behind
router b, is online and accepts friend requests; Alice, a fresh identity
behind router a (its own process, started from nothing), asks him for
friendship; the time is from Alice's start to the friend link being up. The
cases: both routers cone; and Alice's router blocking UDP, where she reaches
the network and Bob only through the bootstrap node's TCP relay. Prints one
JSON line per run and the medians; fails if a run of ours does not connect.
Both stacks vary a great deal from run to run (9 to 39 s measured behind two
cone NATs, for each), so comparing them takes many runs: `make bench` does
(scripts/bench_lab.py), make test runs each case once, and ours only
(LAB_NODE_RAW=0: raw toxcore's runs are measurements that never fail the test).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import labservices  # noqa: E402
import netlab  # noqa: E402

CASES = {"cone-cone": ("cone", "cone", "udp"), "udpblocked-cone": ("udp-blocked", "cone", "tcp")}


def build_raw(work, defines=()):
    """scripts/tox_befriend.c built in `work`, with `defines` (e.g. NO_LOCAL_DISCOVERY for scripts/redial.py)."""
    binary = os.path.join(work, "tox_befriend")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "toxcore"], capture_output=True, text=True,
                           check=True).stdout.split()
    subprocess.run(["cc", "-O2", *[f"-D{name}" for name in defines], "-o", binary,
                    os.path.join(ROOT, "scripts", "tox_befriend.c"), *flags], check=True)
    return binary


def ours(lab, carrier, work, bootstrap, run, mode):
    """Bob online (`listen --accept-friends`), then Alice's `friend add` from nothing."""
    bob, alice = (os.path.join(work, f"{name}-{run}") for name in ("bob", "alice"))
    network = ["--bootstrap", bootstrap.entry]
    identity = subprocess.run(lab.exec_prefix("b") + [carrier, "id", "--json", "--data", bob], capture_output=True,
                              text=True, check=True)
    address = json.loads(identity.stdout.strip().splitlines()[-1])["address"]
    listener = lab.start("b", [carrier, "listen", "--accept-friends", "--data", bob] + network,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_online(os.path.join(bob, "carrier.sock"))
        started = time.monotonic()
        extra = ["--tcp-only"] if mode == "tcp" else []
        result = subprocess.run(lab.exec_prefix("a") + [carrier, "friend", "add", address, "--wait", "120",
                                                        "--json", "--data", alice] + network + extra,
                                capture_output=True, text=True, timeout=150)
        elapsed = (time.monotonic() - started) * 1000
        return {"ok": result.returncode == 0, "ms": round(elapsed)}
    finally:
        listener.kill()
        listener.wait()


def raw(lab, binary, bootstrap, mode):
    host, port, key = bootstrap.entry.split(":")
    key = labservices.base58_to_hex(key)
    listener = lab.start("b", [binary, "listen", host, port, key], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL)
    try:
        address = json.loads(labservices.read_line(listener, 10, "raw toxcore"))["address"]
        joined = labservices.read_line(listener, 60, "raw toxcore joining")  # {"joinedMs":…}
        assert "joinedMs" in joined
        started = time.monotonic()
        result = subprocess.run(lab.exec_prefix("a") + [binary, "add", host, port, key, address, mode],
                                capture_output=True, text=True, timeout=150)
        elapsed = (time.monotonic() - started) * 1000
        return {"ok": result.returncode == 0, "ms": round(elapsed), "link": result.stdout.strip()}
    finally:
        listener.kill()
        listener.wait()


def wait_online(socket_path, seconds=60):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # bounded poll of the node's own status
        if os.path.exists(socket_path):
            try:
                if labservices.control_status(socket_path).get("online"):
                    return
            except OSError:
                pass
        time.sleep(0.2)
    raise netlab.LabError("Bob did not come online")


def main():
    carrier = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    work = tempfile.mkdtemp(prefix="carrier-lab-node-")
    failed = 0
    try:
        binary = build_raw(work) if os.environ.get("LAB_NODE_RAW", "1") != "0" else None
        with netlab.Lab() as lab:
            bootstrap = labservices.BootstrapNode(lab, carrier, work)
            for case, (nat_a, nat_b, mode) in CASES.items():
                lab.set_nat("a", nat_a)
                lab.set_nat("b", nat_b)
                times = {"carrier": [], "toxcore": []}
                stacks = ("carrier", "toxcore") if os.environ.get("LAB_NODE_RAW", "1") != "0" else ("carrier",)
                for run in range(runs):
                    for stack in stacks:
                        result = (ours(lab, carrier, work, bootstrap, f"{case}-{run}", mode) if stack == "carrier"
                                  else raw(lab, binary, bootstrap, mode))
                        print(json.dumps({"case": case, "stack": stack, **result}), flush=True)
                        if result["ok"]:
                            times[stack].append(result["ms"])
                        else:
                            failed += stack == "carrier"
                medians = {stack: statistics.median(values) if values else None for stack, values in times.items()}
                print(json.dumps({"case": case, "medianMs": medians}), flush=True)
    except netlab.LabError as error:
        print(f"lab node: {error}", file=sys.stderr)
        failed += 1
    print(f"lab node: {'ok' if failed == 0 else f'{failed} failed'} (logs in {work})")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
