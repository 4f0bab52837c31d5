#!/usr/bin/env python3
"""An aiortc peer for interop tests and benchmarks.

Speaks the signaling of `carrier rtc`: one RtcSignal JSON object per line on
stdin/stdout ({"type":"offer"|"answer","sdp":...}, {"type":"candidate",
"candidates":[{"sdp","sdpMLineIndex","sdpMid"}]}, {"type":"bye"}); logs go to
stderr. Files use the binary file protocol of docs/file-protocol.md.
Media: --media sends aiortc's synthetic tracks; --play-audio/--play-video send
files through aiortc's MediaPlayer (PyAV decodes, aiortc encodes); --record DIR
writes what arrives, decoded by aiortc, as DIR/audio.wav and DIR/video.y4m.
"""
import argparse
import asyncio
import hashlib
import json
import os
import sys
import tempfile
import time
import wave

import aioice.ice
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription
from aiortc.rtcconfiguration import RTCIceTransportPolicy
from aiortc.contrib.media import MediaPlayer, MediaRecorder
from aiortc.mediastreams import AudioStreamTrack, MediaStreamError, MediaStreamTrack, VideoStreamTrack
from aiortc.sdp import candidate_from_sdp

CHUNK = 64 * 1024
HIGH_WATER = 4 * 1024 * 1024
LOW_WATER = 1024 * 1024


def log(*parts):
    print("aiortc-peer:", *parts, file=sys.stderr, flush=True)


def emit(signal):
    sys.stdout.write(json.dumps(signal) + "\n")
    sys.stdout.flush()


def parse_ack(message):
    """The file-ack object if `message` is one, else None."""
    if not isinstance(message, str):
        return None
    try:
        value = json.loads(message)
    except ValueError:
        return None
    return value if isinstance(value, dict) and value.get("type") == "file-ack" else None


async def inbound_packets(pc):
    """Packets received per media kind, from aiortc's stats."""
    counts = {}
    for receiver in pc.getReceivers():
        report = await receiver.getStats()
        for stat in report.values():
            if stat.type == "inbound-rtp":
                counts[stat.kind] = counts.get(stat.kind, 0) + stat.packetsReceived
    return counts


async def record_track(track, directory, stats):
    """Writes a received track's decoded frames: audio to WAV (s16), video to Y4M (I420)."""
    os.makedirs(directory, exist_ok=True)
    counts = stats.setdefault("recorded", {})
    counts[track.kind] = 0
    writer = None
    try:
        while True:
            frame = await track.recv()
            if track.kind == "audio":
                data = frame.to_ndarray().tobytes()  # packed s16, channels interleaved
                if writer is None:
                    writer = wave.open(os.path.join(directory, "audio.wav"), "wb")
                    writer.setnchannels(len(frame.layout.channels))
                    writer.setsampwidth(2)
                    writer.setframerate(frame.sample_rate)
                writer.writeframes(data)
            else:
                image = frame.to_ndarray(format="yuv420p")
                if writer is None:
                    writer = open(os.path.join(directory, "video.y4m"), "wb")
                    writer.write(b"YUV4MPEG2 W%d H%d F30:1 Ip A1:1 C420jpeg\n" % (frame.width, frame.height))
                writer.write(b"FRAME\n" + image.tobytes())
                writer.flush()
            counts[track.kind] += 1
    except MediaStreamError:
        pass
    finally:
        if writer is not None:
            writer.close()


async def send_file(channel, path, stats):
    data_size = os.path.getsize(path)
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    channel.send(json.dumps({"type": "file", "name": os.path.basename(path), "size": data_size,
                             "sha256": digest.hexdigest()}))
    drained = asyncio.Event()
    channel.bufferedAmountLowThreshold = LOW_WATER
    channel.on("bufferedamountlow", drained.set)
    started = time.monotonic()
    with open(path, "rb") as handle:
        sent = 0
        while sent < data_size:
            if channel.bufferedAmount > HIGH_WATER:
                drained.clear()
                await drained.wait()
                continue
            block = handle.read(CHUNK)
            channel.send(block)
            sent += len(block)
    stats["sendStarted"] = started
    stats["bytes"] = data_size
    stats["sha256"] = digest.hexdigest()


class FileReceiver:
    """Receives files per the binary file protocol into a directory."""

    def __init__(self, directory, channel, done):
        os.makedirs(directory, exist_ok=True)
        self.directory, self.channel, self.done = directory, channel, done
        self.current = None

    def on_message(self, message):
        if isinstance(message, str):
            header = json.loads(message)
            if header.get("type") != "file":
                return
            name = os.path.basename(header["name"]) or "received"
            handle = tempfile.NamedTemporaryFile(dir=self.directory, delete=False, prefix=".partial-")
            self.current = {"name": name, "size": int(header["size"]), "sha256": header["sha256"],
                            "handle": handle, "received": 0, "digest": hashlib.sha256(), "started": time.monotonic()}
            if self.current["size"] == 0:
                self.finish()
            return
        if self.current is None:
            return
        self.current["handle"].write(message)
        self.current["digest"].update(message)
        self.current["received"] += len(message)
        if self.current["received"] >= self.current["size"]:
            self.finish()

    def finish(self):
        current, self.current = self.current, None
        current["handle"].close()
        actual = current["digest"].hexdigest()
        ok = actual == current["sha256"] and current["received"] == current["size"]
        if ok:
            os.replace(current["handle"].name, os.path.join(self.directory, current["name"]))
        else:
            os.unlink(current["handle"].name)
        self.channel.send(json.dumps({"type": "file-ack", "name": current["name"], "size": current["received"],
                                      "sha256": actual, "ok": ok}))
        elapsed = time.monotonic() - current["started"]
        self.done.set_result({"bytes": current["received"], "sha256": actual, "ok": ok, "seconds": elapsed})


async def main():
    if os.environ.get("AIORTC_PEER_DEBUG"):
        import logging
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("role", choices=["offer", "answer"])
    parser.add_argument("--loopback", action="store_true", help="gather only 127.0.0.1")
    parser.add_argument("--echo", action="store_true")
    parser.add_argument("--send-file")
    parser.add_argument("--receive-dir")
    parser.add_argument("--media", action="store_true", help="send aiortc's test audio and video tracks")
    parser.add_argument("--play-audio", help="send this media file's audio")
    parser.add_argument("--play-video", help="send this media file's video")
    parser.add_argument("--record", help="write received audio and video into this directory")
    parser.add_argument("--record-webm", help="record received audio and video with aiortc's MediaRecorder")
    parser.add_argument("--run-for", type=float, default=0, help="with --media: stay connected this many seconds, then bye")
    parser.add_argument("--stun", action="append", default=[], help="a STUN URL (repeatable)")
    parser.add_argument("--turn", action="append", default=[], help="a TURN URL (repeatable)")
    parser.add_argument("--turn-user")
    parser.add_argument("--turn-pass")
    parser.add_argument("--relay-only", action="store_true")
    parser.add_argument("--stats")
    args = parser.parse_args()

    if args.loopback:
        aioice.ice.get_host_addresses = lambda use_ipv4, use_ipv6: ["127.0.0.1"]
    servers = [RTCIceServer(urls=url) for url in args.stun]
    servers += [RTCIceServer(urls=url, username=args.turn_user, credential=args.turn_pass) for url in args.turn]
    config = RTCConfiguration(iceServers=servers)
    if args.relay_only:
        config.iceTransportPolicy = RTCIceTransportPolicy.RELAY
    pc = RTCPeerConnection(config)
    loop = asyncio.get_running_loop()
    finished = loop.create_future()
    received = loop.create_future()
    stats = {"role": args.role, "stack": "aiortc"}
    t0 = time.monotonic()
    rtp_counts = {}

    def finish(reason):
        if not finished.done():
            finished.set_result(reason)

    def use_channel(channel):
        log("channel", channel.label)

        @channel.on("open")
        def on_open():
            stats["setupMs"] = round((time.monotonic() - t0) * 1000, 1)
            if args.send_file:
                asyncio.ensure_future(send_file(channel, args.send_file, stats))

        receiver = FileReceiver(args.receive_dir, channel, received) if args.receive_dir else None

        @channel.on("message")
        def on_message(message):
            if args.echo:
                channel.send(message)
                return
            ack = parse_ack(message)
            if ack is not None:
                elapsed = time.monotonic() - stats.get("sendStarted", t0)
                stats.update({"ok": ack.get("ok", False), "ackSha256": ack.get("sha256"),
                              "MBps": round(stats.get("bytes", 0) / 1e6 / max(elapsed, 1e-9), 2)})
                emit({"type": "bye"})
                finish("file sent")
                return
            if receiver:
                receiver.on_message(message)

        if channel.readyState == "open":
            on_open()

    @pc.on("datachannel")
    def on_datachannel(channel):
        use_channel(channel)

    @pc.on("connectionstatechange")
    def on_state():
        log("connection", pc.connectionState)
        if pc.connectionState == "connected" and "setupMs" not in stats:
            stats["setupMs"] = round((time.monotonic() - t0) * 1000, 1)
        if pc.connectionState == "connected" and webm_recorder and not webm_started:
            webm_started.append(asyncio.ensure_future(webm_recorder.start()))
        if pc.connectionState == "failed":
            finish("failed")

    recordings = []
    webm_recorder = MediaRecorder(args.record_webm) if args.record_webm else None
    webm_started = []

    @pc.on("track")
    def on_track(track):
        rtp_counts[track.kind] = 0
        log("track", track.kind)
        if args.record:
            recordings.append(asyncio.ensure_future(record_track(track, args.record, stats)))
        if webm_recorder:
            webm_recorder.addTrack(track)

    players = []

    def add_media():
        if args.media:
            pc.addTrack(AudioStreamTrack())
            pc.addTrack(VideoStreamTrack())
        for path, kind in ((args.play_audio, "audio"), (args.play_video, "video")):
            if path:
                player = MediaPlayer(path)
                players.append(player)
                pc.addTrack(player.audio if kind == "audio" else player.video)

    if args.role == "offer":
        add_media()
        use_channel(pc.createDataChannel("data"))
        await pc.setLocalDescription(await pc.createOffer())
        emit({"type": "offer", "sdp": pc.localDescription.sdp})

    async def read_signals():
        reader = asyncio.StreamReader(limit=1 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            line = await reader.readline()
            if not line:
                finish("signaling closed")
                return
            try:
                signal = json.loads(line.decode().rstrip("\0\r\n"))
            except ValueError:
                log("ignoring a line that is not JSON")
                continue
            kind = signal.get("type")
            if kind in ("offer", "answer"):
                await pc.setRemoteDescription(RTCSessionDescription(sdp=signal["sdp"], type=kind))
                if kind == "offer":
                    add_media()
                    await pc.setLocalDescription(await pc.createAnswer())
                    emit({"type": "answer", "sdp": pc.localDescription.sdp})
            elif kind == "candidate":
                for item in signal.get("candidates", []):
                    text = item.get("sdp", "")
                    if not text:
                        continue
                    candidate = candidate_from_sdp(text.split(":", 1)[1] if text.startswith("candidate:") else text)
                    candidate.sdpMid = item.get("sdpMid")
                    candidate.sdpMLineIndex = item.get("sdpMLineIndex")
                    await pc.addIceCandidate(candidate)
            elif kind == "bye":
                finish("bye")
                return

    reading = asyncio.ensure_future(read_signals())
    if args.run_for:
        async def stop_later():
            await asyncio.sleep(args.run_for)
            emit({"type": "bye"})
            finish("bye")
        asyncio.ensure_future(stop_later())
    if args.receive_dir:
        # Whichever comes first: the file, or the end of signaling (then nothing arrived).
        await asyncio.wait([received, finished], return_when=asyncio.FIRST_COMPLETED)
        if not received.done():
            log("done: signaling ended before a file arrived")
            await pc.close()
            return 1
        result = received.result()
        stats.update(result)
        stats["MBps"] = round(result["bytes"] / 1e6 / max(result["seconds"], 1e-9), 2)
        reason = await finished
    else:
        reason = await finished
    reading.cancel()
    stats["inbound"] = await inbound_packets(pc)
    for receiver in pc.getReceivers():
        if receiver.track is not None:
            receiver.track.stop()
    if recordings:
        await asyncio.wait(recordings, timeout=5)
    if webm_recorder and webm_started:
        await webm_recorder.stop()
    log("done:", reason, "inbound", stats["inbound"])
    if args.stats:
        with open(args.stats, "w") as handle:
            json.dump(stats, handle)
    await pc.close()
    return 0 if reason in ("bye", "file sent", "signaling closed") else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
