#!/usr/bin/env python3
"""Runs one step of `make test` and says how long it took, so the suite's
budget (well under 30 minutes on 2 cores) can be watched step by step.

usage: timed.py COMMAND [ARG...]    exits with the command's status
"""
import subprocess
import sys
import time

if len(sys.argv) < 2:
    sys.exit(__doc__)
start = time.monotonic()
status = subprocess.call(sys.argv[1:])
name = " ".join(sys.argv[1:])[:90]
print(f"== step took {time.monotonic() - start:.0f} s: {name} (exit {status})", file=sys.stderr, flush=True)
sys.exit(status)
