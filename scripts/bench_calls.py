#!/usr/bin/env python3
"""Calls between two friends: this stack and ToxAV side by side in one run.

Two friends on a local toxcore network (a `carrier node` on 127.0.0.1), both
online, the callee answering at once and both sides sending a 48 kHz stereo
tone and 640x480 video at 30 fps. For each call: dial to the first decoded
audio and video frame at the callee and at the caller, from wall-clock
stamps both processes report. This stack: `carrier daemon` places the calls
(`carrier call` through its control socket, so the dial is the daemon's, not
a process start) and `carrier listen --answer` answers; each side's summary
carries the setup step by step (docs/cli.md, "steps"). ToxAV: the program in
scripts/toxav_bench.c, built here from Debian's c-toxcore, its loops at their
default intervals. The stacks take turns, call by call; medians of CALLS.
Then a message with its delivery receipt between the same online friends
(`carrier message` through the daemon; the time is the node's, send to
receipt).
Usage: bench_calls.py CARRIER_BINARY
The capture-to-decoded delay of our calls comes from each receiver's stats
(the frame's RTP time on the sender's clock, from its sender reports).
Environment: CALLS (10), CALL_SECONDS (3, media per call; not SECONDS, which bash sets).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CARRIER = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/carrier"))
CALLS = int(os.environ.get("CALLS", "10"))
SECONDS = float(os.environ.get("CALL_SECONDS", "3"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from labservices import base58_to_hex  # noqa: E402


class Lines:
    """A child's stdout lines, collected by a thread; waited for with a timeout."""

    def __init__(self, args, stdin=None, stderr=subprocess.DEVNULL, env=None):
        self.process = subprocess.Popen(args, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
        self.lines = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            with self.cond:
                self.lines.append(line.strip())
                self.cond.notify_all()

    def wait(self, predicate, timeout, start=0):
        """The first line from index `start` on that matches, and its index."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for index in range(start, len(self.lines)):
                    if predicate(self.lines[index]):
                        return self.lines[index], index
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self.process.args[0]}: no such line within {timeout} s")
                self.cond.wait(remaining)

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def stop_all(*processes):
    """Stops each of the `Lines` processes (or stacks) given, skipping the ones never started."""
    for process in processes:
        if process:
            process.stop()


def carrier(*args, timeout=120):
    done = subprocess.run([CARRIER, *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"carrier {args[0]}: {done.stderr[-800:]}")
    return done.stdout.strip().splitlines()


def make_media(work):
    video, audio = os.path.join(work, "video.y4m"), os.path.join(work, "audio.wav")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size=640x480:rate=30:duration={SECONDS + 2}", "-pix_fmt", "yuv420p", video],
                   check=True)
    subprocess.run(["sox", "-n", "-r", "48000", "-b", "16", "-c", "2", audio, "synth", str(SECONDS + 2),
                    "sine", "440", "sine", "660", "gain", "-6"], check=True)
    return audio, video


class Ours:
    def __init__(self, work, entry, audio, video):
        self.common = ["--bootstrap", entry, "--loopback"]
        self.alice, self.bob = os.path.join(work, "alice"), os.path.join(work, "bob")
        self.media = ["--audio", audio, "--video", video]
        bob = json.loads(carrier("id", "--json", "--data", self.bob)[-1])
        self.bob_id, bob_address = bob["userId"], bob["address"]
        self.listener = Lines([CARRIER, "listen", "--accept-friends", "--answer", *self.media, "--json",
                               "--data", self.bob, *self.common])
        self.daemon = Lines([CARRIER, "daemon", "--json", "--data", self.alice, *self.common])
        self.daemon.wait(lambda line: "daemonReady" in line, 30)
        carrier("friend", "add", bob_address, "--wait", "120", "--data", self.alice, timeout=180)
        self.seen = 0
        self.latency = {}  # "caller audio" → each call's median capture-to-decoded delay, ms

    def call(self):
        summary = json.loads(carrier("call", self.bob_id, *self.media, "--duration", str(SECONDS), "--json",
                                     "--data", self.alice)[-1])
        line, self.seen = self.listener.wait(lambda l: '"callEnded"' in l, 30, self.seen)
        self.seen += 1
        caller, callee = summary["steps"], json.loads(line)["steps"]
        offset = callee["startUnixMs"] - caller["startUnixMs"]  # the callee's steps on the caller's clock
        row = {"calleeAudio": callee.get("firstFrameAudio", float("nan")) + offset,
               "calleeVideo": callee.get("firstFrameVideo", float("nan")) + offset,
               "callerAudio": caller.get("firstFrameAudio", float("nan")),
               "callerVideo": caller.get("firstFrameVideo", float("nan"))}
        for side, received in (("caller", summary["media"]["received"]), ("callee", json.loads(line)["received"])):
            for stats in received:
                if "latencyMs" in stats:
                    self.latency.setdefault(f"{side} {stats['kind']}", []).append(stats["latencyMs"])
        steps = {f"caller {k}": v for k, v in caller.items() if k != "startUnixMs"}
        steps.update({f"callee {k}": v + offset for k, v in callee.items() if k != "startUnixMs"})
        return row, steps

    def messages(self, count):
        times = []
        for index in range(count):
            result = json.loads(carrier("message", self.bob_id, f"ping {index}", "--json", "--data", self.alice)[-1])
            times.append(result["ms"])
            time.sleep(0.5)
        return times

    def stop(self):
        self.daemon.stop()
        self.listener.stop()


class ToxAV:
    def __init__(self, binary, host, port, key):
        args = [host, str(port), key, str(CALLS), str(SECONDS)]
        self.callee = Lines([binary, "callee", *args], stdin=subprocess.PIPE)
        self.caller = Lines([binary, "caller", *args], stdin=subprocess.PIPE)
        callee_address = json.loads(self.callee.wait(lambda l: "address" in l, 30)[0])["address"]
        caller_address = json.loads(self.caller.wait(lambda l: "address" in l, 30)[0])["address"]
        self.callee.process.stdin.write(caller_address + "\n")
        self.callee.process.stdin.flush()
        self.caller.process.stdin.write(callee_address + "\n")
        self.caller.process.stdin.flush()
        self.seen = 1

    def call(self):
        self.caller.process.stdin.write("call\n")
        self.caller.process.stdin.flush()
        line, _ = self.caller.wait(lambda l: '"dial"' in l, 180, self.seen)
        callee_line, _ = self.callee.wait(lambda l: '"incoming"' in l, 30, self.seen)
        self.seen += 1
        caller, callee = json.loads(line), json.loads(callee_line)
        dial = caller["dial"]
        late = lambda stamp: stamp - dial if stamp else float("nan")
        row = {"calleeAudio": late(callee["firstAudio"]), "calleeVideo": late(callee["firstVideo"]),
               "callerAudio": late(caller["firstAudio"]), "callerVideo": late(caller["firstVideo"])}
        steps = {"callee incoming": late(callee["incoming"]), "callee answered": late(callee["answered"]),
                 "caller answered": late(caller["answered"])}
        return row, steps

    def stop(self):
        self.caller.stop()
        self.callee.stop()


def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")


def main():
    work = tempfile.mkdtemp(prefix="carrier-bench-calls-")
    node = ours = toxav = None
    try:
        binary = os.path.join(work, "toxav_bench")
        subprocess.run(["cc", "-O2", "-o", binary, os.path.join(ROOT, "scripts", "toxav_bench.c"),
                        *subprocess.run(["pkg-config", "--cflags", "--libs", "toxcore"], capture_output=True,
                                        text=True, check=True).stdout.split(), "-lpthread", "-lm"], check=True)
        audio, video = make_media(work)
        node = Lines([CARRIER, "node", "--host", "127.0.0.1"])
        entry, _ = node.wait(lambda l: l.startswith("127.0.0.1:"), 30)
        host, port, key = entry.split(":")
        print(f"calls: two friends online on 127.0.0.1, tone + 640x480@30 both ways, answered at once, "
              f"{CALLS} calls each, taking turns", file=sys.stderr)
        toxav = ToxAV(binary, host, int(port), base58_to_hex(key))
        ours = Ours(work, entry, audio, video)
        time.sleep(3)  # both pairs on their direct UDP links
        rows = {"carrier": [], "toxav": []}
        steps = {"carrier": [], "toxav": []}
        for index in range(CALLS):
            for name, stack in (("carrier", ours), ("toxav", toxav)):
                row, detail = stack.call()
                rows[name].append(row)
                steps[name].append(detail)
                print(f"  {name} call {index}: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()),
                      file=sys.stderr)
        print(f"\nDial to first decoded frame (ms, median of {CALLS}; lower is better)")
        print(f"{'':14} {'carrier':>9} {'ToxAV':>9} {'ratio':>7}")
        for key in ("calleeAudio", "calleeVideo", "callerAudio", "callerVideo"):
            ours_ms = median([r[key] for r in rows["carrier"]])
            theirs = median([r[key] for r in rows["toxav"]])
            print(f"{key:14} {ours_ms:9.1f} {theirs:9.1f} {ours_ms / theirs:7.2f}")
        for name in ("carrier", "toxav"):
            keys = sorted({k for detail in steps[name] for k in detail},
                          key=lambda k: median([d.get(k, float("nan")) for d in steps[name]]))
            print(f"{name} steps (ms after the dial, median): "
                  + ", ".join(f"{k} {median([d.get(k, float('nan')) for d in steps[name]]):.1f}" for k in keys))
        print("\nCapture to decoded frame, carrier (ms; each call's median from its sender reports, then the "
              "median over the calls; the same clock on both sides):")
        for key in sorted(ours.latency):
            print(f"  {key}: {median(ours.latency[key]):.1f} (calls {min(ours.latency[key]):.1f}-"
                  f"{max(ours.latency[key]):.1f})")
        times = ours.messages(CALLS)
        print(f"\nMessage with its delivery receipt, friends online (carrier through the daemon): median "
              f"{median(times):.1f} ms, {min(times):.1f}-{max(times):.1f} ms over {len(times)}")
    finally:
        stop_all(toxav, ours, node)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
