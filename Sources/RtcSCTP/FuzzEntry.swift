/// What the package's fuzzer (`Sources/FuzzTargets`) feeds to SCTP's own
/// parsers. `package`: not part of the public API.
package enum SctpFuzzEntry {
    /// A DCEP message (RFC 8832) as a peer sends it on a new stream.
    package static func dcep(_ bytes: [UInt8]) {
        if let message = DcepMessage(bytes), case .open = message { _ = message.encoded() }
    }
}
