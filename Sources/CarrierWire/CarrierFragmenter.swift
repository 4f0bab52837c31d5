/// How Carrier splits what does not fit one toxcore message (wire notes
/// §2.3 and §3; `flows.json` shows the reference library doing it):
///
/// - a message of at most 1024 bytes is one `friendmsg`, sent with the
///   message id (its receipt); a longer one goes as `bulkmsg` fragments of
///   1024 bytes, `totalsz` on the first, the message id on the last only, so
///   there is one receipt for the whole;
/// - an invite, and a reply that accepts, go as fragments of at most 1280
///   bytes, `totalsz` on the first; a bundle rides on the first and takes its
///   length out of that fragment's data; a reply that refuses is one packet
///   with its reason.
///
/// One difference, on purpose: the reference fails an invite to ext
/// `carrier` with a bundle and 1267 bytes or more (its first fragment
/// encodes to 1380 bytes, over toxcore's 1372). Here the first fragment
/// gives up as much data as it takes to fit; receivers take fragments of
/// any size from 1 to 1280, so a Carrier peer reads it the same.
public enum CarrierFragmenter {
    /// One packet to hand to toxcore, and whether it carries the message id.
    public struct Piece: Equatable, Sendable {
        /// The packet to send.
        public var packet: CarrierPacket
        /// Send it with the message's id: its receipt is the message's.
        public var carriesReceipt: Bool
    }

    /// Why something cannot be sent as Carrier packets.
    public enum Refusal: Error, Equatable, Sendable, CustomStringConvertible {
        case tooLarge(String)
        case invalid(String)

        /// In words for the caller.
        public var description: String {
            switch self {
            case .tooLarge(let why), .invalid(let why): why
            }
        }
    }

    /// A message to a friend (or to `ext` on it), split as Carrier does.
    public static func message(_ data: [UInt8], ext: String?, tid: Int64) throws(Refusal) -> [Piece] {
        try check(ext: ext)
        guard !data.isEmpty else { throw .invalid("an empty message") }
        guard data.count <= CarrierLimits.maxBulkMessage else {
            throw .tooLarge("a message of \(data.count) bytes, at most \(CarrierLimits.maxBulkMessage)")
        }
        guard data.count > CarrierLimits.maxMessage else {
            return [Piece(packet: .message(ext: ext, data: data), carriesReceipt: true)]
        }
        let starts = Array(stride(from: 0, to: data.count, by: CarrierLimits.maxMessage))
        return starts.enumerated().map { index, start in
            let piece = Array(data[start..<min(start + CarrierLimits.maxMessage, data.count)])
            let fragment = CarrierPacket.Fragment(
                ext: ext, tid: tid, totalSize: index == 0 ? UInt32(data.count) : 0, data: piece)
            return Piece(packet: .bulk(fragment), carriesReceipt: index == starts.count - 1)
        }
    }

    /// An invite (1 to 8192 bytes), split as Carrier does.
    public static func invite(_ data: [UInt8], ext: String?, bundle: String?, tid: Int64) throws(Refusal)
        -> [CarrierPacket]
    {
        try invitePieces(data, ext: ext, bundle: bundle, tid: tid).map { .inviteRequest($0) }
    }

    /// The reply to an invite: its data split as an invite's when `status`
    /// is 0, else one packet with `reason`.
    public static func reply(
        status: Int32, reason: String?, data: [UInt8], ext: String?, bundle: String?, tid: Int64
    ) throws(Refusal) -> [CarrierPacket] {
        guard status == 0 else {
            try check(ext: ext)
            if let reason, reason.utf8.count > CarrierLimits.maxReason {
                throw .tooLarge("a reason of \(reason.utf8.count) bytes, at most \(CarrierLimits.maxReason)")
            }
            let refusal = CarrierPacket.Fragment(ext: ext, tid: tid, bundle: bundle)
            return [.inviteResponse(refusal, status: status, reason: reason)]
        }
        return try invitePieces(data, ext: ext, bundle: bundle, tid: tid).map {
            .inviteResponse($0, status: 0, reason: nil)
        }
    }

    private static func invitePieces(_ data: [UInt8], ext: String?, bundle: String?, tid: Int64) throws(Refusal)
        -> [CarrierPacket.Fragment]
    {
        try check(ext: ext)
        guard (1...CarrierLimits.maxInviteData).contains(data.count) else {
            throw .tooLarge("invite data of \(data.count) bytes: 1 to \(CarrierLimits.maxInviteData)")
        }
        let bundleLength = bundle?.utf8.count ?? 0
        guard bundleLength <= CarrierLimits.maxBundle else {
            throw .tooLarge("a bundle of \(bundleLength) bytes, at most \(CarrierLimits.maxBundle)")
        }
        // The first fragment: what the bundle leaves of 1280, less whatever keeps it within toxcore's limit.
        var first = min(data.count, CarrierLimits.inviteFragment - bundleLength)
        while first > 1 {
            let probe = CarrierPacket.Fragment(
                ext: ext, tid: tid, totalSize: UInt32(data.count), bundle: bundle, data: Array(data[0..<first]))
            if CarrierPacket.inviteRequest(probe).encode().count <= CarrierLimits.maxToxMessage { break }
            first -= 1
        }
        var pieces = [
            CarrierPacket.Fragment(
                ext: ext, tid: tid, totalSize: UInt32(data.count), bundle: bundle, data: Array(data[0..<first]))
        ]
        var start = first
        while start < data.count {
            let end = min(start + CarrierLimits.inviteFragment, data.count)
            pieces.append(CarrierPacket.Fragment(ext: ext, tid: tid, data: Array(data[start..<end])))
            start = end
        }
        return pieces
    }

    private static func check(ext: String?) throws(Refusal) {
        guard let ext else { return }
        guard (1...CarrierLimits.maxExtensionName).contains(ext.utf8.count), !ext.contains(":") else {
            throw .invalid("an extension name of 1 to \(CarrierLimits.maxExtensionName) bytes without ':'")
        }
    }
}
