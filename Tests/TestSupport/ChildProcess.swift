@_exported import AsyncExtras
import Foundation

/// A child process for tests: its stdout lines are collected so a test can
/// wait for one (bounded) rather than sleep; its stdin can be written.
public final class ChildProcess: @unchecked Sendable {
    // Guarded by `lock`: pipe handlers append from Foundation's threads.
    private let lock = NSLock()
    private var stdoutLines: [String] = []
    private var stderrText = ""
    private var partial = ""
    private var lineHandler: (@Sendable (String) -> Void)?
    public let process = Process()
    private let input = Pipe()

    /// The built `carrier` executable, beside the test bundle in the build directory.
    public static var carrierExecutable: URL {
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

    /// The repository's root directory (scripts/, media/).
    public static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// A script in Tests/Interop/.
    public static func interopScript(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Interop").appendingPathComponent(name).path
    }

    /// Tests/Interop/aiortc_peer.py.
    public static var aiortcPeer: String { interopScript("aiortc_peer.py") }

    /// Tests/Interop/wire.py.
    public static var wireScript: String { interopScript("wire.py") }

    /// Runs `carrier` with these arguments.
    public convenience init(_ arguments: [String]) throws {
        try self.init(executable: Self.carrierExecutable, arguments: arguments)
    }

    public init(executable: URL, arguments: [String], onLine: (@Sendable (String) -> Void)? = nil) throws {
        // A child that exits while a test still writes to its stdin must fail
        // that write, not kill the test process with SIGPIPE.
        signal(SIGPIPE, SIG_IGN)
        lineHandler = onLine
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
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
        var complete: [String] = []
        let handler: (@Sendable (String) -> Void)? = lock.withLock {
            partial += String(decoding: data, as: UTF8.self)
            while let newline = partial.firstIndex(of: "\n") {
                let line = String(partial[..<newline])
                stdoutLines.append(line)
                complete.append(line)
                partial = String(partial[partial.index(after: newline)...])
            }
            return lineHandler
        }
        if let handler { for line in complete { handler(line) } }
    }

    public var lines: [String] { lock.withLock { stdoutLines } }
    /// The child's process id.
    public var pid: Int32 { process.processIdentifier }
    public var stderr: String { lock.withLock { stderrText } }

    /// Writes one line to the child's stdin.
    public func writeLine(_ line: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data((line + "\n").utf8))
    }

    /// Writes text to the child's stdin as it is (no newline).
    public func write(_ text: String) {
        try? input.fileHandleForWriting.write(contentsOf: Data(text.utf8))
    }

    public func closeInput() { try? input.fileHandleForWriting.close() }

    /// The first stdout line containing `text`, waiting up to `timeout`.
    public func waitForLine(containing text: String, timeout: Duration) async -> String? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let line = lines.first(where: { $0.contains(text) }) { return line }
            if !process.isRunning { return lines.first { $0.contains(text) } }
            try? await Task.sleep(for: .milliseconds(50))  // polling the collected output, bounded
        }
        return nil
    }

    /// Waits for the process to exit, killing it after `timeout`; returns its status (nil if killed).
    public func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while process.isRunning, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if process.isRunning {
            // Not waitUntilExit: on Linux it spins a run loop at full CPU on this thread.
            process.terminate()
            for _ in 0..<100 where process.isRunning { try? await Task.sleep(for: .milliseconds(50)) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            return nil
        }
        return process.terminationStatus
    }

    public func interrupt() { process.interrupt() }

    /// Runs `carrier` to completion: (status, stdout lines, stderr).
    public static func run(_ arguments: [String], timeout: Duration = .seconds(60)) async throws -> (
        Int32?, [String], String
    ) {
        let child = try ChildProcess(arguments)
        child.closeInput()
        let status = await child.waitForExit(timeout: timeout)
        try? await Task.sleep(for: .milliseconds(100))  // let the pipe handlers drain what was written before exit
        return (status, child.lines, child.stderr)
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

public func temporaryDirectory(_ name: String) -> String {
    let path = NSTemporaryDirectory() + "carrier-test-\(name)-\(UUID().uuidString.prefix(8))"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

public func json(_ line: String?) -> [String: Any]? {
    guard let line, let data = line.data(using: .utf8) else { return nil }
    return (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
}

public typealias CarrierProcess = ChildProcess
