import CarrierFiles
import CarrierNode
import CarrierSessions
import Foundation
import RtcPeer

struct SendFileCommand: Command {
    static let name = "send-file"
    static let daemonUse = DaemonUse.routed
    static let summary = "send a file to a friend: directly when it can, over the node otherwise (resumable)"
    static let help = """
        Usage: carrier send-file USERID PATH [--name NAME] [--timeout SECONDS] [--toxcore]
                                 [--connect-timeout S] [--recovery S] [--host-ip IP] [ICE servers]

        Goes online, offers PATH to the friend (its SHA-256 goes along), waits for
        the friend to accept it (`carrier listen --receive-dir DIR` accepts), sends
        it with a progress bar on stderr, and waits for the receiver's check of
        size and SHA-256. The bytes go over a direct session with the friend
        (ICE, DTLS, SCTP: link speed) when one connects, and over toxcore's file
        transfer when none does within --connect-timeout, when the friend's node
        takes no files that way, or when the session breaks part-way. A transfer
        cut on either path resumes from the bytes the receiver has, on either
        path; run the command again after a restart and it resumes too. Prints a
        final line (with --json: a JSON object with bytes, seconds, MBps, sha256,
        sha256Match, path: direct or toxcore, and icePath for a direct one).
        Exit 0 when the receiver confirmed the file, 1 when it refused, cancelled
        or failed.

          --name NAME           the name the friend sees (default: PATH's last component)
          --timeout SECONDS     give up after this long in all (default 600)
          --toxcore             toxcore's file transfer only (no session)
          --connect-timeout S   how long a session may take before toxcore carries
                                the file (default 10)
          --recovery S          when the session's connection is lost, restart ICE for
                                up to S seconds before toxcore carries the rest (default 30)
          --host-ip IP          gather ICE candidates on IP only (127.0.0.1 for local tests)
        \(IceServerOptions.help)
        """
    static let flags: Set<String> = ["--toxcore"]
    static let valued: Set<String> = Set(["--name", "--timeout", "--connect-timeout", "--recovery", "--host-ip"])
        .union(IceServerOptions.valued)

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = try arguments.positionals(2...2, usage: "carrier send-file USERID PATH")
        guard let friend = UserId(values[0]) else { throw CarrierError.invalidUserId(values[0]) }
        let path = arguments.resolve(values[1])
        let timeout = try arguments.seconds("--timeout", default: 600)
        let name = arguments.value("--name")
        var filesConfiguration = FriendFiles.Configuration()
        filesConfiguration.direct = !arguments.flag("--toxcore")
        filesConfiguration.connectTimeout = try arguments.seconds("--connect-timeout", default: 10)
        var sessionConfiguration = try SessionOptions.configuration(arguments, global)
        sessionConfiguration.acceptsSessions = false
        return try await global.withOnlineNode { node in
            guard await node.isFriend(friend) else { throw CarrierError.notFriend(friend.description) }
            let sessions =
                filesConfiguration.direct
                ? try await global.sessionManager(on: node, configuration: sessionConfiguration) : nil
            let files = FriendFiles(node: node, sessions: sessions, configuration: filesConfiguration)
            await files.start()
            let events = await files.events()
            let output = global.output
            var outcome: Outcome
            do {
                let key = try await files.send(at: path, to: friend, name: name)
                output.log("offering \(path) (sha256 \(key.sha256Hex)) to \(friend)…")
                outcome = await waitForEnd(of: key, events: events, timeout: timeout, output: output, files: files)
                outcome.icePath = await files.icePath(of: key)
                await files.stop()
                await sessions?.stop()
                return report(outcome, key: key, output: output)
            } catch {
                await files.stop()
                await sessions?.stop()
                throw error
            }
        }
    }

    struct Outcome: Sendable {
        var result: FileTransferOutcome
        var bytes: UInt64 = 0
        var started: ContinuousClock.Instant?
        var ended = ContinuousClock.now
        /// The path of the last bytes (the one that finished).
        var path = FilePath.toxcore
        /// The ICE pair of a direct path.
        var icePath: IcePath?
    }

    static func waitForEnd(
        of key: FileTransferKey, events: AsyncStream<FriendFileEvent>, timeout: Duration, output: Output,
        files: FriendFiles
    ) async -> Outcome {
        let watcher = Task { () -> Outcome in
            var outcome = Outcome(result: .failed("the node stopped"))
            var bar = ProgressBar(output: output)
            for await event in events {
                let fileEvent = event.event
                guard fileEvent.key == key else { continue }
                outcome.path = event.path
                switch fileEvent {
                case .accepted(_, let offset):
                    if outcome.started == nil { outcome.bytes = offset }
                    outcome.started = outcome.started ?? .now
                    let via = Self.describe(event.path)
                    output.log("accepted\(offset > 0 ? " at byte \(offset)" : ""); sending over \(via)")
                case .progress(_, let bytes, let total):
                    bar.show(bytes: bytes, total: total)
                case .interrupted(_, let reason):
                    bar.finish()
                    output.log("interrupted: \(reason)")
                case .paused(_, let byPeer):
                    output.log("paused by \(byPeer ? "the friend" : "us")")
                case .resumed:
                    output.log("resumed")
                case .finished(_, let result):
                    bar.finish()
                    outcome.result = result
                    outcome.ended = .now
                    return outcome
                case .offered:
                    break
                }
            }
            return outcome
        }
        let timer = Task {
            try await Task.sleep(for: timeout)
            try? await files.cancel(key)
            output.log("error: no end within \(timeout); cancelled")
        }
        let cancel = Task {
            await Termination.wait()
            try? await files.cancel(key)
        }
        let outcome = await watcher.value
        timer.cancel()
        cancel.cancel()
        return outcome
    }

    static func report(_ outcome: Outcome, key: FileTransferKey, output: Output) -> Int32 {
        let seconds = outcome.started.map { (outcome.ended - $0).inSeconds } ?? 0
        switch outcome.result {
        case .completed(_, let bytes):
            let moved = Double(bytes - min(outcome.bytes, bytes))
            let rate = seconds > 0 ? moved / seconds / 1e6 : 0
            output.result(
                "sent \(bytes) bytes in \(String(format: "%.2f", seconds)) s (\(String(format: "%.2f", rate)) MB/s) over \(Self.describe(outcome.path))\(outcome.path == .message ? "" : "; the receiver's SHA-256 matches")",
                [
                    "bytes": bytes, "seconds": (seconds * 1000).rounded() / 1000, "MBps": (rate * 100).rounded() / 100,
                    "sha256": key.sha256Hex, "sha256Match": true, "resumedAt": outcome.bytes,
                    "path": outcome.path.rawValue,
                ].merging(outcome.icePath.map { ["icePath": $0.json] } ?? [:]) { a, _ in a })
            return 0
        case .cancelled(let byPeer, let reason):
            let why = "cancelled by \(byPeer ? "the friend" : "us")\(reason.map { ": \($0)" } ?? "")"
            output.log("error: \(why)")
            output.result(why, ["error": why, "sha256": key.sha256Hex, "sha256Match": false])
            return 1
        case .failed(let reason):
            output.log("error: \(reason)")
            output.result("failed: \(reason)", ["error": reason, "sha256": key.sha256Hex, "sha256Match": false])
            return 1
        }
    }

    /// A path in words.
    static func describe(_ path: FilePath) -> String {
        switch path {
        case .direct: "a direct session"
        case .toxcore: "toxcore"
        case .message: "a Carrier message (the friend is a Carrier peer)"
        }
    }
}

/// A one-line progress bar on stderr, redrawn in place when stderr is a terminal
/// and printed every 10% otherwise (logs stay readable).
struct ProgressBar {
    let output: Output
    private var lastTenth = -1
    private var drawn = false
    /// Redrawn in place only on this process's own terminal (not for a daemon's client).
    private let terminal: Bool

    init(output: Output) {
        self.output = output
        terminal = output.sink == nil && isatty(STDERR_FILENO) != 0
    }

    mutating func show(bytes: UInt64, total: UInt64) {
        let fraction = total == 0 ? 1 : Double(bytes) / Double(total)
        let percent = Int(fraction * 100)
        let text = "\(percent)% \(bytes)/\(total) bytes"
        if terminal {
            let width = 30
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
            ConsoleWriter.shared.write("\r[\(bar)] \(text)", to: .stderr, line: false)
            drawn = true
        } else if percent / 10 != lastTenth {
            lastTenth = percent / 10
            output.log(text)
        }
    }

    mutating func finish() {
        if drawn { ConsoleWriter.shared.write("", to: .stderr) }
        drawn = false
    }

}
