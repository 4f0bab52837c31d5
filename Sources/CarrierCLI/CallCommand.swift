import AsyncExtras
import CarrierNode
import CarrierSignaling
import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMedia
import RtcPeer

struct CallCommand: Command {
    static let name = "call"
    static let daemonUse = DaemonUse.routed
    static let summary = "call a friend: stream media files, send a file, record what arrives"
    static let help = """
        Usage: carrier call USERID [options]

        Goes online, calls the friend (signals as invites to USERID:carrier), streams
        the media files, sends a file over the data channel with progress, records
        what the friend sends, prints a stats line every second, and hangs up after
        --duration or on Ctrl-C (without --duration: once the file is sent, or when
        the friend hangs up). Ends with a summary.

          --media FILE           send the audio and video tracks of FILE: any file ffmpeg
                                 reads (MP4, MKV, WebM, MOV, MP3, FLAC, WAV, Ogg, …);
                                 Opus and VP8 go as they are, others are encoded
          --audio FILE           send the audio track of FILE (any of the above)
          --video FILE           send the video track of FILE (any of the above, .y4m, .ivf)
          --start S              start S seconds into the media files
          --loop                 play the media files again at their end
          --send-file PATH       send a file over the call's data channel
          --say TEXT             send TEXT as a message on the call's data channel once
                                 connected (messages from the friend print as they come)
          --record DIR           record the friend's audio and video into DIR, one file
                                 per track; or --record FILE.webm: one WebM with both
                                 tracks as received, playable while written
          --record-formats F     which of wav,opus,ivf,y4m to write (default all)
          --duration S           hang up S seconds after connecting (a file still being
                                 sent is finished first)
          --ring-timeout S       give up if nobody answers within S seconds (default 45)
          --recovery S           when the connection is lost mid-call, restart ICE for up
                                 to S seconds before ending the call as failed (default 30)
          --wait S               wait this long for the friend to come online (default 60)
          --host-ip IP           gather ICE candidates on IP only (127.0.0.1 for local tests)
        \(IceServerOptions.help)

        With --json the last line is a JSON summary: callId, setupMs, steps (the setup
        step by step: offer and answer, ICE, DTLS, first packet and first decoded frame
        of each kind, in ms after the dial), icePath (the ICE pair in use at the end:
        each end's type, transport and address), connected, media {sent, received} per
        track, bytes, MBps, sha256Match, recordings, endReason.
        Exit 0 only if the call connected and every requested transfer completed.
        """
    static let valued: Set<String> = Set([
        "--audio", "--video", "--media", "--start", "--send-file", "--say", "--record", "--record-formats",
        "--duration",
        "--ring-timeout",
        "--recovery", "--wait", "--host-ip",
    ]).union(IceServerOptions.valued)
    static let flags: Set<String> = ["--loop"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let peerText = try arguments.positionals(1...1, usage: "carrier call USERID [options]")[0]
        guard let friend = UserId(peerText) else { throw CarrierError.invalidUserId(peerText) }
        let media = try CallOptions.media(arguments)
        let sendFile = arguments.value("--send-file")
        if let sendFile, !FileManager.default.fileExists(atPath: sendFile) {
            throw UsageError("no such file: \(sendFile)")
        }
        let duration: Double? =
            arguments.value("--duration") != nil
            ? try arguments.seconds("--duration", default: 0).milliseconds / 1000 : nil
        let wait = try arguments.seconds("--wait", default: 60)
        let configuration = try CallOptions.client(arguments, global)
        return try await global.withOnlineNode { node in
            guard try await global.waitForFriend(friend, on: node, timeout: wait) else { return 1 }
            let provider = try await global.callSignaling(on: node)
            var clientConfiguration = configuration
            clientConfiguration.mayCall = GlobalOptions.friendsOnly(node)
            let client = CallClient(provider: provider, configuration: clientConfiguration)
            await client.start()
            let run = CallRun(client: client, output: global.output)
            let summary = await run.place(
                to: friend.description, media: media, sendFile: sendFile, duration: duration,
                say: arguments.value("--say"))
            await client.stop()
            await (provider as? SignalingHub.Tap)?.close()
            global.output.result(summary.text, summary.json)
            return summary.succeeded ? 0 : 1
        }
    }
}

/// Options `call` and `listen --answer` share.
enum CallOptions {
    static func media(_ arguments: Arguments) throws -> CallMedia {
        var media = CallMedia(
            audio: arguments.value("--audio"), video: arguments.value("--video"), loop: arguments.flag("--loop"),
            recordDirectory: arguments.value("--record"), receiveDirectory: arguments.value("--receive-dir"))
        let both = arguments.value("--media")
        for path in [media.audio, media.video, both].compactMap({ $0 })
        where !FileManager.default.fileExists(atPath: path) {
            throw UsageError("no such media file: \(path)")
        }
        if let both {
            // Its audio and its video, whichever it has (--audio/--video given as well win).
            let kinds = try MediaSources.tracks(in: both)
            guard !kinds.isEmpty else { throw UsageError("\(both) has no audio or video track") }
            if kinds.contains(.audio), media.audio == nil { media.audio = both }
            if kinds.contains(.video), media.video == nil { media.video = both }
        }
        media.start = try arguments.seconds("--start", default: 0).milliseconds / 1000
        if let list = arguments.value("--record-formats") {
            let names = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            let formats = names.compactMap(MediaReceiver.RecordFormat.init(rawValue:))
            guard formats.count == names.count, !formats.isEmpty else {
                throw UsageError("--record-formats takes a list of wav, opus, ivf, y4m, not \(list)")
            }
            media.recordFormats = Set(formats)
        }
        return media
    }

    static func client(_ arguments: Arguments, _ global: GlobalOptions) throws -> CallClient.Configuration {
        var peer = PeerConfiguration()
        if let ip = arguments.value("--host-ip") {
            peer.localAddresses = [ip]
        } else if global.loopback {
            peer.localAddresses = ["127.0.0.1"]
        }
        peer.iceServers = try IceServerOptions.servers(arguments, global)
        var configuration = CallClient.Configuration(peer: peer)
        configuration.timeouts.ringing = try arguments.seconds("--ring-timeout", default: 45).milliseconds / 1000
        configuration.timeouts.recoveryWindow = try arguments.seconds("--recovery", default: 30).milliseconds / 1000
        return configuration
    }
}
