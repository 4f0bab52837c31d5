import CarrierNode
import CarrierWire
import Foundation

/// Carrier's own Express API (wire notes §5.2, `CarrierExpress`), served
/// beside `/v1` so that Carrier apps can use this node: they deposit with
/// `PUT` (or `POST`) `/<target>/<sender>`, pull with `GET /<userid>` and
/// delete with `DELETE /<userid>?until=`. Authentication is Carrier's: a
/// body opens only with the key the sender's secret key shares with this
/// node's, and so does `until`; a pull is open to anyone and readable only
/// by its owner.
///
/// What ours adds stays where the reference client does not see it: the
/// quotas per recipient, per sender and per node, the rate limits, the
/// stores. One thing cannot: the rule that a message needs the recipient's
/// word (`ExpressContact`), since a Carrier client sends no token; a message
/// through this API is held to the sender's quota and rate only, and opens
/// only for the recipient (docs/express.md). Records deposited through one
/// API go out through the same one.
extension ExpressService {
    /// The largest Carrier deposit: a message of 5 MiB in its packet, boxed twice.
    static let maxCarrierDeposit = ExpressProtocol.maxBodySize

    func carrierRoute(_ request: HttpRequest, route: [String], now: Int64) -> HttpResponse {
        switch (request.method, route.count) {
        case ("HEAD", 1) where route[0] == "version", ("GET", 1) where route[0] == "version":
            return HttpResponse(200, "carrier-express")
        case ("PUT", 2), ("POST", 2):
            if request.bodyTooLarge || request.body.count > Self.maxCarrierDeposit {
                return HttpResponse(413, "the body is larger than \(Self.maxCarrierDeposit) bytes")
            }
            guard limiters.allowDeposit(from: request.peerAddress, now: now) else {
                return HttpResponse(429, "too many deposits from your address; try again in a minute")
            }
            return carrierDeposit(request.body, target: route[0], senderText: route[1], now: now)
        case ("GET", 1):
            return carrierPull(route[0], now: now)
        case ("DELETE", 1):
            return carrierDelete(route[0], until: request.query["until"])
        default:
            return HttpResponse(404, "no such resource")
        }
    }

    private func carrierDeposit(_ body: [UInt8], target: String, senderText: String, now: Int64) -> HttpResponse {
        guard let sender = UserId(senderText) else { return HttpResponse(400, "the sender is not a user id") }
        guard let key = CarrierExpress.sharedKey(secretKey: carrierSecretKey, publicKey: sender.publicKey),
            let plain = CarrierExpress.open(body, key: key)
        else { return HttpResponse(401, "the body is not sealed by the sender for this node") }
        let recipient: UserId
        let kind: DepositKind
        var stored: [UInt8]
        if let address = CarrierAddress(target) {
            // A friend request: the plain friendreq packet, small.
            guard plain.count <= configuration.maxRequestSize,
                case .friendRequest? = try? CarrierPacket.decode(plain)
            else {
                return HttpResponse(
                    400, "a friend request is a friendreq packet of at most \(configuration.maxRequestSize) bytes")
            }
            recipient = address.userId
            kind = .carrierRequest
            stored = [CarrierPullMessage.Kind.friendRequest.rawValue, UInt8(target.utf8.count)] + Array(target.utf8)
            stored += plain
        } else if let user = UserId(target) {
            // A message: sealed for the recipient, opaque here.
            recipient = user
            kind = .carrierMessage
            stored = [CarrierPullMessage.Kind.message.rawValue] + plain
        } else {
            return HttpResponse(400, "the target is neither an address nor a user id")
        }
        guard limiters.allowDeposit(by: sender, kind: kind.isRequest ? .request : .message, now: now) else {
            return HttpResponse(429, "too many deposits from you; try again later")
        }
        let id = (0..<16).map { _ in UInt8.random(in: 0...255) }
        switch try? store.deposit(
            recipient: recipient, sender: sender, messageId: id, body: stored, kind: kind, now: now)
        {
        case .stored?, .duplicate?: return HttpResponse(201, "stored")
        case .overQuota(let why)?: return HttpResponse(429, why)
        case .full(let why)?: return HttpResponse(507, why)
        case nil: return HttpResponse(500, "the store failed")
        }
    }

    private func carrierPull(_ userText: String, now: Int64) -> HttpResponse {
        guard let user = UserId(userText) else { return HttpResponse(400, "not a user id") }
        guard let key = CarrierExpress.sharedKey(secretKey: carrierSecretKey, publicKey: user.publicKey) else {
            return HttpResponse(400, "not a usable key")
        }
        guard
            let batch = try? store.pull(
                for: user, after: 0, maxCount: configuration.pullMaxRecords, maxBytes: configuration.pullMaxBytes,
                now: now, api: .carrier)
        else { return HttpResponse(500, "the store failed") }
        var body: [UInt8] = []
        for record in batch.records {
            guard let message = Self.pullMessage(record) else { continue }
            body += CarrierExpress.record(CarrierExpress.box(message.encode(), key: key))
        }
        return HttpResponse(status: 200, headers: ["Content-Type": "application/binary"], body: body)
    }

    /// What a stored Carrier deposit is as Carrier hands it back: kind byte,
    /// then (a request) the address, then the payload.
    static func pullMessage(_ record: ExpressProtocol.Record) -> CarrierPullMessage? {
        guard let first = record.sealed.first, let kind = CarrierPullMessage.Kind(rawValue: first) else { return nil }
        var rest = record.sealed.dropFirst()
        var address: String?
        if kind == .friendRequest {
            guard let length = rest.first.map(Int.init), rest.count > length else { return nil }
            address = String(decoding: rest.dropFirst().prefix(length), as: UTF8.self)
            rest = rest.dropFirst(1 + length)
        }
        return CarrierPullMessage(
            id: record.seq, from: record.sender.description, kind: kind, timestamp: record.storedAt,
            address: address, payload: Array(rest))
    }

    private func carrierDelete(_ userText: String, until: String?) -> HttpResponse {
        guard let user = UserId(userText) else { return HttpResponse(400, "not a user id") }
        guard let until, let key = CarrierExpress.sharedKey(secretKey: carrierSecretKey, publicKey: user.publicKey),
            let timestamp = CarrierExpress.timestamp(until: until, nodeKey: key), timestamp <= UInt64(Int64.max)
        else { return HttpResponse(401, "until is not a timestamp sealed by the user for this node") }
        guard (try? store.deleteCarrier(for: user, storedUpTo: Int64(timestamp))) != nil else {
            return HttpResponse(500, "the store failed")
        }
        return HttpResponse(205, "")
    }
}
