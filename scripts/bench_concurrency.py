#!/usr/bin/env python3
"""Many calls at once into one answering process.

A `carrier listen --answer` process (Bob) takes N calls at once from one
friend (Alice's `carrier daemon`, each call placed by a `carrier call`
through it, 50 ms apart), Opus both ways (a looping stereo tone), every call
recorded by Bob (WAV, so each one is decoded; he encodes what he sends from a
WAV file). Alice's side is made cheap, since it shares the two cores: she sends
Opus as it is in an Ogg file (media/tone.opus) and keeps what she receives as
it came (Ogg Opus); with video, the VP8 of media/testsrc.ivf as it is. For each N: Bob's CPU per call (user + system, % of a
core, while all N run), Bob's memory per call (resident set growth over the
idle process), his threads, and whether any call's audio broke up (frames
concealed or packets lost at either end, or a call that did not connect).
Then the same with video too (640x480@30 VP8 both ways, recorded as IVF).
The point where audio starts to break up is this machine's limit.
Usage: bench_concurrency.py CARRIER_BINARY
Environment: AUDIO_CALLS ("100,200,300"), VIDEO_CALLS ("8,16,24"), CALL_SECONDS (30: each call's length once
connected).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench_calls import Lines, carrier  # noqa: E402  (the same process helpers)

CARRIER = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/carrier"))
AUDIO_CALLS = [int(n) for n in os.environ.get("AUDIO_CALLS", "100,200,300").split(",") if n]
VIDEO_CALLS = [int(n) for n in os.environ.get("VIDEO_CALLS", "8,16,24").split(",") if n]
SECONDS = float(os.environ.get("CALL_SECONDS", "30"))
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def status(pid, key):
    with open(f"/proc/{pid}/status") as text:
        for line in text:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def make_media(work):
    audio, video = os.path.join(work, "tone.wav"), os.path.join(work, "video.y4m")
    subprocess.run(["sox", "-n", "-r", "48000", "-b", "16", "-c", "2", audio, "synth", "10",
                    "sine", "440", "sine", "660", "gain", "-6"], check=True)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc2=size=640x480:rate=30:duration=5", "-pix_fmt", "yuv420p", video], check=True)
    return audio, video


def run(count, video, work, entry, audio_file, video_file):
    """N calls at once; Bob's figures and whether any call broke up."""
    tag = f"{'video' if video else 'audio'}-{count}"
    common = ["--bootstrap", entry, "--loopback"]
    alice, bob = os.path.join(work, tag, "alice"), os.path.join(work, tag, "bob")
    media = ["--audio", audio_file, "--loop"] + (["--video", video_file] if video else [])
    # Alice sends Opus as it is in an Ogg file and keeps what she receives as it came: her side
    # costs little, so that the two cores go to Bob, whose every call encodes and decodes.
    alice_media = ["--audio", os.path.join(ROOT, "media", "tone.opus"), "--loop"] + (
        ["--video", os.path.join(ROOT, "media", "testsrc.ivf")] if video else [])
    bob_info = json.loads(carrier("id", "--json", "--data", bob)[-1])
    listener = Lines([CARRIER, "listen", "--accept-friends", "--answer", *media, "--record", os.path.join(work, tag, "rec"),
                      "--record-formats", "wav,ivf" if video else "wav", "--json", "--data", bob, *common])
    daemon = Lines([CARRIER, "daemon", "--json", "--data", alice, *common])
    calls = []
    try:
        daemon.wait(lambda line: "daemonReady" in line, 30)
        carrier("friend", "add", bob_info["address"], "--wait", "120", "--data", alice, timeout=180)
        time.sleep(3)  # the direct link
        pid = listener.process.pid
        idle_rss = status(pid, "VmRSS")
        outputs = []
        for index in range(count):
            process = subprocess.Popen(
                [CARRIER, "call", bob_info["userId"], *alice_media, "--duration", str(SECONDS), "--record",
                 os.path.join(work, tag, f"alice-{index}"), "--record-formats", "opus,ivf" if video else "opus",
                 "--ring-timeout", "60", "--json", "--data", alice], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                text=True)
            calls.append(process)
            outputs.append(None)
            time.sleep(0.05)
        # All connected: Bob has said so for each call.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            connected = sum('"state":"connected"' in line for line in list(listener.lines))
            if connected >= count:
                break
            time.sleep(0.2)
        window = max(SECONDS - 5, 5)
        time.sleep(1)
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        time.sleep(window / 2)
        rss, threads = status(pid, "VmRSS"), status(pid, "Threads")
        time.sleep(window / 2)
        cpu = (cpu_seconds(pid) - cpu0) / (time.monotonic() - t0)
        summaries = []
        for index, process in enumerate(calls):
            out, _ = process.communicate(timeout=SECONDS + 120)
            lines = [line for line in out.splitlines() if line.startswith("{")]
            summaries.append(json.loads(lines[-1]) if lines else {})
        ended_deadline = time.monotonic() + 30
        while time.monotonic() < ended_deadline:
            ended = [json.loads(l) for l in list(listener.lines) if '"callEnded"' in l]
            if len(ended) >= count:
                break
            time.sleep(0.2)
        failures = {}
        for summary in summaries:
            if not summary.get("connected"):
                why = f"{summary.get('endReason', '?')}: {summary.get('error', summary.get('endDetail', ''))[:80]}"
                failures[why] = failures.get(why, 0) + 1
        for why, times in failures.items():
            print(f"    {times} not connected: {why}", file=sys.stderr)
        broken = 0
        for summary in summaries:
            received = summary.get("media", {}).get("received", [])
            audio = [r for r in received if r.get("kind") == "audio"]
            if not summary.get("connected") or not audio or audio[0].get("concealedFrames", 0) or audio[0].get("lost", 0):
                broken += 1
        for end in ended:
            audio = [r for r in end.get("received", []) if r.get("kind") == "audio"]
            if not audio or audio[0].get("concealedFrames", 0) or audio[0].get("lost", 0):
                broken += 1
        return {"calls": count, "video": video, "cpuPerCall": 100 * cpu / count, "cpu": 100 * cpu,
                "mbPerCall": (rss - idle_rss) / 1024 / count, "threads": threads, "connected":
                sum(1 for s in summaries if s.get("connected")), "brokenEnds": broken, "ended": len(ended)}
    finally:
        for process in calls:
            if process.poll() is None:
                process.kill()
        daemon.stop()
        listener.stop()


def main():
    work = tempfile.mkdtemp(prefix="carrier-bench-concurrency-")
    node = None
    try:
        audio_file, video_file = make_media(work)
        node = Lines([CARRIER, "node", "--host", "127.0.0.1"])
        entry, _ = node.wait(lambda line: line.startswith("127.0.0.1:"), 30)
        print(f"concurrent calls into one answering process, {SECONDS:.0f} s each, on {os.cpu_count()} cores",
              file=sys.stderr)
        rows = []
        for video, counts in ((False, AUDIO_CALLS), (True, VIDEO_CALLS)):
            for count in counts:
                row = run(count, video, work, entry, audio_file, video_file)
                rows.append(row)
                print(f"  {json.dumps(row)}", file=sys.stderr)
                shutil.rmtree(os.path.join(work, f"{'video' if video else 'audio'}-{count}"), ignore_errors=True)
        print(f"\nCalls at once into one `listen --answer` (each recorded; {SECONDS:.0f} s; CPU while all run)")
        print(f"{'kind':6} {'calls':>6} {'connected':>10} {'CPU %':>7} {'CPU %/call':>11} {'MB/call':>8} "
              f"{'threads':>8} {'broke up':>9}")
        for row in rows:
            print(f"{'video' if row['video'] else 'audio':6} {row['calls']:6d} {row['connected']:10d} "
                  f"{row['cpu']:7.1f} {row['cpuPerCall']:11.2f} {row['mbPerCall']:8.2f} {row['threads']:8d} "
                  f"{row['brokenEnds']:9d}")
        print("(broke up: call ends, of 2 per call, with audio frames concealed or packets lost, or not connected)")
    finally:
        if node:
            node.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
