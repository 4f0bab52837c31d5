import CarrierNode
import Foundation

struct SendFileCommand: Command {
    static let name = "send-file"
    static let daemonUse = DaemonUse.routed
    static let summary = "send a file to a friend over the node (resumable), with progress"
    static let help = """
        Usage: carrier send-file USERID PATH [--name NAME] [--timeout SECONDS]

        Goes online, offers PATH to the friend (its SHA-256 goes along), waits for
        the friend to accept it (`carrier listen --receive-dir DIR` accepts), sends
        it with a progress bar on stderr, and waits for the receiver's check of
        size and SHA-256. A transfer cut by a disconnect resumes from the bytes the
        receiver has when the friend is back; run the command again after a
        restart and it resumes too. Prints a final line (with --json: a JSON
        object with bytes, seconds, MBps, sha256, sha256Match). Exit 0 when the
        receiver confirmed the file, 1 when it refused, cancelled or failed.

          --name NAME        the name the friend sees (default: PATH's last component)
          --timeout SECONDS  give up after this long in all (default 600)
        """
    static let valued: Set<String> = ["--name", "--timeout"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = try arguments.positionals(2...2, usage: "carrier send-file USERID PATH")
        guard let friend = UserId(values[0]) else { throw CarrierError.invalidUserId(values[0]) }
        let path = arguments.resolve(values[1])
        let timeout = try arguments.seconds("--timeout", default: 600)
        let name = arguments.value("--name")
        return try await global.withOnlineNode { node in
            guard await node.isFriend(friend) else { throw CarrierError.notFriend(friend.description) }
            let events = await node.events()
            let key = try await node.sendFile(at: path, to: friend, name: name)
            let output = global.output
            output.log("offering \(path) (sha256 \(key.sha256Hex)) to \(friend)…")
            let outcome = await waitForEnd(of: key, events: events, timeout: timeout, output: output, node: node)
            return report(outcome, key: key, output: output)
        }
    }

    struct Outcome: Sendable {
        var result: FileTransferOutcome
        var bytes: UInt64 = 0
        var started: ContinuousClock.Instant?
        var ended = ContinuousClock.now
    }

    static func waitForEnd(
        of key: FileTransferKey, events: AsyncStream<CarrierEvent>, timeout: Duration, output: Output, node: Carrier
    ) async -> Outcome {
        let watcher = Task { () -> Outcome in
            var outcome = Outcome(result: .failed("the node stopped"))
            var bar = ProgressBar(output: output)
            for await event in events {
                guard case .file(let fileEvent) = event, fileEvent.key == key else { continue }
                switch fileEvent {
                case .accepted(_, let offset):
                    outcome.started = outcome.started ?? .now
                    outcome.bytes = offset
                    output.log("accepted\(offset > 0 ? "" : ""); sending")
                case .progress(_, let bytes, let total):
                    bar.show(bytes: bytes, total: total)
                case .interrupted(_, let reason):
                    bar.finish()
                    output.log("interrupted: \(reason); waiting for the friend to come back")
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
            try? await node.cancelFile(key)
            output.log("error: no end within \(timeout); cancelled")
        }
        let cancel = Task {
            await Termination.wait()
            try? await node.cancelFile(key)
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
                "sent \(bytes) bytes in \(String(format: "%.2f", seconds)) s (\(String(format: "%.2f", rate)) MB/s); the receiver's SHA-256 matches",
                [
                    "bytes": bytes, "seconds": (seconds * 1000).rounded() / 1000, "MBps": (rate * 100).rounded() / 100,
                    "sha256": key.sha256Hex, "sha256Match": true, "resumedAt": outcome.bytes,
                ])
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
            FileHandle.standardError.write(Data("\r[\(bar)] \(text)".utf8))
            drawn = true
        } else if percent / 10 != lastTenth {
            lastTenth = percent / 10
            output.log(text)
        }
    }

    mutating func finish() {
        if drawn { FileHandle.standardError.write(Data("\n".utf8)) }
        drawn = false
    }
}
