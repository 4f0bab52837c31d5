#!/usr/bin/env python3
"""make bench, congestion control: one-way calls through a slow uplink in the
network lab, every stack pair in one run, with a plot per scenario.

usage: bench_congestion.py CARRIER   (needs root, as the lab does)
Environment: SECONDS (30), RUNS (3), SCENARIOS ("steady,drop"), PAIRS (all of
PAIRS below, comma-separated), PLOTS (a directory for the PNGs; default the
run's work directory; matplotlib is installed with pip when missing).

The sender sits at site a, the receiver at site b, both behind cone NATs,
with the lab's coturn as STUN server. Site a's router shapes its uplink with
tc tbf and a 200 ms queue (netlab.Lab.shape):
  steady  400 kbit/s throughout;
  drop    2 Mbit/s, 300 kbit/s from 10 s to 20 s, then 2 Mbit/s again.
The sender plays a noisy 640x480 picture at 30 fps (hard to compress, as in
issue 23's table) and a stereo tone; Chromium plays them as its fake camera
and microphone, aiortc through its MediaPlayer, ours with `carrier rtc offer
--video --audio`. Pairs (sender>receiver): carrier>carrier, aiortc>aiortc,
chromium>chromium, chromium>carrier, chromium>carrier-blind (our answer
stripped of transport-wide feedback and REMB, so Chromium has only our
receiver reports to go on), carrier>chromium.

Per pair: video frames the receiver decoded or recorded, its freezes (ours
and Chromium's), the share of packets the shaper dropped, the 95th percentile
of the queueing delay at the bottleneck while the call ran (tc's backlog at
the link's rate, sampled every 50 ms: the delay every stack's packets
wait there, on top of the lab's own), and the mean rate through the
bottleneck against the link's. The plot shows, per pair, the
rate through the bottleneck each half second (tc's counters), the sender's
estimate where it says it (ours: the stats line; Chromium: its
availableOutgoingBitrate), the link's capacity; the queueing delay at the
bottleneck (tc's backlog at the link's rate); the drops; and the frames the
receiver decoded each second (ours: its stats line; Chromium: framesDecoded;
aiortc says nothing).
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "Tests", "Lab"))
import labservices  # noqa: E402
import netlab  # noqa: E402
from bench_remb import frames_in  # noqa: E402

SECONDS = int(os.environ.get("SECONDS", "30"))
RUNS = int(os.environ.get("RUNS", "3"))
SCENARIOS = os.environ.get("SCENARIOS", "steady,drop").split(",")
PAIRS = os.environ.get("PAIRS", "carrier>carrier,aiortc>aiortc,chromium>chromium,chromium>carrier,"
                       "chromium>carrier-blind,carrier>chromium").split(",")
INTEROP = os.path.join(ROOT, "Tests", "Interop")
QUEUE_MS = 200
# Link capacity over time, kbit/s: (from second, rate), the seconds counted
# from SETUP seconds after the processes start (Chromium takes a few to connect).
SETUP = 5
SHAPES = {"steady": [(0, 400)], "drop": [(0, 2000), (10, 300), (20, 2000)]}
FEEDBACK = re.compile(r"transport-cc|goog-remb|transport-wide-cc")


def make_media(work):
    video, audio = os.path.join(work, "noisy.y4m"), os.path.join(work, "tone.wav")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x480:rate=30",
                    "-vf", "noise=alls=40:allf=t+u", "-t", str(SECONDS + 5), "-pix_fmt", "yuv420p", video], check=True)
    subprocess.run(["sox", "-n", "-r", "48000", "-b", "16", "-c", "2", audio, "synth", str(SECONDS + 5),
                    "sine", "440", "sine", "660", "gain", "-6"], check=True)
    return video, audio


def strip_feedback():
    """As `bench_congestion.py --blind CMD…`: runs CMD, its stdin ours, and
    passes on its signals with every feedback line taken out of their SDP."""
    child = subprocess.Popen(sys.argv[2:], stdout=subprocess.PIPE, text=True)
    for line in child.stdout:
        try:
            signal = json.loads(line)
        except ValueError:
            sys.stdout.write(line)
            continue
        if signal.get("sdp"):
            signal["sdp"] = "\r\n".join(l for l in signal["sdp"].split("\r\n") if not FEEDBACK.search(l))
        sys.stdout.write(json.dumps(signal) + "\n")
        sys.stdout.flush()
    sys.exit(child.wait())


def command(stack, role, lab, work, name, video, audio, stun):
    """The command for one side, in its site's namespace, and where its stats go."""
    stats = os.path.join(work, f"{name}-{role}.json")
    site = "a" if role == "offer" else "b"
    sending = role == "offer"
    if stack.startswith("carrier"):
        line = [CARRIER, "rtc", role, "--stun", stun, "--stats", stats, "--timeout", str(SECONDS + 40)]
        line += ["--video", video, "--audio", audio, "--duration", str(SECONDS)] if sending else \
            ["--record", os.path.join(work, f"{name}-rec"), "--record-formats", "y4m"]
        if stack == "carrier-blind":
            line = ["python3", os.path.abspath(__file__), "--blind"] + line
    elif stack == "aiortc":
        line = ["python3", os.path.join(INTEROP, "aiortc_peer.py"), role, "--stun", stun, "--stats", stats]
        line += ["--play-video", video, "--play-audio", audio, "--run-for", str(SECONDS)] if sending else \
            ["--record", os.path.join(work, f"{name}-rec")]
    else:
        line = ["python3", os.path.join(INTEROP, "browser_peer.py"), role, "--stun", stun, "--any-address",
                "--stats", stats]
        line += ["--media", "--video-file", video, "--audio-file", audio, "--run-for", str(SECONDS)] \
            if sending else []
    return lab.exec_prefix(site) + line, stats


def shaper(lab):
    """Site a's shaped uplink: bytes and packets through, drops, and bytes waiting in its queue."""
    tbf = lab.shaper_counters("a")
    return tbf.get("bytes", 0), tbf.get("packets", 0), tbf.get("drops", 0), tbf.get("backlog", 0)


def load(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def our_lines(path, pattern):
    """(second, number) from `carrier rtc`'s stats lines, one a second: the
    first group of `pattern` in each."""
    points = []
    try:
        with open(path, errors="replace") as handle:
            for second, line in enumerate(l for l in handle if l.startswith("stats:")):
                found = re.search(pattern, line)
                if found:
                    points.append((second + 1, int(found.group(1))))
    except OSError:
        pass
    return points


def percentile95(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0


def per_second(counts):
    """Frames per second from (second, frames so far)."""
    return [(t, n - m) for (t, n), (_, m) in zip(counts[1:], counts)]


def run(lab, work, scenario, pair, index, video, audio, stun):
    sender, receiver = pair.split(">")
    name = f"{scenario}-{sender}-{receiver}-{index}"
    offer, offer_stats = command(sender, "offer", lab, work, name, video, audio, stun)
    answer, answer_stats = command(receiver, "answer", lab, work, name, video, audio, stun)
    shape = SHAPES[scenario]
    lab.shape("a", shape[0][1], QUEUE_MS)
    series, queue, stop = [], [], threading.Event()

    def watch():
        # The backlog every 50 ms: a queue that peaks for a few hundred ms every few seconds shows
        # in several samples, where half-second samples caught it or not by chance (the p95 of 60
        # samples is the third highest). Rates and drops every half second, for the plot.
        started, step, last, last_at, tick = time.monotonic(), 1, shaper(lab), 0.0, 0
        while not stop.wait(0.05):
            now = time.monotonic() - started
            while step < len(shape) and now >= shape[step][0] + SETUP:
                lab.shape("a", shape[step][1], QUEUE_MS)
                step += 1
            counts = shaper(lab)
            queue.append((now, counts[3] * 8 / shape[step - 1][1]))  # bytes waiting, at the link's rate
            tick += 1
            if tick % 10 == 0:
                # Ten ticks take a little over half a second (tc's own time): rates over the time taken.
                elapsed = now - last_at
                series.append((now, (counts[0] - last[0]) * 8 / 1000 / elapsed, (counts[2] - last[2]) / elapsed))
                last, last_at = counts, now

    before = shaper(lab)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    env = dict(os.environ, WIRE_LOG_PREFIX=os.path.join(work, name))
    subprocess.run(["python3", os.path.join(INTEROP, "wire.py"), str(SECONDS + 60), json.dumps(offer),
                    json.dumps(answer)], env=env, capture_output=True, timeout=SECONDS + 90)
    stop.set()
    thread.join()
    after = shaper(lab)
    lab.unshape("a")
    sent, received = load(offer_stats), load(answer_stats)
    if receiver == "chromium":
        frames, freezes = received.get("framesDecoded", 0), received.get("freezeCount")
    else:
        frames = frames_in(os.path.join(work, f"{name}-rec", "video.y4m"))
        video_in = next((r for r in received.get("media", {}).get("received", []) if r.get("kind") == "video"), {})
        freezes = video_in.get("freezes")
    # The recording (a y4m of the whole call, about half a gigabyte) is counted: only the logs stay.
    shutil.rmtree(os.path.join(work, f"{name}-rec"), ignore_errors=True)
    packets, drops = after[1] - before[1], after[2] - before[2]
    if sender == "chromium":
        targets = [(p["t"], p["target"] / 1000) for p in sent.get("series", []) if p.get("target")]
    elif sender.startswith("carrier"):
        targets = our_lines(os.path.join(work, name + ".first.err"), r"target (\d+) kbit/s")
    else:
        targets = []
    if receiver == "chromium":
        fps = per_second([(p["t"], p["framesDecoded"]) for p in received.get("series", []) if "framesDecoded" in p])
    elif receiver.startswith("carrier"):
        fps = per_second(our_lines(os.path.join(work, name + ".second.err"), r"↓video (\d+) fr"))
    else:
        fps = []
    queued = [ms for at, ms in queue if SETUP <= at <= SETUP + SECONDS]
    return {"frames": frames, "freezes": freezes, "dropped": drops / max(packets + drops, 1),
            "queue_p95": percentile95(queued),
            "kbps": (after[0] - before[0]) * 8 / 1000 / SECONDS, "series": series, "queue": queue,
            "targets": targets, "fps": fps}


def plot(results, scenario, directory):
    try:
        import matplotlib
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "matplotlib"],
                       check=False)
        try:
            import matplotlib
        except ImportError:
            print("no plots: matplotlib is not installed and pip could not install it", file=sys.stderr)
            return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (rates, queue, drops, frames) = plt.subplots(4, 1, figsize=(11, 11), sharex=True,
                                                         height_ratios=[3, 1.2, 1, 1.2])
    shape = SHAPES[scenario]
    end = SECONDS + SETUP + 5
    steps = [(start + SETUP if start else 0, rate) for start, rate in shape if start + SETUP < end]
    steps.append((end, steps[-1][1]))
    rates.step([s for s, _ in steps], [r for _, r in steps], where="post", color="black", linewidth=2,
               label="link capacity")
    for pair, rows in results.items():
        run = rows[0]
        seconds = [point[0] for point in run["series"]]
        line, = rates.plot(seconds, [point[1] for point in run["series"]], label=f"{pair} through")
        if run["targets"]:
            # Ours count from the connection (about a second in), Chromium's from its page's start.
            offset = 0 if pair.startswith("chromium") else 1
            rates.plot([t + offset for t, _ in run["targets"]], [k for _, k in run["targets"]], linestyle="--",
                       color=line.get_color(), label=f"{pair} estimate")
        drops.plot(seconds, [point[2] for point in run["series"]], color=line.get_color())
        queue.plot([at for at, _ in run["queue"]], [ms for _, ms in run["queue"]], color=line.get_color(),
                   linewidth=0.8)
        if run["fps"]:
            # The receiver's frames count from its connection, about a second in (Chromium's from its page).
            offset = 0 if pair.endswith("chromium") else 1
            frames.plot([t + offset for t, _ in run["fps"]], [n for _, n in run["fps"]], color=line.get_color())
    rates.set_ylabel("kbit/s")
    queue.set_ylabel("queueing delay (ms)")
    frames.set_ylabel("frames/s decoded")
    drops.set_yscale("symlog")
    rates.set_title(f"{scenario}: one-way call through a {QUEUE_MS} ms tbf queue (sender > receiver)")
    rates.legend(fontsize=7, ncol=2)
    drops.set_ylabel("drops/s")
    frames.set_xlabel("seconds since the processes started")
    path = os.path.join(directory, f"congestion-{scenario}.png")
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def main():
    global CARRIER
    if len(sys.argv) > 1 and sys.argv[1] == "--blind":
        return strip_feedback()
    CARRIER = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="carrier-bench-congestion-")
    plots = os.environ.get("PLOTS", work)
    os.makedirs(plots, exist_ok=True)
    video, audio = make_media(work)
    with netlab.Lab() as lab:
        coturn = labservices.Coturn(lab, work)
        # An address, not a name: Chromium in a namespace did not resolve the lab's names.
        stun = f"stun:{netlab.SERVER_IP}:{labservices.TURN_PORT}"
        lab.set_nat("a", "cone")
        lab.set_nat("b", "cone")
        for scenario in SCENARIOS:
            results = {pair: [] for pair in PAIRS}
            for index in range(RUNS):
                for pair in PAIRS:  # turns: a noisy moment hits every pair
                    results[pair].append(run(lab, work, scenario, pair, index, video, audio, stun))
                    row = {k: v for k, v in results[pair][-1].items() if k not in ("series", "queue", "targets", "fps")}
                    print(scenario, pair, row, file=sys.stderr, flush=True)
            link = "400 kbit/s" if scenario == "steady" else "2 Mbit/s, 300 kbit/s for 10 s, 2 Mbit/s"
            print(f"\n{scenario}: {SECONDS} s of noisy 640x480@30 video and a tone through {link} "
                  f"({QUEUE_MS} ms queue), {RUNS} run(s) per pair (medians):")
            print("| sender > receiver | video frames (of %d) | freezes | dropped at the shaper "
                  "| p95 queueing delay (ms) | mean kbit/s through |" % (SECONDS * 30))
            print("|---|---|---|---|---|---|")
            for pair, rows in results.items():
                frames = statistics.median(r["frames"] for r in rows)
                freezes = [r["freezes"] for r in rows if r["freezes"] is not None]
                dropped = statistics.median(r["dropped"] for r in rows)
                kbps = statistics.median(r["kbps"] for r in rows)
                queue_p95 = statistics.median(r["queue_p95"] for r in rows)
                shown = f"{statistics.median(freezes):.0f}" if freezes else "—"
                print(f"| {pair} | {frames:.0f} | {shown} | {dropped * 100:.1f}% | {queue_p95:.0f} | {kbps:.0f} |")
            path = plot(results, scenario, plots)
            if path:
                print(f"plot: {path}")
    for made in (video, audio):
        os.remove(made)
    print(f"logs: {work}")


CARRIER = None
if __name__ == "__main__":
    main()
