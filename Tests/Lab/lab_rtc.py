#!/usr/bin/env python3
"""`carrier rtc` (and aiortc, as the anchor) across the network lab's NATs.

usage: lab_rtc.py CARRIER [CASE ...]

Every case runs under each condition of the TURN server's host:
  blackhole  it black-holes the sites' private range (netlab.py): a relayed
             send there fails at once, and coturn then closes the allocation
  denied     coturn refuses the range as peers (denied-peer-ip: 403)

Each case moves a file over a data channel between a site behind one router
and a site behind another (or the public host "p"), each way: the first run
offers from the first site, the second from the second, the offerer sending.
Both sides get several servers at once, by name: stun:stun.lab.test, and
turn.lab.test over UDP, TCP and TLS (scripts/labservices.py). Prints one
JSON line per run (stack, case, direction, ok, setupMs, iceAfterAnswerMs,
the path's candidate types, MB/s) and a closing line "lab: N passed, N failed"
that counts carrier's runs; aiortc's are the anchor, reported beside them (it
cannot cross udpblocked-cone when it is also given a TURN server over UDP: it
gathers before it offers and waits out the unreachable server).
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import labservices  # noqa: E402
import netlab  # noqa: E402

# case: (first site, second site, NAT of router a, NAT of router b, options)
CASES = {
    "public-cone": ("p", "b", "cone", "cone", {}),
    "cone-cone": ("a", "b", "cone", "cone", {}),
    # Bare Linux NATs: the conntrack race leaves no direct pair (netlab.py).
    "open-open": ("a", "b", "cone-open", "cone-open", {}),
    "cone-symmetric": ("a", "b", "cone", "symmetric", {}),
    "symmetric-symmetric": ("a", "b", "symmetric", "symmetric", {}),
    # UDP blocked at a: TURN over TCP (or TLS) is its only way out.
    "udpblocked-cone": ("a", "b", "udp-blocked", "cone", {}),
    # Both sides relay only (iceTransportPolicy "relay"), through TURN over TLS alone.
    "cone-cone-tls-relay": ("a", "b", "cone", "cone", {"relay_only": True, "servers": ["tls"]}),
}
STACKS = ("carrier", "aiortc")
# Seconds a run may take: aiortc, the anchor, connects in under a second
# where it can (through TURN too), so its failures need not wait as long.
WALL = {"carrier": 30, "aiortc": 12}
# condition: (the public host's routes to the sites' range, coturn's denied peers)
CONDITIONS = {
    "blackhole": ("blackhole", None),
    "denied": ("blackhole", ["198.18.0.0-198.19.255.255"]),
}
FILE_BYTES = 5 << 20


def server_options(case_options):
    words = [] if case_options.get("servers") else ["--stun", f"stun:stun.lab.test:{labservices.TURN_PORT}"]
    for kind in case_options.get("servers", ["udp", "tcp", "tls"]):
        words += ["--turn", labservices.Coturn.url(kind)]
    return words + (["--relay-only"] if case_options.get("relay_only") else [])


def peer_command(lab, coturn, stack, site, role, carrier, work, case_options, file=None, timeout=28):
    user, password = coturn.credentials()
    stats = os.path.join(work, f"{stack}-{role}.json")
    if stack == "carrier":
        command = [carrier, "rtc", role, "--stats", stats, "--timeout", str(timeout)]
    else:
        command = ["python3", os.path.join(ROOT, "Tests", "Interop", "aiortc_peer.py"), role, "--stats", stats]
    command += server_options(case_options) + ["--turn-user", user, "--turn-pass", password]
    command += ["--send-file", file] if file else ["--receive-dir", os.path.join(work, f"{stack}-in")]
    return lab.exec_prefix(site) + command, stats


def read_json(path):
    if not os.path.exists(path):
        return {}
    with open(path) as handle:
        try:
            return json.load(handle)
        except ValueError:
            return {}


def after_answer(summary):
    """The offerer's ICE connected, in ms after the answer reached it."""
    steps = summary.get("steps") or {}
    if "iceConnected" in steps and "answerReceived" in steps:
        return round(steps["iceConnected"] - steps["answerReceived"], 1)
    return None


def path_types(summary):
    path = summary.get("icePath")
    if not path:
        return None
    turn = f" (TURN/{path['turnTransport']})" if path.get("turnTransport") else ""
    return f"{path['local']['type']}{turn} → {path['remote']['type']}"


def run_case(lab, coturn, stack, case, carrier, work, file, reverse=False, wall=30, condition="blackhole"):
    first, second, nat_a, nat_b, options = CASES[case]
    lab.set_nat("a", nat_a)
    lab.set_nat("b", nat_b)
    offerer_site, answerer_site = (second, first) if reverse else (first, second)
    offer, offer_stats = peer_command(lab, coturn, stack, offerer_site, "offer", carrier, work, options, file,
                                      timeout=wall - 2)
    answer, answer_stats = peer_command(lab, coturn, stack, answerer_site, "answer", carrier, work, options,
                                        timeout=wall - 2)
    for path in (offer_stats, answer_stats):
        if os.path.exists(path):
            os.unlink(path)
    direction = f"{offerer_site}→{answerer_site}"
    env = dict(coturn.env(), WIRE_LOG_PREFIX=os.path.join(work, f"{stack}-{condition}-{case}-{direction}"))
    started = time.monotonic()
    subprocess.run(["python3", os.path.join(ROOT, "Tests", "Interop", "wire.py"), str(wall), json.dumps(offer),
                    json.dumps(answer)], env=env, capture_output=True, timeout=wall + 15)
    summary = read_json(offer_stats)
    ok = bool(summary.get("transferOk", summary.get("ok")))
    return {"stack": stack, "condition": condition, "case": case, "direction": direction, "ok": ok, "setupMs": summary.get("setupMs"),
            "iceAfterAnswerMs": after_answer(summary), "path": path_types(summary), "MBps": summary.get("MBps"),
            "seconds": round(time.monotonic() - started, 1)}


def print_table(results):
    """Carrier beside aiortc, a row per case and direction."""
    def cell(result):
        if not result:
            return "-"
        if not result["ok"]:
            return "✗"
        ice = f", ICE {result['iceAfterAnswerMs']} ms after the answer" if result.get("iceAfterAnswerMs") else ""
        path = f"{result['path']}, " if result.get("path") else ""
        return f"✓ {path}{result['setupMs']} ms{ice}, {result['MBps']} MB/s"

    rows = {}
    for result in results:
        rows.setdefault((result["condition"], result["case"], result["direction"]), {})[result["stack"]] = result
    print("| TURN host | case | direction | carrier | aiortc |\n|---|---|---|---|---|")
    for (condition, case, direction), by_stack in rows.items():
        print(f"| {condition} | {case} | {direction} | {cell(by_stack.get('carrier'))} "
              f"| {cell(by_stack.get('aiortc'))} |")


def main():
    carrier = os.path.abspath(sys.argv[1])
    cases = sys.argv[2:] or list(CASES)
    work = tempfile.mkdtemp(prefix="carrier-lab-")
    file = os.path.join(work, "payload.bin")
    with open(file, "wb") as handle:
        handle.write(os.urandom(FILE_BYTES))
    passed = failed = 0
    results = []
    started = time.monotonic()
    try:
        with netlab.Lab() as lab:
            coturn = labservices.Coturn(lab, work)
            for condition, (routes, denied) in CONDITIONS.items():
                lab.set_server_routes(routes)
                coturn.start(denied)
                for case in cases:
                    for reverse in (False, True):
                        for stack in STACKS:
                            result = run_case(lab, coturn, stack, case, carrier, work, file, reverse,
                                              wall=WALL[stack], condition=condition)
                            print(json.dumps(result, ensure_ascii=False), flush=True)
                            results.append(result)
                            if stack == "carrier":
                                passed, failed = (passed + 1, failed) if result["ok"] else (passed, failed + 1)
    except netlab.LabError as error:
        print(f"lab: cannot build the network lab: {error}", file=sys.stderr)
        failed += 1
    print_table(results)
    print(f"lab: {passed} passed, {failed} failed in {round(time.monotonic() - started)} s (logs in {work})")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
