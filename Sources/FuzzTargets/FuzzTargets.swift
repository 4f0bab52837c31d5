import CarrierNode
import CarrierWire
import FileSafety
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
        ("names", names), ("carrier-packet", carrierPacket), ("carrier-express", carrierExpress),
        ("beagle-file", beagleFile),
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

    /// What turns a peer's string into a name or a path: a file name that
    /// arrived (`SafeFileName`) and a call id (`CallId`). Beyond not
    /// crashing, their promises hold for every input: a safe name is one
    /// path component, not hidden, without control characters, at most 200
    /// bytes; an accepted call id is 1-64 of [A-Za-z0-9-].
    static func names(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let name = SafeFileName.make(text)
        precondition(!name.isEmpty && !name.contains("/") && !name.contains("\\"), "a safe name with a separator")
        precondition(name != "." && name != ".." && !name.hasPrefix("."), "a hidden or relative safe name")
        precondition(name.utf8.count <= SafeFileName.maxBytes, "a safe name past its length")
        precondition(!name.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "a control character")
        if CallId.isAcceptable(text) {
            precondition((1...CallId.maxLength).contains(text.utf8.count), "a call id past its length")
            precondition(
                text.utf8.allSatisfy {
                    $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                },
                "a call id with a character that could reach a path")
        }
    }

    /// A Carrier control packet (FlatBuffers, verified), and again what it
    /// encodes to: that must decode to the same packet.
    static func carrierPacket(_ bytes: [UInt8]) {
        guard let packet = try? CarrierPacket.decode(bytes) else { return }
        precondition(
            (try? CarrierPacket.decode(packet.encode())) == packet, "a packet that does not survive its own encoding")
    }

    /// A pull answer of Carrier's Express API, a record's pullmsg, and an
    /// `until` parameter, as a node or a client reads them.
    static func carrierExpress(_ bytes: [UInt8]) {
        for box in CarrierExpress.records(bytes) ?? [] { _ = CarrierPullMessage.decode(box) }
        if let message = CarrierPullMessage.decode(bytes) {
            precondition(
                CarrierPullMessage.decode(message.encode()) == message, "a pullmsg that does not survive itself")
        }
        _ = CarrierExpress.timestamp(
            until: String(decoding: bytes.prefix(300), as: UTF8.self), nodeKey: [UInt8](repeating: 7, count: 32))
    }

    /// A message a Carrier app may send as a file.
    static func beagleFile(_ bytes: [UInt8]) {
        guard let file = BeagleFileMessage.decode(bytes), let packed = file.encode() else { return }
        precondition(BeagleFileMessage.decode(packed) == file, "a file message that does not survive its packing")
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
