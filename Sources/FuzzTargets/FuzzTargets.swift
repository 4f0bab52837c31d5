import CarrierNode
import Foundation
import RtcCalls
import RtcFileTransfer
import RtcMediaFiles
import RtcRTP
import RtcSCTP
import RtcSDP

/// Every parser of bytes another party controls, as a fuzz target: the
/// libFuzzer executable (`Fuzz/CarrierFuzz`, `make fuzz`) runs one by name,
/// and `FuzzCorpusTests` runs the seed corpus (`Fuzz/corpus/NAME/`) through
/// each on every `make test`. A target must not crash, hang or grow without
/// bound on any input; what it returns does not matter.
public enum FuzzTargets {
    public static let all: [(name: String, run: @Sendable ([UInt8]) -> Void)] = [
        ("sdp", sdp), ("signal", signal), ("rtp", rtp), ("rtcp", rtcp), ("dcep", SctpFuzzEntry.dcep),
        ("file-message", FileTransferFuzzEntry.message), ("node-packet", NodeFuzzEntry.packet),
        ("node-reassembly", NodeFuzzEntry.reassembly), ("express-records", NodeFuzzEntry.express),
        ("wav", mediaFile { _ = try WavFile(path: $0).audio }),
        ("ogg-opus", mediaFile { _ = try OggOpusFile(path: $0).packets.count }),
        ("ivf", mediaFile { _ = try IvfFile(path: $0).frames.count }),
        (
            "y4m",
            mediaFile { path in
                let file = try Y4mFile(path: path)
                for index in 0..<min(file.frameCount, 4) { _ = file.frame(at: index) }
            }
        ),
    ]

    public static func named(_ name: String) -> (@Sendable ([UInt8]) -> Void)? {
        all.first { $0.name == name }?.run
    }

    /// A description, and again what it serialises to (the round trip must parse).
    static func sdp(_ bytes: [UInt8]) {
        guard let description = try? SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) else {
            return
        }
        _ = try? SessionDescription(parsing: description.description)
    }

    static func signal(_ bytes: [UInt8]) {
        guard let signal = try? RtcSignal.decode(bytes) else { return }
        _ = signal.encoded()
    }

    static func rtp(_ bytes: [UInt8]) {
        guard let packet = try? RtpPacket(parsing: bytes) else { return }
        _ = packet.serialized()
    }

    static func rtcp(_ bytes: [UInt8]) {
        guard let packets = try? RtcpPacket.parseCompound(bytes) else { return }
        for packet in packets { _ = packet.serialized() }
    }

    /// Media file readers take paths: the bytes go to a file in memory (/dev/shm) first.
    static func mediaFile(_ read: @escaping @Sendable (String) throws -> Void) -> @Sendable ([UInt8]) -> Void {
        { bytes in
            let directory = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
            let path = directory + "/carrier-fuzz-\(getpid())"
            guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { return }
            defer { unlink(path) }
            try? read(path)
        }
    }
}
