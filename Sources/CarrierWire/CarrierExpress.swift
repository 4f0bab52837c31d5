import CSodium

/// Carrier's Express API (wire notes §5) as bytes, for both sides: what a
/// Carrier client sends an Express node and what the node answers, checked
/// against the reference client's own requests (`express.json`).
///
/// - An offline friend request: `PUT /<target address>/<sender userid>`
///   (the reference calls it POST; libcurl turns its upload into PUT, with a
///   chunked body), body `box(node key, friendreq packet)`; answer 201.
/// - An offline message: `PUT /<friend userid>/<sender userid>`, body
///   `box(node key, box(friend key, friendmsg packet))`; answer 201.
/// - A pull: `GET /<userid>`, answer 200 with records back to back:
///   `u32 BE 0xCA6EE595 | u32 BE length | box(node key, pullmsg)`; a record
///   of length 0 is skipped.
/// - A delete: `DELETE /<userid>?until=<base58(box(node key, decimal
///   timestamp))>`, answer 205.
///
/// `box(key, plain)` is `nonce (24) | MAC (16) | ciphertext`: libsodium's
/// secretbox with the key `crypto_box_beforenm` gives for two X25519 keys.
public enum CarrierExpress {
    /// Each pull record's first four bytes.
    public static let recordMagic: UInt32 = 0xCA6E_E595
    /// A box's nonce.
    public static let nonceSize = 24
    /// A box's MAC.
    public static let macSize = 16
    /// The largest box a record or a deposit holds: a whole message
    /// (5 MiB) in a packet, boxed twice, with a pullmsg around it.
    public static let maxBox = CarrierPacket.maxSize + 4096

    /// The key two parties share: ours with an Express node (the node's
    /// key) or with a friend (the friend's), as `crypto_box_beforenm` makes it.
    public static func sharedKey(secretKey: [UInt8], publicKey: [UInt8]) -> [UInt8]? {
        guard secretKey.count == 32, publicKey.count == 32 else { return nil }
        var key = [UInt8](repeating: 0, count: 32)
        guard crypto_box_beforenm(&key, publicKey, secretKey) == 0 else { return nil }
        return key
    }

    /// `nonce | MAC | ciphertext` of `plain` under `key`.
    public static func box(_ plain: [UInt8], key: [UInt8], nonce: [UInt8] = randomNonce()) -> [UInt8] {
        precondition(key.count == 32 && nonce.count == nonceSize)
        var sealed = [UInt8](repeating: 0, count: plain.count + macSize)
        _ = crypto_secretbox_easy(&sealed, plain, UInt64(plain.count), nonce, key)
        return nonce + sealed
    }

    /// What `box` sealed, or nil if `boxed` is not a box under `key`.
    public static func open(_ boxed: some Collection<UInt8>, key: [UInt8]) -> [UInt8]? {
        let boxed = Array(boxed)
        guard key.count == 32, boxed.count >= nonceSize + macSize, boxed.count <= maxBox else { return nil }
        var plain = [UInt8](repeating: 0, count: boxed.count - nonceSize - macSize)
        let nonce = Array(boxed[0..<nonceSize])
        let sealed = Array(boxed[nonceSize...])
        guard crypto_secretbox_open_easy(&plain, sealed, UInt64(sealed.count), nonce, key) == 0 else { return nil }
        return plain
    }

    /// 24 random bytes.
    public static func randomNonce() -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: nonceSize)
        randombytes_buf(&nonce, nonceSize)
        return nonce
    }

    /// The `until` parameter of a delete: the last timestamp pulled, boxed for the node.
    public static func until(_ timestamp: UInt64, nodeKey: [UInt8], nonce: [UInt8] = randomNonce()) -> String {
        Base58.encode(box(Array(String(timestamp).utf8), key: nodeKey, nonce: nonce))
    }

    /// The timestamp in an `until` parameter, or nil if it is not one boxed under `nodeKey`.
    public static func timestamp(until text: some StringProtocol, nodeKey: [UInt8]) -> UInt64? {
        guard text.utf8.count <= 200, let boxed = Base58.decode(String(text)),
            let plain = open(boxed, key: nodeKey), plain.count <= 20
        else { return nil }
        return UInt64(String(decoding: plain, as: UTF8.self))
    }

    /// One pull record around `boxed` (a boxed pullmsg).
    public static func record(_ boxed: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: recordMagic.bigEndian) { Array($0) }
            + withUnsafeBytes(of: UInt32(boxed.count).bigEndian) { Array($0) } + boxed
    }

    /// The boxes in a pull answer, in order (empty records skipped); nil if
    /// a record's magic is wrong, its length past `maxBox`, or the answer ends inside one.
    public static func records(_ body: [UInt8]) -> [[UInt8]]? {
        var boxes: [[UInt8]] = []
        var index = 0
        func u32(_ at: Int) -> UInt32 { body[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        while index < body.count {
            guard index + 8 <= body.count, u32(index) == recordMagic else { return nil }
            let length = Int(u32(index + 4))
            index += 8
            guard length <= maxBox, index + length <= body.count else { return nil }
            if length > 0 { boxes.append(Array(body[index..<index + length])) }
            index += length
        }
        return boxes
    }
}
