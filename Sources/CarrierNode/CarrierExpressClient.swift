import CarrierWire
import Foundation

/// The node's side of Carrier's own Express API (`CarrierExpress`, wire
/// notes §5), for Express nodes of the Carrier network (`ExpressNode.api`
/// `.carrier`): the network's public ones, or ours, which serves it too.
/// HTTPS with the certificate unchecked, as the reference client does: the
/// node's key, not its certificate, authenticates it (only it opens what we
/// seal, and only its answers open with our key). Runs off the node's actor.
struct CarrierExpressClient: Sendable {
    let node: ExpressNode
    let userId: UserId
    let secretKey: [UInt8]
    var http = HttpClient(verifyPeer: false)

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private var nodeKey: [UInt8]? { CarrierExpress.sharedKey(secretKey: secretKey, publicKey: node.publicKey) }

    /// Stores `packet` (a friendmsg) for `friend`, sealed for it and then for the node.
    func depositMessage(_ packet: [UInt8], to friend: UserId) async throws(Failure) {
        guard let nodeKey, let friendKey = CarrierExpress.sharedKey(secretKey: secretKey, publicKey: friend.publicKey)
        else { throw Failure(description: "no key shared with the Express node or the friend") }
        let body = CarrierExpress.box(CarrierExpress.box(packet, key: friendKey), key: nodeKey)
        try await expect(201, "PUT", "/\(friend)/\(userId)", body: body)
    }

    /// Stores `packet` (a friendreq) for the owner of `address`, sealed for the node.
    func depositRequest(_ packet: [UInt8], to address: CarrierAddress) async throws(Failure) {
        guard let nodeKey else { throw Failure(description: "no key shared with the Express node") }
        try await expect(201, "PUT", "/\(address)/\(userId)", body: CarrierExpress.box(packet, key: nodeKey))
    }

    /// What waits for us, in the node's order; records that do not open are left out.
    func pull() async throws(Failure) -> [CarrierPullMessage] {
        guard let nodeKey else { throw Failure(description: "no key shared with the Express node") }
        let answer = try await expect(200, "GET", "/\(userId)", body: [])
        guard let boxes = CarrierExpress.records(answer) else {
            throw Failure(description: "\(node) sent a malformed list of records")
        }
        return boxes.compactMap { CarrierExpress.open($0, key: nodeKey).flatMap(CarrierPullMessage.decode) }
    }

    /// Deletes what waits for us up to and with `timestamp`.
    func delete(until timestamp: UInt64) async throws(Failure) {
        guard let nodeKey else { throw Failure(description: "no key shared with the Express node") }
        let until = CarrierExpress.until(timestamp, nodeKey: nodeKey)
        try await expect(205, "DELETE", "/\(userId)?until=\(until)", body: [])
    }

    @discardableResult
    private func expect(_ status: Int, _ method: String, _ path: String, body: [UInt8]) async throws(Failure)
        -> [UInt8]
    {
        let response: HttpClient.Response
        do {
            response = try await http.send(
                method: method, url: node.baseURL + path, headers: ["Content-Type": "application/binary"], body: body)
        } catch {
            throw Failure(description: "Express node \(node.host):\(node.port) unreachable: \(error)")
        }
        guard response.status == status else {
            let reason = String(decoding: response.body.prefix(300), as: UTF8.self)
            throw Failure(description: "Express refused (\(response.status)): \(reason)")
        }
        return response.body
    }
}
