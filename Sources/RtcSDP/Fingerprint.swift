/// `a=fingerprint:<hash> <AA:BB:...>` (RFC 8122 §5): the hash of the peer's
/// DTLS certificate, checked against the certificate the handshake presents.
public struct Fingerprint: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// Lower-cased hash function name: `sha-256`, `sha-384`, `sha-512`, `sha-1` (`accepted`).
    public var algorithm: String
    /// The digest.
    public var bytes: [UInt8]

    /// A fingerprint from its hash name and digest.
    public init(algorithm: String, bytes: [UInt8]) {
        self.algorithm = algorithm.lowercased()
        self.bytes = bytes
    }

    /// The hashes accepted, with their digest sizes: those RFC 8122 allows and
    /// the DTLS layer can check (browsers send sha-256).
    public static let accepted = ["sha-1": 20, "sha-256": 32, "sha-384": 48, "sha-512": 64]

    /// Reads `<hash> <AA:BB:…>`; a hash not in `accepted` (md5, say), or a digest of the wrong size, is an error that says so.
    public init(parsing text: String) throws(SDPError) {
        let parts = text.trimmingWhitespace.split(separator: " ", omittingEmptySubsequences: true)
        let fail = SDPError(line: 0, text: text, reason: "fingerprint must be '<hash> <hex pairs separated by :>'")
        guard parts.count == 2 else { throw fail }
        var bytes: [UInt8] = []
        for pair in parts[1].split(separator: ":", omittingEmptySubsequences: false) {
            guard pair.count == 2, let byte = UInt8(pair, radix: 16) else { throw fail }
            bytes.append(byte)
        }
        let algorithm = parts[0].lowercased()
        guard let expected = Self.accepted[algorithm] else {
            throw SDPError(
                line: 0, text: text,
                reason:
                    "fingerprint hash \(algorithm) is not accepted: use sha-256 (browsers do), or sha-384, sha-512 or sha-1 (RFC 8122 §5; md2 and md5 are refused)"
            )
        }
        guard bytes.count == expected else {
            throw SDPError(
                line: 0, text: text, reason: "\(algorithm) fingerprint needs \(expected) bytes, has \(bytes.count)")
        }
        self.init(algorithm: algorithm, bytes: bytes)
    }

    /// `sha-256 AB:CD:...` (upper-case hex, as browsers write it).
    public var description: String {
        let digits = Array("0123456789ABCDEF")
        let hex = bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0xF)]]) }.joined(separator: ":")
        return "\(algorithm) \(hex)"
    }
}

/// `a=setup` (RFC 4145 / 8842): which side starts the DTLS handshake.
public enum SetupRole: String, Sendable {
    case active, passive, actpass, holdconn
}

/// Media direction attributes.
public enum Direction: String, Sendable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive

    /// The direction the other side sees.
    public var reversed: Direction {
        switch self {
        case .sendonly: .recvonly
        case .recvonly: .sendonly
        default: self
        }
    }
}
