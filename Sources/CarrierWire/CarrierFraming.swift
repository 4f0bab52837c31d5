/// The one change the Carrier network's toxcore makes to toxcore's wire
/// (wire notes §1.1): a magic in front of what toxcore sends.
///
/// - UDP: every datagram (DHT, onion, net_crypto, LAN discovery, bootstrap
///   info) is `69 76 65 67 | the datagram`; one without it is dropped.
/// - TCP relays: the handshakes are as they were (128 bytes from the
///   client, 96 back); after them every frame, `u16 BE length |
///   ciphertext`, goes as `magic | u16 BE length | ciphertext`.
///
/// Pure: bytes in, bytes out, a state per TCP direction. Whatever carries
/// toxcore's sockets applies it (`StreamFramer` on what toxcore sends,
/// `StreamDeframer` on what arrives for it).
public enum CarrierFraming {
    /// `iveg`, as the Carrier toxcore puts it in front (the source's comment says 'ELAC').
    public static let magic: [UInt8] = [0x69, 0x76, 0x65, 0x67]
    /// What a TCP relay client sends before its first frame, and what the relay answers.
    public static let clientHandshake = 128
    /// (See `clientHandshake`.)
    public static let serverHandshake = 96

    /// A datagram as the Carrier network sends it.
    public static func wrap(datagram: some Collection<UInt8>) -> [UInt8] { magic + datagram }

    /// A received datagram without its magic; nil if it has none (dropped:
    /// it comes from a network that is not Carrier's).
    public static func unwrap(datagram: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard datagram.count > magic.count, datagram.prefix(magic.count).elementsEqual(magic) else { return nil }
        return datagram.dropFirst(magic.count)
    }

    /// Puts the magic in front of each frame of an outgoing TCP stream,
    /// however the stream is cut into writes.
    public struct StreamFramer: Sendable {
        private var passThrough: Int
        /// Bytes of the current frame still to pass (0: a frame starts next).
        private var bodyLeft = 0
        /// The frame's length bytes seen so far (it is two).
        private var lengthBytes: [UInt8] = []

        /// A framer that lets `handshake` bytes through first, as they are.
        public init(handshake: Int) { passThrough = handshake }

        /// What goes on the wire for `bytes` of toxcore's stream.
        public mutating func frame(_ bytes: some Collection<UInt8>) -> [UInt8] {
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + 8)
            for byte in bytes {
                if passThrough > 0 {
                    passThrough -= 1
                } else if bodyLeft > 0 {
                    bodyLeft -= 1
                } else {
                    if lengthBytes.isEmpty { out += CarrierFraming.magic }
                    lengthBytes.append(byte)
                    if lengthBytes.count == 2 {
                        bodyLeft = Int(lengthBytes[0]) << 8 | Int(lengthBytes[1])
                        lengthBytes = []
                    }
                }
                out.append(byte)
            }
            return out
        }
    }

    /// Takes the magic out of each frame of an incoming TCP stream; a frame
    /// without it ends the stream (it is not the Carrier network's).
    public struct StreamDeframer: Sendable {
        /// A stream whose frames do not start with the magic.
        public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
            /// In words for a log.
            public var description: String { "a TCP relay frame without the Carrier network's magic" }
        }

        private var passThrough: Int
        private var magicSeen = 0
        private var lengthBytes: [UInt8] = []
        private var bodyLeft = 0
        private var failed = false

        /// A deframer that lets `handshake` bytes through first, as they are.
        public init(handshake: Int) { passThrough = handshake }

        /// toxcore's bytes in `bytes` of the wire.
        public mutating func deframe(_ bytes: some Collection<UInt8>) throws(Failure) -> [UInt8] {
            guard !failed else { throw Failure() }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            for byte in bytes {
                if passThrough > 0 {
                    passThrough -= 1
                    out.append(byte)
                } else if bodyLeft > 0 {
                    bodyLeft -= 1
                    out.append(byte)
                } else if magicSeen < CarrierFraming.magic.count {
                    guard byte == CarrierFraming.magic[magicSeen] else {
                        failed = true
                        throw Failure()
                    }
                    magicSeen += 1
                } else {
                    lengthBytes.append(byte)
                    out.append(byte)
                    if lengthBytes.count == 2 {
                        bodyLeft = Int(lengthBytes[0]) << 8 | Int(lengthBytes[1])
                        lengthBytes = []
                        magicSeen = 0
                    }
                }
            }
            return out
        }
    }
}
