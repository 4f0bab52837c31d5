import Foundation
import RtcPeer

/// Signals as JSON lines: one `RtcSignal` object per line read from standard
/// input and written to standard output (`carrier rtc`, and anything wired to
/// it). There is one peer, named `peer`. Lines are read on a thread of their
/// own (`BoundedLineReader`: at most `maxLine` bytes of a line are held); a
/// line that is not a signal, or is too long, is reported as `.undecodable`,
/// and the stream ends when standard input does.
public final class StandardIOSignaling: SignalingProvider, Sendable {
    /// The one peer's id.
    public static let peer = "peer"
    private let lock = NSLock()
    private let stream: AsyncStream<SignalingInput>
    /// Longest line read (bounds what the other side can make us hold).
    public static let maxLine = 1 << 20

    /// Starts reading standard input, one signal per line.
    public init() {
        let (stream, continuation) = AsyncStream<SignalingInput>.makeStream()
        self.stream = stream
        let thread = Thread {
            RtcSignal.prepareCoding()  // while the first line is on its way
            var reader = BoundedLineReader(fd: STDIN_FILENO, maxLine: Self.maxLine)
            while let line = reader.next() {
                guard case .text(let bytes) = line else {
                    if case .tooLong(let count) = line {
                        continuation.yield(
                            .undecodable(
                                .undecodable("a line of more than \(count) bytes (at most \(Self.maxLine)), dropped"),
                                from: Self.peer))
                    }
                    continue
                }
                guard !bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) else { continue }
                do throws(SignalError) {
                    continuation.yield(.signal(try RtcSignal.decode(bytes), from: Self.peer))
                } catch {
                    continuation.yield(.undecodable(error, from: Self.peer))
                }
            }
            continuation.finish()
        }
        thread.name = "carrier-stdin"
        thread.start()
    }

    /// Writes the signal as one JSON line on standard output.
    public func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) { write(signal) }

    /// Writes one signal line now; lines from several tasks never interleave.
    public func write(_ signal: RtcSignal) {
        let line = signal.encoded() + [0x0A]
        lock.withLock { FileHandle.standardOutput.write(Data(line)) }
    }

    /// The lines read, as signals (or what did not decode).
    public func inputs() async -> AsyncStream<SignalingInput> { stream }

    /// None: `carrier rtc` passes its own.
    public func iceServers() async -> [PeerConfiguration.IceServer] { [] }
}
