import AsyncExtras
import CarrierNode
import Foundation
import RtcFileTransfer
import RtcMedia
import RtcPeer

struct RtcCommand: Command {
    static let name = "rtc"
    static let summary = "connect to any WebRTC peer, signaling as JSON lines on stdin/stdout"
    static let help = """
        Usage: carrier rtc offer|answer [options]

        Connects to a WebRTC peer (a browser, aiortc, another carrier) with the
        signaling on stdin/stdout: one JSON object per line, {"type":"offer","sdp":…},
        {"type":"answer","sdp":…}, {"type":"candidate","candidates":[{"sdp":…,
        "sdpMLineIndex":…,"sdpMid":…}]} and {"type":"bye"}. Everything else goes to
        stderr. The offerer opens one data channel, labelled "data".

          --send-file PATH     send a file over the data channel (binary file protocol,
                               docs/file-protocol.md) with progress on stderr, then say bye
          --receive-dir DIR    save files the peer sends into DIR (checked by SHA-256)
          --echo               send every application message on the data channel back
                               (files still arrive as files)
          --media FILE         send the audio and video tracks of FILE: any file ffmpeg reads
                               (MP4, MKV, WebM, MOV, MP3, FLAC, WAV, Ogg, …); Opus and VP8
                               tracks go as they are, others are decoded and encoded
          --audio FILE         send the audio track of FILE (any of the above)
          --video FILE         send the video track of FILE (any of the above; .y4m is
                               encoded to VP8, .ivf sent as is)
          --start S            start S seconds into the media files
          --record FILE.webm   record what the peer sends into one WebM (Opus and VP8 as
                               received, aligned; plays while written, and after a kill)
          --record DIR         record what the peer sends, one file per track named by kind:
                               audio.wav + audio.opus, video.ivf + video.y4m
          --record-formats F   which of wav,opus,ivf,y4m to write (default all); with only
                               opus and ivf, nothing is decoded (the packets as received)
          --duration S         stop sending and hang up after S seconds of media
          --loop               play the media files again from the start at their end
        \(IceServerOptions.help)
          --relay-only         use relay candidates only (iceTransportPolicy "relay")
          --host-ip IP         gather host candidates on IP only (127.0.0.1 for tests)
          --no-trickle         send the description once gathering is complete, candidates included
          --timeout S          give up if nothing completes within S seconds (default 120)
          --recovery S         when the connection is lost (an outage, a NAT that rebinds),
                               restart ICE over the signaling for up to S seconds before
                               giving up (default 30); either side may restart, the
                               answering side yields when both do at once
          --stats FILE         write the final summary as JSON to FILE
          --json               print the final summary as one JSON line on stderr

        While media flows, a stats line goes to stderr every second. The offerer adds an
        audio and a video section when it sends or records them.

        Summary fields: role, connected, setupMs (createOffer, or the offer's arrival,
        to connected), iceMs (the same to ICE connected; the rest is DTLS), bytes, MBps, sha256, ok,
        sctpPacketSize (when both ends are carrier on one machine and a probe let SCTP use
        larger packets than its 1200-byte default),
        announcedBytes and incomplete (a received file cut short), outages and longestOutage
        (connection losses recovered by ICE restarts), selectedPair {local, remote}, icePath
        (the pair as {local, remote: {type, transport, address, port}, direct, turnTransport},
        when connected and at the end), steps (ms after the start), and with
        media: media {sent: [...], received: [...]} (per track: kind, mid, packets,
        bytes, frames, lost, nacks, plis, seconds, …) and recordings (file paths).
        Exit 0 if the connection came up and every requested transfer completed.
        """
    static let valued: Set<String> = Set([
        "--send-file", "--receive-dir", "--host-ip", "--stats", "--timeout",
        "--audio", "--video", "--media", "--start", "--record", "--record-formats", "--duration",
        "--recovery",
    ]).union(IceServerOptions.valued)
    static let flags: Set<String> = ["--echo", "--relay-only", "--no-trickle", "--loop"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let role = try arguments.positionals(1...1, usage: "carrier rtc offer|answer [options]")[0]
        guard role == "offer" || role == "answer" else {
            throw UsageError("carrier rtc takes offer or answer, not \(role)")
        }
        var configuration = PeerConfiguration(relayOnly: arguments.flag("--relay-only"))
        if let ip = arguments.value("--host-ip") { configuration.localAddresses = [ip] }
        configuration.iceServers = try IceServerOptions.servers(arguments, global)
        var media = try CallOptions.media(arguments)
        if arguments.value("--duration") != nil {
            media.duration = try arguments.seconds("--duration", default: 0).milliseconds / 1000
        }
        media.echo = arguments.flag("--echo")
        let sendFile = arguments.value("--send-file")
        if let sendFile, !FileManager.default.fileExists(atPath: sendFile) {
            throw UsageError("no such file: \(sendFile)")
        }
        let timeout = try arguments.seconds("--timeout", default: 120)
        let plan = RtcRun.Plan(
            role: role, peer: configuration, media: media, sendFile: sendFile, trickle: !arguments.flag("--no-trickle"),
            recoveryWindow: try arguments.seconds("--recovery", default: 30).milliseconds / 1000, timeout: timeout)
        Watchdog.arm(after: timeout, what: "carrier rtc")
        let summary = await RtcRun(plan: plan, output: global.output).run()
        let json = Output.encode(summary.json)
        if let path = arguments.value("--stats") {
            try? (json + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        if global.output.json { global.output.log(json) } else { global.output.log(summary.text) }
        return summary.succeeded ? 0 : 1
    }
}
