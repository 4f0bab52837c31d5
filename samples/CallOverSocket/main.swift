// A call between two call clients in one process whose signaling is your
// own: here, JSON lines over a Unix socket pair (any transport that carries
// bytes in order will do: a WebSocket, a message queue, a serial line). The
// caller plays media files, the callee records what arrives, and both print
// what they sent and received.
//
//   swift run call-over-socket [AUDIO_FILE] [VIDEO_FILE] [RECORD_DIR]
//
// Defaults: media/tone.opus, media/testsrc.ivf, a temporary directory.
// Any file FFmpeg reads will do (MP4, MKV, WebM, MP3, WAV, …).
import Foundation
import RtcCalls
import RtcMedia
import RtcPeer

/// A `SignalingProvider` over one end of a socket pair: every signal is one
/// JSON line (`RtcSignal.encoded()`); what arrives is decoded line by line.
final class SocketSignaling: SignalingProvider, @unchecked Sendable {
    let peerName: String
    private let descriptor: Int32
    private let lock = NSLock()
    private let stream: AsyncStream<SignalingInput>

    init(descriptor: Int32, peerName: String) {
        self.descriptor = descriptor
        self.peerName = peerName
        let (stream, continuation) = AsyncStream<SignalingInput>.makeStream()
        self.stream = stream
        // A reading thread: lines in, signals out (a line that is not a signal is reported, not fatal).
        Thread {
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                guard count > 0 else { break }
                pending += buffer[0..<count]
                while let newline = pending.firstIndex(of: 10) {
                    let line = Array(pending[..<newline])
                    pending.removeSubrange(...newline)
                    switch Result(catching: { () throws(SignalError) -> RtcSignal in try RtcSignal.decode(line) }) {
                    case .success(let signal): continuation.yield(.signal(signal, from: peerName))
                    case .failure(let error): continuation.yield(.undecodable(error, from: peerName))
                    }
                }
            }
            continuation.finish()
        }.start()
    }

    func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) {
        let line = signal.encoded() + [10]
        let written = lock.withLock { line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } }
        guard written == line.count else { throw .notDelivered("the socket to \(peer) is closed") }
    }

    func inputs() async -> AsyncStream<SignalingInput> { stream }

    func iceServers() async -> [PeerConfiguration.IceServer] { [] }
}

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

let arguments = CommandLine.arguments
let audio = arguments.count > 1 ? arguments[1] : "media/tone.opus"
let video = arguments.count > 2 ? arguments[2] : "media/testsrc.ivf"
let recordings =
    arguments.count > 3 ? arguments[3] : NSTemporaryDirectory() + "call-over-socket-\(UUID().uuidString.prefix(8))"

var ends: [Int32] = [0, 0]
guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else { fatalError("socketpair failed") }
let loopback = CallClient.Configuration(peer: PeerConfiguration(localAddresses: ["127.0.0.1"]))
let alice = CallClient(provider: SocketSignaling(descriptor: ends[0], peerName: "bob"), configuration: loopback)
let bob = CallClient(provider: SocketSignaling(descriptor: ends[1], peerName: "alice"), configuration: loopback)
await alice.start()
await bob.start()
let aliceEvents = await alice.events()
let bobEvents = await bob.events()

// Bob answers every call and records it; Alice calls and plays the files for 3 s.
let answering = Task {
    for await event in bobEvents {
        if case .incoming(let call) = event {
            say("bob: \(call.peer) calls (\(call.options.map(\.rawValue).joined(separator: ", "))), answering")
            try? await bob.accept(call.id, media: CallMedia(recordDirectory: recordings))
        }
        if case .ended(let call) = event {
            let stats = try? await bob.mediaStats(call.id)
            for track in stats?.received ?? [] {
                say(
                    "bob received \(track.kind): \(track.packetsReceived) packets, \(track.framesDecoded) frames decoded"
                )
            }
            say(
                "bob recorded into \(recordings): \((try? FileManager.default.contentsOfDirectory(atPath: recordings).sorted()) ?? [])"
            )
            return
        }
    }
}
let call = try await alice.makeCall(
    to: "bob", options: [.audio, .video], media: CallMedia(audio: audio, video: video, loop: true))
for await event in aliceEvents {
    if case .stateChanged(let current) = event, current.id == call.id {
        say("alice: call \(current.state.rawValue)")
        if current.state == .connected {
            try await Task.sleep(for: .seconds(3))  // the call's length
            let stats = try await alice.mediaStats(call.id)
            for track in stats.sent {
                say("alice sent \(track.kind): \(track.framesSent) frames, \(track.bytesSent) bytes")
            }
            try await alice.endCall(call.id)
        }
    }
    if case .ended(let ended) = event, ended.id == call.id {
        say("alice: call ended (\(ended.endReason?.rawValue ?? "?")) after \(String(format: "%.1f", ended.duration)) s")
        break
    }
}
await answering.value
await alice.stop()
await bob.stop()
