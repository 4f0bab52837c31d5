#!/usr/bin/env python3
"""`carrier rtc` (and aiortc, as the anchor) across the network lab's NATs.

usage: lab_rtc.py CARRIER [CASE ...]   (cases: public-cone cone-cone cone-symmetric
                                         symmetric-symmetric udpblocked-cone cone-cone-relay)
Each case moves a 5 MB file over a data channel from Alice (behind the first
NAT, or on the public network for "public") to Bob (behind the second), both
given the lab's coturn (UDP and TCP). Prints one JSON line per run (stack,
case, ok, setupMs, MBps, selected pair) and a closing line "N passed, N failed".
A case counts (passes or fails) for a stack when EXPECTED lists it: the
cases that cannot yet be crossed are run and reported, not counted (issue 22).
"""
import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import netlab  # noqa: E402

CASES = {
    "public-cone": ("p", "cone", "cone"),
    "cone-cone": ("a", "cone", "cone"),
    # Bare Linux NATs: the conntrack race leaves no direct pair (netlab.py).
    "open-open": ("a", "cone-open", "cone-open"),
    "cone-symmetric": ("a", "cone", "symmetric"),
    "symmetric-symmetric": ("a", "symmetric", "symmetric"),
    "udpblocked-cone": ("a", "udp-blocked", "cone"),
    # Both sides relay only (iceTransportPolicy "relay"): TURN across two NATs.
    "cone-cone-relay": ("a", "cone", "cone"),
}
# Every case counts for both stacks: ICE must cross each of them.
EXPECTED = {"carrier": set(CASES), "aiortc": set(CASES)}
SECRET = "lab-%d" % os.getpid()


def credentials():
    user = "%d:lab" % (int(time.time()) + 3600)
    password = base64.b64encode(hmac.new(SECRET.encode(), user.encode(), hashlib.sha1).digest()).decode()
    return user, password


def start_coturn(lab, work):
    log = open(os.path.join(work, "coturn.log"), "w")
    lab.start("pub", ["turnserver", "-n", f"--listening-ip={netlab.SERVER_IP}", f"--relay-ip={netlab.SERVER_IP}",
                      "--listening-port=3478", "--min-port=40000", "--max-port=40999", "--use-auth-secret",
                      f"--static-auth-secret={SECRET}", "--realm=lab.test", "--no-cli", "--no-tls", "--no-dtls",
                      "--log-file=stdout", "--simple-log"], stdout=log, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # bounded poll until coturn listens on TCP
        probe = lab.sh("pub", "python3", "-c",
                       f"import socket; socket.create_connection(('{netlab.SERVER_IP}', 3478), 0.2)", check=False)
        if probe.returncode == 0:
            return
        time.sleep(0.05)
    raise netlab.LabError("coturn did not start in the lab")


def peer_command(lab, stack, site, role, carrier, work, transport, file=None, relay_only=False):
    user, password = credentials()
    turn = f"turn:{netlab.SERVER_IP}:3478" + ("?transport=tcp" if transport == "tcp" else "")
    stats = os.path.join(work, f"{stack}-{role}.json")
    if stack == "carrier":
        command = [carrier, "rtc", role, "--turn", turn, "--turn-user", user, "--turn-pass", password,
                   "--stats", stats, "--timeout", "28"]
    else:
        command = ["python3", os.path.join(ROOT, "Tests", "Interop", "aiortc_peer.py"), role, "--turn", turn,
                   "--turn-user", user, "--turn-pass", password, "--stats", stats]
    command += ["--relay-only"] if relay_only else []
    command += ["--send-file", file] if file else ["--receive-dir", os.path.join(work, f"{stack}-in")]
    return lab.exec_prefix(site) + command, stats


def run_case(lab, stack, case, carrier, work, file):
    alice, nat_a, nat_b = CASES[case]
    lab.set_nat("a", nat_a)
    lab.set_nat("b", nat_b)
    transport = "tcp" if nat_a == "udp-blocked" else "udp"
    relay_only = case.endswith("-relay")
    offer, offer_stats = peer_command(lab, stack, alice, "offer", carrier, work, transport, file, relay_only)
    answer, _ = peer_command(lab, stack, "b", "answer", carrier, work, "udp", relay_only=relay_only)
    if os.path.exists(offer_stats):
        os.unlink(offer_stats)
    env = dict(os.environ, WIRE_LOG_PREFIX=os.path.join(work, f"{stack}-{case}"))
    started = time.monotonic()
    subprocess.run(["python3", os.path.join(ROOT, "Tests", "Interop", "wire.py"), "30", json.dumps(offer),
                    json.dumps(answer)], env=env, capture_output=True, timeout=45)
    summary = {}
    if os.path.exists(offer_stats):
        with open(offer_stats) as handle:
            summary = json.load(handle)
    ok = bool(summary.get("transferOk", summary.get("ok")))
    return {"stack": stack, "case": case, "ok": ok, "setupMs": summary.get("setupMs"), "MBps": summary.get("MBps"),
            "selectedPair": summary.get("selectedPair"), "seconds": round(time.monotonic() - started, 1)}


def main():
    carrier = os.path.abspath(sys.argv[1])
    cases = sys.argv[2:] or list(CASES)
    work = tempfile.mkdtemp(prefix="carrier-lab-")
    file = os.path.join(work, "payload.bin")
    with open(file, "wb") as handle:
        handle.write(os.urandom(5 << 20))
    passed = failed = 0
    try:
        with netlab.Lab() as lab:
            start_coturn(lab, work)
            for case in cases:
                for stack in ("carrier", "aiortc"):
                    result = run_case(lab, stack, case, carrier, work, file)
                    counted = case in EXPECTED[stack]
                    result["counted"] = counted
                    print(json.dumps(result), flush=True)
                    if counted:
                        passed, failed = (passed + 1, failed) if result["ok"] else (passed, failed + 1)
    except netlab.LabError as error:
        print(f"lab: cannot build the network lab: {error}", file=sys.stderr)
        failed += 1
    print(f"lab: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
