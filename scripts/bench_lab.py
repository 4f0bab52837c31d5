#!/usr/bin/env python3
"""make bench, the network lab: across each NAT case, `carrier rtc` beside
aiortc (setup time, ICE after the answer, data-channel MB/s for a 20 MB
file), and friends finding each other, our node beside raw c-toxcore.

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

        binary = lab_node.build_raw(work)
        bootstrap = labservices.BootstrapNode(lab, carrier, work)
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
