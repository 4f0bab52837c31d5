import Foundation

/// `python3 -m http.server` on a free port of 127.0.0.1, serving a directory
/// (the service behind port-forwarding tests).
public final class HttpFileServer: Sendable {
    public let process: ChildProcess
    public let port: UInt16

    public init(directory: String) async throws {
        process = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["python3", "-u", "-m", "http.server", "--bind", "127.0.0.1", "0", "--directory", directory]
        )
        let line = try Self.need(
            await process.waitForLine(containing: "Serving HTTP", timeout: .seconds(20)), "the HTTP server")
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let words = line.split(separator: " ")
        let index = try Self.need(words.firstIndex(of: "port"), "the port in \(line)")
        port = try Self.need(UInt16(words[index + 1]), "the port in \(line)")
    }

    public func stop() async {
        // A fixture with nothing to save: killed outright (it outlived SIGTERM and SIGINT here).
        kill(process.process.processIdentifier, SIGKILL)
        _ = await process.waitForExit(timeout: .seconds(5))
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private static func need<T>(_ value: T?, _ what: String) throws -> T {
        guard let value else { throw Failure(description: "missing: \(what)") }
        return value
    }
}
