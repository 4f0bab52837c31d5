#!/usr/bin/env bash
# Node benchmark: runs the local demo network RUNS times and reports medians
# of join time, friend connection, message round trip (with receipt) and the
# 1 MB bulk message. scripts/bench_transport.py measures the WebRTC transport
# side by side with aiortc.
set -euo pipefail
carrier=${1:-.build/release/carrier}
runs=${RUNS:-3}
results=()
for i in $(seq 1 "$runs"); do
  echo "run $i/$runs…" >&2
  results+=("$("$carrier" demo --json | tail -n 1)")
done
printf '%s\n' "${results[@]}" | python3 -c '
import json, statistics, sys
rows = [json.loads(line) for line in sys.stdin if line.strip()]
bad = [r for r in rows if not r.get("ok")]
if bad:
    sys.exit("a demo run failed: %s" % bad[0])
keys = [("joinMs", "join the network (ms)"), ("friendMs", "friend request to connected (ms)"),
        ("directLinkMs", "then direct UDP link (ms)"), ("messageMs", "message with receipt (ms)"),
        ("bulkMs", "1 MB bulk message (ms)"), ("bulkMBps", "1 MB bulk message (MB/s)"),
        ("fileToFriendMs", "4 MB file to a friend (ms)"), ("fileToFriendMBps", "4 MB file to a friend (MB/s)"),
        ("offlineDeliverMs", "back online to offline message (ms)")]
print("%-36s %10s %10s %10s" % ("node, %d runs on 127.0.0.1" % len(rows), "median", "min", "max"))
for key, label in keys:
    values = [r[key] for r in rows]
    print("%-36s %10.1f %10.1f %10.1f" % (label, statistics.median(values), min(values), max(values)))
'
