import CSodium
import CarrierWire
import FileSafety
import Foundation

/// The Express offline-delivery protocol, shared by the node's client and the
/// service (`ExpressServer`); docs/express.md is its description.
///
/// Every request is signed with the caller's identity key (XEdDSA over the
/// canonical request string, which names the Express node's key, the method,
/// the path, the time, a fresh nonce and the body's SHA-256), so a deposit
/// cannot be made in another sender's name, only the recipient can pull or
/// delete its messages, and a replayed request is refused. Every answer is
/// signed with the Express node's key, which the client knows beforehand
/// (`host:port:key`). Messages are sealed end to end (`SealedMessage`): the
/// node stores ciphertext and learns sender, recipient, size and time.
public enum ExpressProtocol {
    /// The protocol's version, sent with every request.
    public static let version = "carrier-express-1"

    /// The request headers that authenticate a client.
    public enum Header {
        /// The client's user id.
        public static let user = "X-Carrier-User"
        /// The request's time; one more than `maxClockSkew` from the node's is refused.
        public static let time = "X-Carrier-Time"
        /// A random value a request carries once (no replays).
        public static let nonce = "X-Carrier-Nonce"
        /// The client's signature over the canonical request (the node's key, method, path, time, nonce, body's SHA-256).
        public static let signature = "X-Carrier-Signature"
        /// On a pull: "1" when more records wait after this batch.
        public static let more = "X-Carrier-More"
        /// On a message deposit: the sender's token for the recipient (`ExpressContact`), hex.
        public static let contact = "X-Carrier-Contact"
    }

    /// A request is refused when its time is further than this from the node's clock.
    public static let maxClockSkew: Duration = .seconds(300)
    /// The largest request body: a sealed 5 MB message and its envelope.
    public static let maxBodySize = Carrier.maxMessageSize + 4096
    /// A nonce is 16 random bytes in hex.
    public static let nonceLength = 32

    /// What the caller signs.
    public static func requestToSign(
        serverKey: [UInt8], method: String, path: String, time: Int64, nonce: String, body: [UInt8]
    ) -> [UInt8] {
        let text = [
            version, Base58.encode(serverKey), method, path, String(time), nonce, Hex.encode(sha256(body)),
        ].joined(separator: "\n")
        return Array(text.utf8)
    }

    /// The headers that authenticate a request of `userId` (holding `secretKey`)
    /// to the Express node with key `serverKey`; nil if the key cannot sign.
    public static func signedHeaders(
        serverKey: [UInt8], method: String, path: String, body: [UInt8], userId: UserId, secretKey: [UInt8],
        time: Int64 = Int64(Date().timeIntervalSince1970 * 1000), nonce: String = newNonce()
    ) -> [String: String]? {
        let message = requestToSign(
            serverKey: serverKey, method: method, path: path, time: time, nonce: nonce, body: body)
        guard let signature = try? IdentitySignature.sign(message: message, secretKey: secretKey) else { return nil }
        return [
            Header.user: userId.description, Header.time: String(time), Header.nonce: nonce,
            Header.signature: Hex.encode(signature),
        ]
    }

    /// A fresh random nonce, hex.
    public static func newNonce() -> String {
        var bytes = [UInt8](repeating: 0, count: nonceLength / 2)
        randombytes_buf(&bytes, bytes.count)
        return Hex.encode(bytes)
    }

    /// What the Express node signs in its answer to the request with `nonce`:
    /// the status, the body's hash and the `X-Carrier-More` header ("" when
    /// absent), so that nobody on the way can tell a puller that nothing more
    /// waits (or that something does).
    public static func responseToSign(nonce: String, status: Int, body: [UInt8], more: String = "") -> [UInt8] {
        Array(
            [version + "-response", nonce, String(status), Hex.encode(sha256(body)), "more=" + more].joined(
                separator: "\n"
            ).utf8)
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { Sha256.digest(bytes) }

    /// One stored message as a pull returns it:
    /// `seq u64 | sender key (32) | storedAt ms u64 | length u32 | sealed bytes`, big-endian.
    public struct Record: Equatable, Sendable {
        /// The record's number in the recipient's queue (delete up to it).
        public var seq: UInt64
        /// Who stored it (authenticated by the node; the seal proves it again).
        public var sender: UserId
        /// When it was stored (ms since 1970).
        public var storedAt: UInt64
        /// The sealed message (`SealedMessage`).
        public var sealed: [UInt8]

        /// A record.
        public init(seq: UInt64, sender: UserId, storedAt: UInt64, sealed: [UInt8]) {
            self.seq = seq
            self.sender = sender
            self.storedAt = storedAt
            self.sealed = sealed
        }

        static let headerSize = 8 + 32 + 8 + 4

        /// Appends the record's wire form.
        public func encode(into bytes: inout [UInt8]) {
            bytes += Self.bigEndian(seq)
            bytes += sender.publicKey
            bytes += Self.bigEndian(storedAt)
            bytes += Self.bigEndian(UInt32(sealed.count))
            bytes += sealed
        }

        /// The records of a pull's body; nil if it is malformed in any way.
        public static func decodeAll(_ bytes: [UInt8]) -> [Record]? {
            var records: [Record] = []
            var index = 0
            while index < bytes.count {
                guard bytes.count - index >= headerSize else { return nil }
                let seq = integer(bytes, index, 8)
                guard let sender = UserId(publicKey: bytes[index + 8..<index + 40]) else { return nil }
                let storedAt = integer(bytes, index + 40, 8)
                let length = Int(integer(bytes, index + 48, 4))
                index += headerSize
                guard length <= maxBodySize, bytes.count - index >= length else { return nil }
                records.append(
                    Record(seq: seq, sender: sender, storedAt: storedAt, sealed: Array(bytes[index..<index + length])))
                index += length
            }
            return records
        }

        static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
            withUnsafeBytes(of: value.bigEndian) { Array($0) }
        }

        static func integer(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> UInt64 {
            bytes[offset..<offset + count].reduce(0) { $0 << 8 | UInt64($1) }
        }
    }
}

/// What a sender stores for an offline recipient, sealed with
/// `crypto_box` (X25519 + XSalsa20-Poly1305) from the sender's key to the
/// recipient's: only the recipient opens it, and opening proves the sender.
/// Layout: `1 (version) | nonce (24) | box(plaintext)`; the plaintext is a
/// node packet (`docs/express.md`): the message or friend request, its id and time.
public struct SealedMessage: Equatable, Sendable {
    /// What was sealed.
    public enum Kind: UInt8, Sendable {
        case message = 1
        case friendRequest = 2
    }

    /// A message or a friend request.
    public var kind: Kind
    /// Chosen by the sender: the recipient delivers each id once.
    public var id: [UInt8]
    /// When the sender sent it (ms since 1970).
    public var timestamp: UInt64
    /// The extension a message was sent to, if any.
    public var ext: String?
    /// The message, or the friend request's hello.
    public var data: [UInt8]
    /// For a friend request: the nospam of the address it was sent to.
    public var nospam: UInt32?

    /// A message to seal.
    public init(kind: Kind, id: [UInt8], timestamp: UInt64, ext: String?, data: [UInt8], nospam: UInt32? = nil) {
        self.kind = kind
        self.id = id
        self.timestamp = timestamp
        self.ext = ext
        self.data = data
        self.nospam = nospam
    }

    static let envelopeVersion: UInt8 = 1
    static let idSize = 16

    func seal(to recipient: UserId, senderSecretKey: [UInt8]) -> [UInt8]? {
        var writer = WireWriter(type: kind == .message ? 50 : 51)
        writer.add(.transferId, id)
        writer.add(.timestamp, integer: timestamp)
        writer.add(.ext, string: ext)
        if let nospam { writer.add(.nospam, integer: nospam) }
        // The header's fields, then the data as it is (it may be 5 MB, past a field's 64 KB).
        let header = writer.bytes
        let plain = [UInt8(header.count >> 8), UInt8(header.count & 0xFF)] + header + data
        var nonce = [UInt8](repeating: 0, count: Int(crypto_box_NONCEBYTES))
        randombytes_buf(&nonce, nonce.count)
        var cipher = [UInt8](repeating: 0, count: plain.count + Int(crypto_box_MACBYTES))
        guard senderSecretKey.count == 32,
            crypto_box_easy(&cipher, plain, UInt64(plain.count), nonce, recipient.publicKey, senderSecretKey) == 0
        else { return nil }
        return [Self.envelopeVersion] + nonce + cipher
    }

    /// Opens what `sender` sealed for the holder of `recipientSecretKey`; nil
    /// if it was not sealed by that sender for this recipient, or is malformed.
    static func open(_ sealed: [UInt8], from sender: UserId, recipientSecretKey: [UInt8]) -> SealedMessage? {
        let nonceSize = Int(crypto_box_NONCEBYTES)
        let macSize = Int(crypto_box_MACBYTES)
        guard sealed.count > 1 + nonceSize + macSize, sealed[0] == envelopeVersion,
            sealed.count <= ExpressProtocol.maxBodySize
        else { return nil }
        let nonce = Array(sealed[1...nonceSize])
        let cipher = Array(sealed[(1 + nonceSize)...])
        var plain = [UInt8](repeating: 0, count: cipher.count - macSize)
        guard
            crypto_box_open_easy(&plain, cipher, UInt64(cipher.count), nonce, sender.publicKey, recipientSecretKey)
                == 0, plain.count >= 2
        else { return nil }
        let headerSize = Int(plain[0]) << 8 | Int(plain[1])
        guard plain.count >= 2 + headerSize, let reader = try? WireReader(plain[2..<2 + headerSize]),
            reader.type == 50 || reader.type == 51,
            let id = reader.bytes(.transferId), id.count == idSize,
            let timestamp: UInt64 = try? reader.requireInteger(.timestamp)
        else { return nil }
        // Absent is nil; present but malformed refuses the whole message.
        let ext: String?
        do { ext = try ExtraPacket.extensionName(reader) } catch { return nil }
        let data = plain[(2 + headerSize)...]
        let nospam: UInt32? = try? reader.integer(.nospam)
        return SealedMessage(
            kind: reader.type == 50 ? .message : .friendRequest, id: Array(id), timestamp: timestamp, ext: ext,
            data: Array(data), nospam: nospam)
    }
}
