#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus, Fuzz/corpus/<target>/, from the golden
captures and small hand-made packets in each format (run from the repository
root; the output is committed). `make fuzz` grows the corpus in a copy."""
import json, os, shutil, struct

root = "Fuzz/corpus"
shutil.rmtree(root, ignore_errors=True)

def put(target, name, data):
    os.makedirs(os.path.join(root, target), exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data)

# SDP: the golden captures of aiortc, Chromium, Firefox and GStreamer.
golden = "Tests/RtcSDPTests/Golden"
for name in sorted(os.listdir(golden)):
    with open(os.path.join(golden, name), "rb") as f:
        put("sdp", name, f.read())

# Signals: our form and the reference peers' variants.
with open(os.path.join(golden, "aiortc-offer.sdp")) as f:
    offer = f.read()
for index, signal in enumerate([
    {"type": "offer", "sdp": offer, "callId": "c1", "options": ["audio", "video", "data"]},
    {"type": "answer", "sdp": offer.replace("actpass", "active")},
    {"type": "candidate", "candidates": [{"sdp": "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host", "sdpMLineIndex": 0, "sdpMid": "0"}]},
    {"type": "bye", "reason": "hangup", "callId": "c1"},
    {"type": "remove-candidates", "candidates": []},
    {"action": "call", "callId": "b2", "event": "ring"},
]):
    put("signal", "signal-%d.json" % index, json.dumps(signal))

def rtp(pt=111, seq=1, ts=960, ssrc=0x11223344, payload=b"\x78\x01\x02", marker=False, ext=None, csrcs=(), pad=0):
    first = 0x80 | (0x10 if ext else 0) | (0x20 if pad else 0) | len(csrcs)
    data = struct.pack("!BBHII", first, pt | (0x80 if marker else 0), seq, ts, ssrc)
    data += b"".join(struct.pack("!I", c) for c in csrcs)
    if ext:
        profile, body = ext
        data += struct.pack("!HH", profile, len(body) // 4) + body
    data += payload
    if pad:
        data += b"\x00" * (pad - 1) + bytes([pad])
    return data

put("rtp", "opus.bin", rtp())
put("rtp", "vp8-keyframe.bin", rtp(pt=96, marker=True, payload=b"\x90\x80\x00\x10\x02\x00\x9d\x01\x2a\x40\x01\xf0\x00"))
put("rtp", "one-byte-extension.bin", rtp(ext=(0xBEDE, b"\x10\x30\x00\x00")))
put("rtp", "two-byte-extension.bin", rtp(ext=(0x1000, b"\x01\x01\x30\x00")))
put("rtp", "csrcs-padding.bin", rtp(csrcs=(1, 2), pad=4))

ssrc = 0x11223344
sr = struct.pack("!BBHIIIIII", 0x81, 200, 12, ssrc, 0xE000_0000, 0, 960, 10, 1000) + struct.pack("!IIIIII", 0x55667788, 0x01000002, 100, 30, 0, 0)
cname = b"carrier"
sdes_body = struct.pack("!I", ssrc) + bytes([1, len(cname)]) + cname + b"\x00"
sdes_body += b"\x00" * ((4 - len(sdes_body) % 4) % 4)
sdes = struct.pack("!BBH", 0x81, 202, len(sdes_body) // 4) + sdes_body
put("rtcp", "sr-sdes.bin", sr + sdes)
put("rtcp", "rr.bin", struct.pack("!BBHI", 0x81, 201, 7, ssrc) + struct.pack("!IIIIII", 0x55667788, 0x02000005, 200, 12, 0, 0))
put("rtcp", "nack.bin", struct.pack("!BBHIIHH", 0x81, 205, 3, ssrc, 0x55667788, 100, 0x0005))
put("rtcp", "pli.bin", struct.pack("!BBHII", 0x81, 206, 2, ssrc, 0x55667788))
put("rtcp", "fir.bin", struct.pack("!BBHIIIBBH", 0x84, 206, 4, ssrc, 0, 0x55667788, 1, 0, 0))
put("rtcp", "bye.bin", struct.pack("!BBHI", 0x81, 203, 1, ssrc))

label, proto = b"data", b"carrier-file"
put("dcep", "open.bin", struct.pack("!BBHIHH", 3, 0, 256, 0, len(label), len(proto)) + label + proto)
put("dcep", "open-unordered.bin", struct.pack("!BBHIHH", 3, 0x81, 256, 3, 4, 0) + b"lossy")
put("dcep", "ack.bin", b"\x02")

put("file-message", "header.json", json.dumps({"type": "file", "name": "photo.jpg", "size": 1000, "sha256": "ab" * 32}))
put("file-message", "ack.json", json.dumps({"type": "file-ack", "name": "photo.jpg", "size": 1000, "sha256": "ab" * 32, "ok": True}))
put("file-message", "chunk.json", json.dumps({"fileId": "f1", "index": 0, "mime": "image/png", "end": True, "data": "aGVsbG8=", "name": "../x.png", "size": 5}))

def field(tag, value):
    return struct.pack("!BH", tag, len(value)) + value

def packet(kind, *fields):
    return bytes([kind]) + b"".join(fields)

put("node-packet", "message.bin", packet(33, field(1, b"carrier"), field(8, struct.pack("!I", 7)), field(2, b"hello")))
put("node-packet", "receipt.bin", packet(37, field(8, struct.pack("!I", 7)), field(6, struct.pack("!i", 1)), field(7, b"no extension")))
put("node-packet", "bulk.bin", packet(36, field(3, struct.pack("!Q", 9)), field(4, struct.pack("!I", 0)), field(5, struct.pack("!I", 4)), field(8, struct.pack("!I", 1)), field(2, b"ab")))
put("node-packet", "invite.bin", packet(34, field(1, b"carrier"), field(3, struct.pack("!Q", 5)), field(4, struct.pack("!I", 0)), field(5, struct.pack("!I", 3)), field(2, b"{}x")))
put("node-packet", "user-info.bin", packet(3, field(10, b"Bob"), field(11, b"a bot"), field(20, struct.pack("!I", 1))))
put("node-packet", "friend-request.bin", packet(6, field(10, b"Alice"), field(40, b"hi")))
put("node-packet", "file-result.bin", packet(38, field(9, b"\x01" * 32), field(6, struct.pack("!i", 2)), field(7, b"sha256 mismatch")))

def bulk(transfer, offset, total, data):
    body = packet(36, field(3, struct.pack("!Q", transfer)), field(4, struct.pack("!I", offset)), field(5, struct.pack("!I", total)), field(2, data))
    return struct.pack("!H", len(body)) + body

put("node-reassembly", "two-pieces.bin", bulk(1, 0, 6, b"abc") + bulk(1, 3, 6, b"def"))
put("node-reassembly", "gap-and-lie.bin", bulk(2, 0, 6, b"abc") + bulk(2, 4, 6, b"ef") + bulk(3, 0, 2, b"abcdef"))

record = struct.pack("!Q", 1) + b"\x02" * 32 + struct.pack("!QI", 1700000000000, 40) + b"\x01" + b"\x00" * 39
put("express-records", "one.bin", record)
put("express-records", "two.bin", record + record)

# Media files: small ones made here, and the start of the test media.
samples = struct.pack("<" + "h" * 64, *[(i * 997) % 20000 - 10000 for i in range(64)])
wav = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 2, 48000, 192000, 4, 16) + b"data" + struct.pack("<I", len(samples)) + samples
put("wav", "stereo.wav", wav)
y4m = b"YUV4MPEG2 W16 H16 F30:1 Ip A1:1 C420jpeg\n" + (b"FRAME\n" + bytes(range(256)) + b"\x80" * 128) * 2
put("y4m", "two-frames.y4m", y4m)
with open("media/tone.opus", "rb") as f:
    put("ogg-opus", "tone-start.opus", f.read(4096))
with open("media/testsrc.ivf", "rb") as f:
    put("ivf", "testsrc-start.ivf", f.read(8192))
print("corpus written to", root)
