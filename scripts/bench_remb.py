#!/usr/bin/env python3
"""make bench, REMB: aiortc sending video through a slow uplink in the
network lab, once to aiortc (whose receiver estimates the path and sends
REMB) and once to `carrier rtc` (ours: ReceiveSideEstimator, docs/protocol.md).
aiortc adapts its VP8 encoder to REMB and to nothing else, so this measures
each receiver's estimate by what the sender does with it.

usage: bench_remb.py CARRIER   (needs root, as the lab does; RUNS=2, SECONDS=20)

Site a's router shapes its uplink to KBIT (350) kbit/s with a 200 ms queue
(tc tbf); aiortc at site a offers and plays a moving 640x480 test picture at
30 fps (ffmpeg's testsrc2), which its encoder starts at 500 kbit/s and can
bring down to its floor of 250; the receiver at site b records. (A noisy
picture is no test here: aiortc's encoder overshoots any target on it.) Prints, per receiver: video frames recorded, the share of
packets the shaper dropped, and what went through.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "Tests", "Lab"))
import lab_rtc  # noqa: E402
import labservices  # noqa: E402
import netlab  # noqa: E402

RUNS = int(os.environ.get("RUNS", "2"))
SECONDS = int(os.environ.get("SECONDS", "20"))
KBIT = int(os.environ.get("KBIT", "350"))
AIORTC = os.path.join(ROOT, "Tests", "Interop", "aiortc_peer.py")


def test_video(work):
    path = os.path.join(work, "testsrc2.y4m")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30",
                    "-t", str(SECONDS + 5), "-pix_fmt", "yuv420p", path], check=True)
    return path


def frames_in(path):
    """Frames in a Y4M file (each starts with FRAME)."""
    if not os.path.exists(path):
        return 0
    count, tail = 0, b""
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            data = tail + chunk
            count += data.count(b"FRAME\n")
            tail = data[-5:]
    return count


def run(lab, coturn, carrier, work, video, receiver, index):
    record = os.path.join(work, f"rec-{receiver}-{index}")
    user, password = coturn.credentials()
    servers = lab_rtc.server_options({}) + ["--turn-user", user, "--turn-pass", password]
    offer = lab.exec_prefix("a") + ["python3", AIORTC, "offer", "--play-video", video, "--run-for", str(SECONDS)]
    offer += servers
    if receiver == "carrier":
        answer = [carrier, "rtc", "answer", "--record", record, "--timeout", str(SECONDS + 30)] + servers
    else:
        answer = ["python3", AIORTC, "answer", "--record", record] + servers
    lab.shape("a", KBIT, 200)
    before = lab.shaped_counts("a")
    env = dict(coturn.env(), WIRE_LOG_PREFIX=os.path.join(work, f"{receiver}-{index}"))
    subprocess.run(["python3", os.path.join(ROOT, "Tests", "Interop", "wire.py"), str(SECONDS + 40),
                    json.dumps(offer), json.dumps(lab.exec_prefix("b") + answer)], env=env, capture_output=True,
                   timeout=SECONDS + 60)
    packets, drops = (now - then for now, then in zip(lab.shaped_counts("a"), before))
    lab.unshape("a")
    return {"frames": frames_in(os.path.join(record, "video.y4m")), "dropped": drops / max(packets + drops, 1),
            "packets": packets}


def main():
    carrier = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="carrier-bench-remb-")
    video = test_video(work)
    results = {"aiortc": [], "carrier": []}
    with netlab.Lab() as lab:
        coturn = labservices.Coturn(lab, work)  # STUN and TURN, as in lab_rtc
        lab.set_nat("a", "cone")
        lab.set_nat("b", "cone")
        for index in range(RUNS):
            for receiver in ("aiortc", "carrier"):  # turns: a noisy moment hits both
                results[receiver].append(run(lab, coturn, carrier, work, video, receiver, index))
                print(receiver, results[receiver][-1], file=sys.stderr, flush=True)
    print(f"\naiortc sending {SECONDS} s of 640x480@30 test video through {KBIT} kbit/s (200 ms queue), "
          f"{RUNS} runs each (medians):")
    print("| receiver (its REMB) | frames recorded | dropped at the shaper | packets through |\n|---|---|---|---|")
    for receiver, rows in results.items():
        frames = statistics.median(r["frames"] for r in rows)
        dropped = statistics.median(r["dropped"] for r in rows)
        packets = statistics.median(r["packets"] for r in rows)
        print(f"| {receiver} | {frames:.0f} of {SECONDS * 30} | {dropped * 100:.1f}% | {packets:.0f} |")


if __name__ == "__main__":
    main()
