#!/usr/bin/env python3
"""Fetches files over HTTP, many at once, and checks every byte.

Used by the port-forwarding tests: the server is `python3 -m http.server`
behind one node, the URL is the forward on the other.

usage: http_load.py BASE_URL NAME=SHA256 [NAME=SHA256 ...] [--requests N] [--concurrency C]
Prints one JSON line: {"ok": bool, "requests": N, "bytes": B, "seconds": S, "errors": [...]}.
"""
import argparse
import hashlib
import json
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor


def fetch(url, expected):
    digest = hashlib.sha256()
    total = 0
    with urllib.request.urlopen(url, timeout=120) as response:
        while True:
            chunk = response.read(1 << 20)
            if not chunk:
                break
            digest.update(chunk)
            total += len(chunk)
    if digest.hexdigest() != expected:
        return total, f"{url}: {total} bytes, sha256 mismatch"
    return total, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--requests", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=1)
    args = parser.parse_args()
    files = [tuple(item.split("=", 1)) for item in args.files]
    count = args.requests or len(files)
    jobs = [files[i % len(files)] for i in range(count)]
    started = time.monotonic()
    errors = []
    total = 0
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        futures = [pool.submit(fetch, f"{args.base}/{name}", sha) for name, sha in jobs]
        for future in futures:
            try:
                size, error = future.result()
                total += size
                if error:
                    errors.append(error)
            except Exception as error:  # a reset connection, a timeout
                errors.append(str(error))
    seconds = time.monotonic() - started
    print(json.dumps({"ok": not errors, "requests": count, "bytes": total,
                      "seconds": round(seconds, 3), "errors": errors[:10]}), flush=True)
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
