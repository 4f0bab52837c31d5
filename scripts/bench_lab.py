#!/usr/bin/env python3
"""make bench, the network lab: across each NAT case, `carrier rtc` beside
aiortc (setup time, ICE after the answer, data-channel MB/s for a 20 MB
file); a 64 MB file between friends with `send-file` (over a direct session)
behind two cone routers and with UDP blocked at one site, against the issue's
bar of 20 MB/s; and friends finding each other, our node beside raw c-toxcore.

usage: bench_lab.py CARRIER   (RUNS=5 by default; needs root, as the lab does)

The stacks take turns within each case, so a noisy moment hits both. Medians,
and the ratio ours / theirs (for times, below 1 is better; for MB/s, above).
"""
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "Tests", "Lab"))
import lab_calls  # noqa: E402
import lab_node  # noqa: E402
import lab_rtc  # noqa: E402
import labservices  # noqa: E402
import netlab  # noqa: E402

RUNS = int(os.environ.get("RUNS", "5"))


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def ratio(ours, theirs):
    return f"{ours / theirs:.2f}" if ours and theirs else "-"


def show(value):
    return "-" if value is None else f"{value:.1f}"


def friend_files(lab, carrier, work, coturn, bootstrap):
    """Alice sends Bob 64 MB with `send-file` through her `listen`, RUNS times in
    each of lab_calls' file cases: MB/s from the command's start to Bob's
    verdict, against the issue's bar between two cone routers."""
    lab_calls.NETWORK["ca"] = coturn.ca_file
    express = labservices.ExpressNode(lab, carrier, work, coturn)
    network = ["--bootstrap", bootstrap.entry, "--express", express.entry]
    lab.set_nat("a", "cone")
    lab.set_nat("b", "cone")
    alice = lab_calls.Friend(lab, "alice", "a", carrier, work, network)
    bob = lab_calls.Friend(lab, "bob", "b", carrier, work, network)
    file = os.path.join(work, "friend-file.bin")
    with open(file, "wb") as handle:
        handle.write(os.urandom(lab_calls.FRIEND_FILE_BYTES))
    print(f"\nLab, a {lab_calls.FRIEND_FILE_BYTES >> 20} MB file to a friend (send-file through Alice's listen, "
          f"start to Bob's verdict), {RUNS} runs each:")
    print("| case | intact, direct | MB/s median (min-max) | bar |\n|---|---|---|---|")
    try:
        befriend = alice.run(["friend", "add", bob.address, "--wait", "120", "--json"], 150)
        if befriend.returncode != 0:
            print(f"| (Alice and Bob did not become friends: {befriend.stderr.strip()[-200:]}) | | | |")
            return
        for case in lab_calls.FILE_CASES:
            _, _, nat_a, nat_b, _ = lab_rtc.CASES[case]
            lab.set_nat("a", nat_a)
            lab.set_nat("b", nat_b)
            results = [lab_calls.file_to_friend(alice, bob, case, file, floor=0) for _ in range(RUNS)]
            speeds = [r["MBps"] for r in results if r["ok"] and r["MBps"]]
            bar = "-"
            if case == "cone-cone":
                bar = (f"{lab_calls.FILE_BAR_MBPS} MB/s: "
                       f"{'met' if speeds and median(speeds) >= lab_calls.FILE_BAR_MBPS else 'NOT met'}")
            spread = f"{median(speeds):.1f} ({min(speeds):.1f}-{max(speeds):.1f})" if speeds else "-"
            print(f"| {case} | {len(speeds)}/{RUNS} | {spread} | {bar} |", flush=True)
    finally:
        for friend in (alice, bob, express):
            friend.process.terminate()
            friend.process.wait(timeout=30)
        lab.set_nat("a", "cone")
        lab.set_nat("b", "cone")


def main():
    carrier = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="carrier-bench-lab-")
    file = os.path.join(work, "payload.bin")
    with open(file, "wb") as handle:
        handle.write(os.urandom(20 << 20))
    rows = []
    with netlab.Lab() as lab:
        coturn = labservices.Coturn(lab, work)
        for case in lab_rtc.CASES:
            results = {stack: [] for stack in lab_rtc.STACKS}
            for run in range(RUNS):
                for stack in lab_rtc.STACKS:
                    result = lab_rtc.run_case(lab, coturn, stack, case, carrier, work, file, reverse=run % 2 == 1,
                                              wall=60)
                    results[stack].append(result)
            paths = sorted({r["path"] for r in results["carrier"] if r["path"]})
            ok = {stack: sum(r["ok"] for r in results[stack]) for stack in results}
            setup = {stack: median(r["setupMs"] for r in results[stack] if r["ok"]) for stack in results}
            speed = {stack: median(r["MBps"] for r in results[stack] if r["ok"]) for stack in results}
            ice = median(r["iceAfterAnswerMs"] for r in results["carrier"] if r["ok"])
            rows.append(f"| {case} | {ok['carrier']}/{RUNS} | {ok['aiortc']}/{RUNS} | {show(setup['carrier'])} | "
                        f"{show(setup['aiortc'])} | {ratio(setup['carrier'], setup['aiortc'])} | {show(ice)} | "
                        f"{show(speed['carrier'])} | {show(speed['aiortc'])} | {ratio(speed['carrier'], speed['aiortc'])}"
                        f" | {', '.join(paths)} |")
            print(rows[-1], file=sys.stderr, flush=True)
        print("\nLab, carrier rtc and aiortc, 20 MB over a data channel, each case both ways, "
              f"{RUNS} runs each (medians):")
        print("| case | ours ok | aiortc ok | setup ms, ours | aiortc | ratio | ICE after answer, ours (ms) | "
              "MB/s, ours | aiortc | ratio | our paths |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        print("\n".join(rows))

        bootstrap = labservices.BootstrapNode(lab, carrier, work)
        friend_files(lab, carrier, work, coturn, bootstrap)

        binary = lab_node.build_raw(work)
        print(f"\nLab, friends finding each other (from Alice's start to the friend link), {RUNS} runs each:")
        print("| case | ours, median s (min-max) | raw toxcore | ratio |\n|---|---|---|---|")
        for case, (nat_a, nat_b, mode) in lab_node.CASES.items():
            lab.set_nat("a", nat_a)
            lab.set_nat("b", nat_b)
            times = {"carrier": [], "toxcore": []}
            for run in range(RUNS):
                mine = lab_node.ours(lab, carrier, work, bootstrap, f"bench-{case}-{run}", mode)
                theirs = lab_node.raw(lab, binary, bootstrap, mode)
                for stack, result in (("carrier", mine), ("toxcore", theirs)):
                    if result["ok"]:
                        times[stack].append(result["ms"] / 1000)
            cells = []
            for stack in ("carrier", "toxcore"):
                values = times[stack]
                cells.append(f"{median(values):.1f} ({min(values):.1f}-{max(values):.1f})" if values else "-")
            print(f"| {case} | {cells[0]} | {cells[1]} | {ratio(median(times['carrier']), median(times['toxcore']))} |",
                  flush=True)


if __name__ == "__main__":
    main()
