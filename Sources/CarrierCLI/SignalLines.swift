import Foundation

/// The signaling of `carrier rtc`: one RtcSignal-shaped JSON object per line
/// (`{"type":"offer"|"answer","sdp":…}`, `{"type":"candidate","candidates":[{"sdp","sdpMLineIndex","sdpMid"}]}`,
/// `{"type":"bye"}`). An empty candidate `sdp` means end of candidates.
struct SignalLine: Codable, Sendable {
    struct CandidateItem: Codable, Sendable {
        var sdp: String
        var sdpMLineIndex: Int?
        var sdpMid: String?
    }
    var type: String
    var sdp: String?
    var candidates: [CandidateItem]?
}

/// Writes signals to stdout, one line each, never interleaved.
final class SignalWriter: @unchecked Sendable {
    // Guarded by `lock`.
    private let lock = NSLock()

    func write(_ signal: SignalLine) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        guard let data = try? encoder.encode(signal) else { return }
        lock.withLock { FileHandle.standardOutput.write(data + Data("\n".utf8)) }
    }
}

/// Lines from stdin as an async stream, read on a thread of their own.
enum StandardInputLines {
    static func stream() -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let thread = Thread {
            while let line = readLine(strippingNewline: true) { continuation.yield(line) }
            continuation.finish()
        }
        thread.name = "carrier-stdin"
        thread.start()
        return stream
    }

    /// Decodes a signal, tolerating trailing NUL bytes and surrounding space.
    static func decode(_ line: String) -> SignalLine? {
        let trimmed = line.trimmingCharacters(in: CharacterSet(charactersIn: "\0").union(.whitespacesAndNewlines))
        guard !trimmed.isEmpty, trimmed.utf8.count <= 1 << 20, let data = trimmed.data(using: .utf8) else { return nil }
        return try? JSONDecoder().decode(SignalLine.self, from: data)
    }
}
