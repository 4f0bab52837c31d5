import Foundation

/// A command handed to the daemon on the same data directory: the command
/// line and working directory go over the control socket, the daemon runs
/// it on its node and sends back its stdout and stderr lines and exit code.
/// Ctrl-C here asks the daemon to stop the command, as Ctrl-C stops it when
/// it runs in this process.
enum DaemonClient {
    static func run(_ connection: ControlConnection, _ raw: [String]) async -> Int32 {
        defer { connection.close() }
        guard connection.send(["op": "run", "args": raw, "cwd": FileManager.default.currentDirectoryPath]) else {
            FileHandle.standardError.write(Data("error: the daemon closed its control socket\n".utf8))
            return 1
        }
        let stopper = Task {
            await Termination.wait()
            connection.send(["op": "stop"])
        }
        defer { stopper.cancel() }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            // Reads block: on a thread of their own, not the cooperative pool.
            Thread.detachNewThread {
                continuation.resume(returning: relay(connection))
            }
        }
    }

    /// Copies the daemon's lines to stdout and stderr until its exit code.
    private static func relay(_ connection: ControlConnection) -> Int32 {
        while let line = connection.readLine() {
            guard let data = line.data(using: .utf8),
                let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { continue }
            if let text = object["out"] as? String {
                FileHandle.standardOutput.write(Data((text + "\n").utf8))
            } else if let text = object["err"] as? String {
                FileHandle.standardError.write(Data((text + "\n").utf8))
            } else if let code = object["exit"] as? Int {
                return Int32(clamping: code)
            } else if let error = object["error"] as? String {
                FileHandle.standardError.write(Data("error: the daemon: \(error)\n".utf8))
                return 1
            }
        }
        FileHandle.standardError.write(Data("error: the daemon went away before the command ended\n".utf8))
        return 1
    }
}
