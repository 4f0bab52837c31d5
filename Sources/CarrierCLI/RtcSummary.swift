import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMedia
import RtcPeer

/// What one `carrier rtc` run did: its summary line (or JSON) on stderr.
struct RtcSummary {
    var role: String
    var connected = false
    var setupMs: Double?
    /// Of setupMs, the part until ICE connected (the rest is the DTLS handshake).
    var iceMs: Double?
    var transfer: FileTransferEndpoint.Outcome?
    var selectedPair: (local: String, remote: String)?
    /// The pair as types and protocols, when connected and again at the end
    /// (a relayed call moves to a direct pair that works later).
    var path: IcePath?
    /// The setup's steps (`CallSteps`), taken when the connection came up.
    var steps: [String: any Sendable] = [:]
    /// SCTP's packet size when a path probe raised it (PathMtuProbe; absent: the default).
    var sctpPacketSize: Int?
    var error: String?
    var wantedTransfer = false
    /// The one-file recording, when there is one.
    var webm: String?
    /// Times the connection was lost and came back (ICE restarts), and the longest outage (s).
    var outages = 0
    var longestOutage = 0.0
    var sent: [MediaSender.Stats] = []
    var received: [MediaReceiver.Stats] = []
    /// Packets on the RTX streams (RFC 4588), ours sent and the peer's received.
    var rtx: (sent: UInt64, received: UInt64) = (0, 0)

    var succeeded: Bool { connected && error == nil && (!wantedTransfer || transfer?.ok == true) }

    var json: [String: any Sendable] {
        var object: [String: any Sendable] = ["role": role, "connected": connected, "ok": succeeded]
        if let setupMs { object["setupMs"] = setupMs }
        if let iceMs { object["iceMs"] = iceMs }
        if let transfer {
            object["bytes"] = Int(transfer.bytes)
            object["sha256"] = transfer.sha256
            object["MBps"] = rounded(Double(transfer.bytes) / 1e6 / max(transfer.seconds, 1e-9))
            object["transferOk"] = transfer.ok
            if let announced = transfer.announcedBytes { object["announcedBytes"] = Int(announced) }
            if transfer.isIncomplete { object["incomplete"] = true }
            if let path = transfer.path { object["path"] = path }
            if let sctpPacketSize { object["sctpPacketSize"] = sctpPacketSize }
        }
        if let selectedPair {
            object["selectedPair"] = ["local": selectedPair.local, "remote": selectedPair.remote]
        }
        if let path { object["icePath"] = path.json }
        if !steps.isEmpty { object["steps"] = steps }
        if !sent.isEmpty || !received.isEmpty {
            object["media"] =
                [
                    "sent": sent.map(\.json), "received": received.map(\.json),
                ] as [String: any Sendable]
            object["recordings"] = received.flatMap(\.recordings) + (webm.map { [$0] } ?? [])
            object["rtx"] = ["sent": Int(rtx.sent), "received": Int(rtx.received)]
        }
        if outages > 0 {
            object["outages"] = outages
            object["longestOutage"] = rounded(longestOutage)
        }
        if let error { object["error"] = error }
        return object
    }

    var text: String {
        var lines = [
            "\(role): \(connected ? "connected" : "not connected")" + (setupMs.map { " in \($0) ms" } ?? "")
        ]
        if let path { lines.append("path: \(path)") }
        if connected, !steps.isEmpty { lines.append(CallSteps.text(steps)) }
        if let transfer {
            let rate = rounded(Double(transfer.bytes) / 1e6 / max(transfer.seconds, 1e-9))
            lines.append(
                "\(transfer.name): \(transfer.bytes) bytes, \(rate) MB/s, "
                    + (transfer.ok || !transfer.isIncomplete
                        ? "sha256 \(transfer.sha256) \(transfer.ok ? "ok" : "MISMATCH")" : transfer.verdict)
            )
        }
        lines += mediaLines(sent: sent, received: received)
        if outages > 0 {
            lines.append("connection lost \(outages) time(s), back after at most \(rounded(longestOutage)) s")
        }
        if let webm { lines.append("recorded into \(webm)") }
        if let error { lines.append("error: \(error)") }
        return lines.joined(separator: "\n")
    }
}

extension MediaSender.Stats {
    var json: [String: any Sendable] {
        [
            "kind": kind, "mid": mid, "packets": packetsSent, "bytes": bytesSent, "frames": framesSent,
            "framesEncoded": framesEncoded, "keyframes": keyframesSent, "keyframeRequests": keyframeRequests,
            "seconds": rounded(seconds), "lostByPeer": Int(packetsLostByPeer),
        ].merging(roundTripTime.map { ["rttMs": rounded($0 * 1000)] } ?? [:]) { $1 }
            .merging(targetBitrate.map { ["targetKbps": $0 / 1000, "followsTarget": followsTarget ?? false] } ?? [:]) {
                $1
            }
            .merging(encodedWidth.map { ["encodedWidth": $0, "encodedHeight": encodedHeight ?? 0] } ?? [:]) { $1 }
            .merging(
                packetsSent > 0
                    ? [
                        "packetSendDelayMs": rounded(totalPacketSendDelay / Double(packetsSent) * 1000),
                        "pacerQueueMs": rounded(lastPacketSendDelay * 1000),
                    ] : [:]
            ) { $1 }
    }
}

extension MediaReceiver.Stats {
    var json: [String: any Sendable] {
        var object: [String: any Sendable] = [
            "kind": kind, "mid": mid, "packets": packetsReceived, "bytes": bytesReceived, "lost": packetsLost,
            "frames": framesReceived, "framesDecoded": framesDecoded, "framesDropped": framesDropped,
            "nacks": nacksSent, "plis": plisSent, "seconds": rounded(seconds), "recordings": recordings,
        ]
        object["jitterMs"] = rounded(jitter * 1000)
        if let roundTripTime { object["rttMs"] = rounded(roundTripTime * 1000) }
        if let latency { object["latencyMs"] = rounded(latency * 1000) }
        if let latencyP95 { object["latencyP95Ms"] = rounded(latencyP95 * 1000) }
        if kind == "audio" { object["concealedFrames"] = concealedFrames }
        if kind == "video" {
            object["freezes"] = freezes
            if let longestFrameGap { object["longestGapMs"] = rounded(longestFrameGap * 1000) }
            object["keyframes"] = keyframesReceived
            object["width"] = width
            object["height"] = height
        }
        return object
    }
}

/// The line `call` and `rtc` print each second while media flows (nil before any):
/// per track sent, frames, bytes and congestion control's share; per track
/// received, frames, bytes, loss, and for video the NACKs, PLIs and freezes;
/// then the estimate (target, what the peer acknowledged, loss) and the round trip.
func liveStatsLine(_ stats: CallMediaStats, peer: PeerStats?) -> String? {
    let sending = stats.sent.filter { $0.packetsSent > 0 }
    let receiving = stats.received.filter { $0.packetsReceived > 0 }
    guard !sending.isEmpty || !receiving.isEmpty else { return nil }
    var parts: [String] = []
    for sent in sending {
        var part = "↑\(sent.kind) \(sent.framesSent) fr \(sent.bytesSent / 1000) kB"
        if let target = sent.targetBitrate {
            part += sent.followsTarget == false ? " (passed through)" : " at \(target / 1000) kbit/s"
        }
        if let width = sent.encodedWidth, let height = sent.encodedHeight { part += " \(width)x\(height)" }
        // What the pacer held back when the last frame went (a frame spread over the link, or late behind one).
        if sent.lastPacketSendDelay >= 0.001 { part += " queue \(Int(sent.lastPacketSendDelay * 1000)) ms" }
        parts.append(part)
    }
    for received in receiving {
        parts.append(
            "↓\(received.kind) \(received.framesDecoded) fr \(received.bytesReceived / 1000) kB lost \(received.packetsLost)"
                + (received.kind == "video"
                    ? " nack \(received.nacksSent) pli \(received.plisSent) freezes \(received.freezes)"
                        + (received.longestFrameGap.map { " gap \(Int($0 * 1000)) ms" } ?? "") : ""))
    }
    if let congestion = peer?.congestion, !sending.isEmpty {
        var part = "target \(Int(congestion.targetBitrate / 1000)) kbit/s"
        if let sent = congestion.sentBitrate { part += " sent \(Int(sent / 1000))" }
        if let acknowledged = congestion.acknowledgedBitrate { part += " acked \(Int(acknowledged / 1000))" }
        part += " loss \(rounded(congestion.loss * 100))%"
        // The delay detector's verdict when it is not "normal": why the target moves.
        if congestion.usage != "normal" { part += " \(congestion.usage)" }
        if congestion.applicationLimited { part += " app-limited" }
        parts.append(part)
    }
    if let rtt = peer?.roundTripTime ?? peer?.congestion?.roundTripTime {
        parts.append("rtt \(rounded(rtt * 1000)) ms")
    }
    return "stats: " + parts.joined(separator: " | ")
}

/// One line per track sent and received, for the summaries of `call` and `rtc`.
func mediaLines(sent: [MediaSender.Stats], received: [MediaReceiver.Stats]) -> [String] {
    let sentLines = sent.filter { $0.packetsSent > 0 }.map {
        "sent \($0.kind): \($0.framesSent) frames, \($0.packetsSent) packets, \($0.bytesSent) bytes, \(rounded($0.seconds)) s"
    }
    let receivedLines = received.filter { $0.packetsReceived > 0 }.map {
        "received \($0.kind): \($0.framesDecoded) frames decoded, \($0.packetsReceived) packets, \($0.packetsLost) lost, \(rounded($0.seconds)) s"
            + ($0.latency.map { ", \(rounded($0 * 1000)) ms after capture" } ?? "")
            + ($0.recordings.isEmpty ? "" : " → \($0.recordings.joined(separator: ", "))")
    }
    return sentLines + receivedLines
}
