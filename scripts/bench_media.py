#!/usr/bin/env python3
"""Media benchmark, this stack side by side with aiortc in one run.

A 10 s call carrying 640x480 at 30 fps VP8 (encoded from a Y4M file) and
stereo Opus (encoded from a WAV file) from a sender to a recorder that decodes
both and writes WAV + Y4M, on 127.0.0.1. Reports the CPU seconds of each side
(user + system, from wait4) and what arrived, with the ratio to aiortc. A last
row shows this stack's recorder writing the packets as received (Ogg Opus +
IVF, nothing decoded), which aiortc's recorder cannot do. Each figure is the
median of 3 calls; the stacks take turns, call by call, so that a noisy
moment of the machine does not land on one of them only.
Usage: bench_media.py CARRIER_BINARY
Environment: SECONDS_OF_MEDIA (10), REPEAT (3).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIRE = os.path.join(ROOT, "Tests", "Interop", "wire.py")
AIORTC = os.path.join(ROOT, "Tests", "Interop", "aiortc_peer.py")
CARRIER = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/carrier"))
SECONDS = int(os.environ.get("SECONDS_OF_MEDIA", "10"))
REPEAT = int(os.environ.get("REPEAT", "3"))
STACKS = ("carrier", "aiortc", "carrier-passthrough", "carrier-mp4", "aiortc-mp4")


def make_media(work):
    video, audio = os.path.join(work, "video.y4m"), os.path.join(work, "audio.wav")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size=640x480:rate=30:duration={SECONDS + 1}", "-pix_fmt", "yuv420p", video], check=True)
    subprocess.run(["sox", "-n", "-r", "48000", "-b", "16", "-c", "2", audio, "synth", str(SECONDS + 1),
                    "sine", "440", "sine", "660", "gain", "-6"], check=True)
    # The same pictures and tones as people have them: H.264 + AAC in an MP4.
    mp4 = os.path.join(work, "media.mp4")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", video, "-i", audio, "-c:v", "libx264",
                    "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", mp4], check=True)
    return audio, video, mp4


def commands(stack, audio, video, record, stats, mp4=None):
    if stack == "carrier-mp4":
        # The MP4 played through libavformat (decoded, encoded to VP8/Opus); the recording one WebM as received.
        return ([CARRIER, "rtc", "offer", "--host-ip", "127.0.0.1", "--media", mp4,
                 "--duration", str(SECONDS), "--stats", stats[0]],
                [CARRIER, "rtc", "answer", "--host-ip", "127.0.0.1", "--record", record + ".webm", "--stats", stats[1]])
    if stack == "aiortc-mp4":
        # aiortc's MediaPlayer (PyAV decodes, aiortc encodes) and MediaRecorder (decodes and re-encodes to WebM).
        return (["python3", AIORTC, "--loopback", "offer", "--play-audio", mp4, "--play-video", mp4,
                 "--run-for", str(SECONDS), "--stats", stats[0]],
                ["python3", AIORTC, "--loopback", "answer", "--record-webm", record + ".webm", "--stats", stats[1]])
    if stack.startswith("carrier"):
        # The same files as aiortc's recorder writes (decoded WAV + Y4M); the last row
        # writes the packets as received instead.
        formats = ["--record-formats", "opus,ivf" if stack == "carrier-passthrough" else "wav,y4m"]
        return ([CARRIER, "rtc", "offer", "--host-ip", "127.0.0.1", "--audio", audio, "--video", video,
                 "--duration", str(SECONDS), "--stats", stats[0]],
                [CARRIER, "rtc", "answer", "--host-ip", "127.0.0.1", "--record", record, "--stats", stats[1]]
                + formats)
    return (["python3", AIORTC, "--loopback", "offer", "--play-audio", audio, "--play-video", video,
             "--run-for", str(SECONDS), "--stats", stats[0]],
            ["python3", AIORTC, "--loopback", "answer", "--record", record, "--stats", stats[1]])


def frames_in(y4m):
    """Frames in a Y4M file, from its size (every frame is the same length)."""
    if not os.path.exists(y4m):
        return 0
    with open(y4m, "rb") as handle:
        header = handle.readline().split()
    width = int([f for f in header if f.startswith(b"W")][0][1:])
    height = int([f for f in header if f.startswith(b"H")][0][1:])
    frame = 6 + width * height * 3 // 2
    return (os.path.getsize(y4m) - len(b" ".join(header)) - 1) // frame


def webm_frames(path):
    """Video frames ffprobe counts in a WebM (0 if there is none)."""
    if not os.path.exists(path):
        return 0
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v", "-show_entries",
                          "stream=nb_read_frames", "-of", "csv=p=0", path], capture_output=True, text=True)
    try:
        return int(out.stdout.strip().splitlines()[0])
    except (ValueError, IndexError):
        return 0


def run(stack, audio, video, work, mp4):
    record = os.path.join(work, stack + "-rec")
    shutil.rmtree(record, ignore_errors=True)  # the last call's recording
    if os.path.exists(record + ".webm"):
        os.remove(record + ".webm")
    stats = [os.path.join(work, stack + "-offer.json"), os.path.join(work, stack + "-answer.json")]
    offer, answer = commands(stack, audio, video, record, stats, mp4)
    out = subprocess.run([sys.executable, WIRE, str(SECONDS + 60), json.dumps(offer), json.dumps(answer)],
                         capture_output=True, text=True, timeout=SECONDS + 90)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if result["first"] != 0 or result["second"] != 0:
        raise SystemExit(f"{stack} media run failed: {result}")
    wav = os.path.join(record, "audio.wav")
    audio_seconds = (os.path.getsize(wav) - 44) / 4 / 48000 if os.path.exists(wav) else 0
    frames = frames_in(os.path.join(record, "video.y4m")) or webm_frames(record + ".webm")
    return {"sender": result["cpu"][0], "receiver": result["cpu"][1],
            "frames": frames, "audio": audio_seconds,
            "ivf": os.path.exists(os.path.join(record, "video.ivf"))}


def main():
    work = tempfile.mkdtemp(prefix="carrier-bench-media-")
    try:
        audio, video, mp4 = make_media(work)
        calls = {stack: [] for stack in STACKS}
        for _ in range(REPEAT):
            for stack in STACKS:
                calls[stack].append(run(stack, audio, video, work, mp4))
        for stack in STACKS:
            print(f"{stack}: " + ", ".join("CPU %.2f / %.2f s" % (call["sender"], call["receiver"])
                                           for call in calls[stack]), file=sys.stderr)
        results = {stack: {key: statistics.median(call[key] for call in calls[stack]) for key in calls[stack][0]}
                   for stack in STACKS}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%-40s %10s %10s %9s" % (f"{SECONDS} s 640x480@30 VP8 + Opus stereo", "carrier", "aiortc", "ratio"))
    print("(median of %d calls each)" % REPEAT)
    for key, label in (("sender", "sender CPU (s)"), ("receiver", "recorder CPU (s)")):
        ours, theirs = results["carrier"][key], results["aiortc"][key]
        print("%-40s %10.2f %10.2f %8.2fx (lower is better)" % (label, ours, theirs, ours / theirs if theirs else 0))
    print("%-40s %10d %10d" % ("video frames recorded", results["carrier"]["frames"], results["aiortc"]["frames"]))
    print("%-40s %10.1f %10.1f" % ("audio recorded (s)", results["carrier"]["audio"], results["aiortc"]["audio"]))
    passthrough, theirs = results["carrier-passthrough"]["receiver"], results["aiortc"]["receiver"]
    print("%-40s %10.2f %10.2f %8.2fx (lower is better)" % ("recorder CPU, packets as received (s)", passthrough,
                                                            theirs, passthrough / theirs if theirs else 0))
    print()
    print("%-40s %10s %10s %9s" % (f"{SECONDS} s MP4 (H.264 + AAC) played, WebM recorded", "carrier", "aiortc", "ratio"))
    for key, label in (("sender", "player CPU (s)"), ("receiver", "WebM recorder CPU (s)")):
        ours, theirs = results["carrier-mp4"][key], results["aiortc-mp4"][key]
        print("%-40s %10.2f %10.2f %8.2fx (lower is better)" % (label, ours, theirs, ours / theirs if theirs else 0))
    print("%-40s %10d %10d" % ("video frames in the WebM", results["carrier-mp4"]["frames"],
                               results["aiortc-mp4"]["frames"]))


if __name__ == "__main__":
    main()
