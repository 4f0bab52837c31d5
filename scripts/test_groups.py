#!/usr/bin/env python3
"""The `swift test` runs of `make test`, in one place.

Each group is one `swift test` process: the suites that must not share the
two cores (or usrsctp's process-wide state) with the others run in a group of
their own, in this order. A group is a regular expression over test ids
(`Module.Suite/test()`, as `swift test list` prints them); the first group,
"units", takes every test no other group takes, so a new suite runs there
unless it is put elsewhere.

usage: test_groups.py check        every test in exactly one group, no group empty
       test_groups.py run [NAME]   run every group in order (or one), stop at the first failure
       test_groups.py list         the groups and how many tests each has
"""
import re
import subprocess
import time
import sys

SWIFT = "swift"

# (name, regex, why it runs alone). Order is the order of make test.
GROUPS = [
    ("sctp", r"^RtcSCTPTests\.", "usrsctp's state is process-wide"),
    ("peer", r"^(RtcPeerTests|RtcMediaTests\.(MediaCallTests|ContainerMediaTests)"
             r"|RtcCallsTests\.(LiveMediaTests|CallClientTests|CallRecoveryTests|HangUpStressTests))",
     "peer connections and real-time media: timing-sensitive"),
    ("links", r"^RtcMediaTests\.LinkAdaptationTests", "a noisy 640x480 picture encoded in real time: heavy, alone"),
    ("resources", r"^RtcCallsTests\.CallResourceTests", "counts threads and descriptors of the whole process"),
    ("sessions", r"^CarrierSessionsTests\.", "100 MB transfers that starve other tests' timers"),
    ("node", r"^NodeNetworkTests\.", "real toxcore nodes: one local network"),
    ("files", r"^NodeNetworkTests\.FileTransferTests/", "a local network of its own"),
    ("express", r"^NodeNetworkTests\.(ExpressDeliveryTests|ExpressFriendRequestTests|TurnFromExpressTests)/",
     "a local network of its own"),
    ("stop", r"^NodeNetworkTests\.NodeStopTests/", "run under AddressSanitizer by make sanitize"),
    ("cli", r"^(CLITests|SamplesTests)\.", "the carrier executable and the samples, many processes"),
    ("interop", r"^InteropTests\.", "aiortc, Chromium and coturn: slow"),
]
# Run by make test through `make sanitize`, not here.
ELSEWHERE = {"stop"}
# What a group leaves to the groups after it. swift test's --filter also
# matches a suite's own id ("Module.Suite", no "/"), so a negative lookahead
# in the filter let whole suites through: the node group ran the file,
# Express and stop suites as well, beside everything else.
EXCLUDE = {
    "node": r"^NodeNetworkTests\.(FileTransferTests|ExpressDeliveryTests|ExpressFriendRequestTests"
            r"|TurnFromExpressTests|NodeStopTests)\b",
}


def test_ids():
    listed = subprocess.run([SWIFT, "test", "list"], capture_output=True, text=True)
    if listed.returncode != 0:
        sys.exit(f"swift test list failed:\n{listed.stderr[-2000:]}")
    return [line.strip() for line in listed.stdout.splitlines() if "/" in line and "." in line.split("/")[0]]


def assign(ids):
    """Each test id's groups (units for those no other group takes)."""
    placed = {}
    for test in ids:
        names = [name for name, pattern, _ in GROUPS
                 if re.search(pattern, test) and not (name in EXCLUDE and re.search(EXCLUDE[name], test))]
        placed[test] = names or ["units"]
    return placed


def check():
    ids = test_ids()
    placed = assign(ids)
    problems = [f"{test} is in {', '.join(names)}" for test, names in placed.items() if len(names) > 1]
    counts = {name: sum(name in names for names in placed.values()) for name, _, _ in GROUPS}
    problems += [f"group {name} takes no test (a suite renamed?)" for name, count in counts.items() if count == 0]
    for line in problems:
        print(line)
    print(f"test groups: {len(ids)} tests, " + ("each in one group" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


def filter_arguments(name):
    if name == "units":
        return [argument for _, pattern, _ in GROUPS for argument in ("--skip", pattern)]
    pattern = next(pattern for group, pattern, _ in GROUPS if group == name)
    return ["--filter", pattern] + (["--skip", EXCLUDE[name]] if name in EXCLUDE else [])


def run(only=None):
    names = ["units"] + [name for name, _, _ in GROUPS if name not in ELSEWHERE]
    for name in names if only is None else [only]:
        print(f"== test group {name}", flush=True)
        start = time.monotonic()
        status = subprocess.run([SWIFT, "test", *filter_arguments(name)]).returncode
        print(f"== test group {name} took {time.monotonic() - start:.0f} s", flush=True)
        if status != 0:
            print(f"test group {name} failed", flush=True)
            return 1
    return 0


def main():
    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    if command == "check":
        return check()
    if command == "run":
        return run(sys.argv[2] if len(sys.argv) > 2 else None)
    if command == "list":
        placed = assign(test_ids())
        for name in ["units"] + [name for name, _, _ in GROUPS]:
            print(f"{name}: {sum(name in names for names in placed.values())} tests")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
