import Foundation
import Testing

/// Runs the built `carrier` executable, collecting its output lines so a
/// test can wait for one (bounded) rather than sleep.
final class CarrierProcess: @unchecked Sendable {
    // Guarded by `lock`: pipe handlers append from Foundation's threads.
    private let lock = NSLock()
    private var stdoutLines: [String] = []
    private var stderrText = ""
    private var partial = ""
    let process = Process()

    static var executable: URL {
        // The test bundle sits beside the products in the build directory.
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0])
        var directory = bundle.deletingLastPathComponent()
        if bundle.pathExtension != "xctest" { directory = Bundle.main.bundleURL }
        for candidate in [directory, directory.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("carrier")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/debug/carrier")
    }

    init(_ arguments: [String]) throws {
        process.executableURL = Self.executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        out.fileHandleForReading.readabilityHandler = { [weak self] handle in
            self?.appendStdout(handle.availableData)
        }
        err.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.withLock { self.stderrText += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
    }

    private func appendStdout(_ data: Data) {
        lock.withLock {
            partial += String(decoding: data, as: UTF8.self)
            while let newline = partial.firstIndex(of: "\n") {
                stdoutLines.append(String(partial[..<newline]))
                partial = String(partial[partial.index(after: newline)...])
            }
        }
    }

    var lines: [String] { lock.withLock { stdoutLines } }
    var stderr: String { lock.withLock { stderrText } }

    /// The first stdout line containing `text`, waiting up to `timeout`.
    func waitForLine(containing text: String, timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = lines.first(where: { $0.contains(text) }) { return line }
            if !process.isRunning, lines.first(where: { $0.contains(text) }) == nil { return nil }
            try? await Task.sleep(for: .milliseconds(50))  // polling the collected output, not synchronising
        }
        return nil
    }

    /// Waits for the process to exit, killing it after `timeout`; returns its status.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
            return nil
        }
        return process.terminationStatus
    }

    func interrupt() { process.interrupt() }

    /// Runs to completion and returns (status, stdout lines, stderr).
    static func run(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> (Int32?, [String], String)
    {
        let carrier = try CarrierProcess(arguments)
        let status = await carrier.waitForExit(timeout: timeout)
        // Let the pipe handlers drain what was written before exit.
        try? await Task.sleep(for: .milliseconds(100))
        return (status, carrier.lines, carrier.stderr)
    }

    deinit {
        if process.isRunning {
            process.terminate()
        }
    }
}

func temporaryDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "carrier-cli-\(name)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

func json(_ line: String?) -> [String: Any]? {
    guard let line, let data = line.data(using: .utf8) else { return nil }
    return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
}
