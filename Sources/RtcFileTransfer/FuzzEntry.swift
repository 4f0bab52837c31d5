/// What the package's fuzzer (`Sources/FuzzTargets`) feeds to the file
/// protocols' parsers. `package`: not part of the public API.
package enum FileTransferFuzzEntry {
    /// A text message on a file channel: the binary protocol's header/ack, or a JSON chunk.
    package static func message(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        _ = FileMessage(json: text)
        _ = ChunkMessage(json: text)
        _ = FileMessage.safeName(text)
    }
}
