#!/usr/bin/env python3
"""A Chromium WebRTC peer with the signaling of aiortc_peer.py (JSON lines on stdin/stdout).

Headless Chromium (Debian's chromium + chromium-driver) runs browser_peer.html;
this script drives it through chromedriver's WebDriver HTTP API (no Selenium),
passing signals in and out. Loopback candidates are allowed and mDNS host
names are off so that the browser's candidates are plain 127.0.0.1 addresses.

  browser_peer.py offer|answer [--echo] [--send-bytes N] [--media] [--run-for S] [--stats FILE]
                  [--video-file Y4M] [--audio-file WAV] [--stun URL] [--any-address]

--video-file/--audio-file make the fake camera and microphone play those
files (Chromium's --use-file-for-fake-*-capture); --stun gives the page an ICE
server; --any-address offers every candidate, not only 127.0.0.1 (the
network lab's namespaces, scripts/bench_congestion.py).

--send-bytes sends N random bytes in the binary file protocol; a received file
is checked (SHA-256) and acknowledged in the page. --stats writes what the page
measured: setupMs, MBps, ackOk, receivedOk, receivedSha256, inbound RTP packets per kind.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "browser_peer.html")


def log(*parts):
    print("browser_peer:", *parts, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WebDriver:
    """The few WebDriver commands this needs (W3C protocol, JSON over HTTP)."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def call(self, method, path, body=None, timeout=60):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read() or b"{}").get("value")

    def wait_ready(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if self.call("GET", "/status", timeout=2).get("ready"):
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("chromedriver did not start")

    def start(self, profile, extra=()):
        arguments = list(extra) + ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
                     "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream",
                     "--autoplay-policy=no-user-gesture-required", f"--user-data-dir={profile}"]
        capabilities = {"browserName": "chrome",
                        "goog:chromeOptions": {"binary": shutil.which("chromium") or "/usr/bin/chromium",
                                               "args": arguments}}
        value = self.call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})
        self.session = value["sessionId"]

    def open(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def run(self, script, *args):
        return self.call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": list(args)})

    def run_async(self, script, *args):
        """script ends by calling done(value); arguments come as args[0], args[1]…"""
        wrapped = "const done = arguments[arguments.length - 1]; const args = arguments;" + script
        return self.call("POST", f"/session/{self.session}/execute/async", {"script": wrapped, "args": list(args)})

    def quit(self):
        if self.session:
            try:
                self.call("DELETE", f"/session/{self.session}", timeout=10)
            except OSError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("role", choices=["offer", "answer"])
    parser.add_argument("--echo", action="store_true")
    parser.add_argument("--send-bytes", type=int, default=0)
    parser.add_argument("--media", action="store_true", help="send the fake camera and microphone")
    parser.add_argument("--run-for", type=float, default=0, help="stay connected this many seconds, then bye")
    parser.add_argument("--stats")
    parser.add_argument("--video-file")
    parser.add_argument("--audio-file")
    parser.add_argument("--stun", action="append", default=[])
    parser.add_argument("--any-address", action="store_true")
    args = parser.parse_args()
    extra = []
    if args.video_file:
        extra.append("--use-file-for-fake-video-capture=" + os.path.abspath(args.video_file))
    if args.audio_file:
        extra.append("--use-file-for-fake-audio-capture=" + os.path.abspath(args.audio_file))

    port = free_port()
    profile = tempfile.mkdtemp(prefix="browser-peer-")
    driver_process = subprocess.Popen(["chromedriver", f"--port={port}"], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
    driver = WebDriver(port)
    incoming, closed = [], threading.Event()
    lock = threading.Lock()

    def read_stdin():
        for line in sys.stdin:
            line = line.strip().rstrip("\0")
            if not line:
                continue
            try:
                signal = json.loads(line)
            except ValueError:
                log("ignoring a line that is not JSON")
                continue
            with lock:
                incoming.append(signal)
        closed.set()

    status = 1
    try:
        driver.wait_ready(20)
        driver.start(profile, extra)
        driver.open("file://" + PAGE)
        options = {"role": args.role, "echo": args.echo, "sendBytes": args.send_bytes, "media": args.media,
                   "fileMedia": bool(args.video_file), "anyAddress": args.any_address,
                   "iceServers": [{"urls": url} for url in args.stun]}
        driver.run_async("start(args[0]).then(() => done(true), e => done(String(e)));", options)
        threading.Thread(target=read_stdin, daemon=True).start()
        started = time.monotonic()
        reason = None
        while reason is None:
            with lock:
                pending = incoming[:]
                incoming.clear()
            for signal in pending:
                driver.run_async("deliver(args[0]).then(() => done(true));", signal)
            out = driver.run("return drain();")
            for line in out["log"]:
                log(line)
            for signal in out["signals"]:
                sys.stdout.write(json.dumps(signal) + "\n")
                sys.stdout.flush()
            if out["done"]:
                reason = out["done"]
            elif closed.is_set() and not incoming:
                reason = "signaling closed"
            elif args.run_for and time.monotonic() - started > args.run_for:
                sys.stdout.write(json.dumps({"type": "bye"}) + "\n")
                sys.stdout.flush()
                reason = "bye"
            else:
                time.sleep(0.02)
        stats = driver.run_async("inboundRtp().then(done);")
        log("done:", reason, json.dumps(stats))
        if args.stats:
            with open(args.stats, "w") as handle:
                json.dump(stats, handle)
        status = 0 if reason in ("bye", "file sent", "signaling closed") else 1
    finally:
        driver.quit()
        driver_process.terminate()
        try:
            driver_process.wait(10)
        except subprocess.TimeoutExpired:
            driver_process.kill()
        shutil.rmtree(profile, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
