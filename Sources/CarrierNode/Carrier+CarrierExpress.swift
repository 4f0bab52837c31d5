import CarrierWire
import FileSafety
import Foundation

/// Pulling from Express nodes that speak Carrier's API (`CarrierExpressClient`):
/// what they hold is opened here and kept in the same `OfflineInbox` as
/// what our nodes hold, sealed again for ourselves as if by its sender (a
/// box under the key we share with it), so that one path delivers both.
extension Carrier {
    func pullCarrier(_ client: CarrierExpressClient) async {
        let messages: [CarrierPullMessage]
        do { messages = try await client.pull() } catch {
            guard !killed else { return }
            return Self.log.warning(
                "pulling offline messages from \(client.node.host):\(client.node.port) failed: \(error)")
        }
        guard !killed, let last = messages.map(\.timestamp).max() else { return }
        keepCarrierOffline(messages, from: client.node)
        if Self.stopPullAfterKeepingForTests { return }
        do { try await client.delete(until: last) } catch {
            // Kept here by an id made from the record: pulled again, not delivered twice.
            Self.log.warning("deleting pulled messages on \(client.node.host):\(client.node.port) failed: \(error)")
        }
    }

    private func keepCarrierOffline(_ messages: [CarrierPullMessage], from node: ExpressNode) {
        let secretKey = exportSecretKey()
        let ownAddress = address().description
        for message in messages {
            guard let sender = UserId(message.from) else {
                counters.malformedPackets += 1
                continue
            }
            let id = Array(
                Sha256.digest(node.publicKey + Array("\(message.from)/\(message.id)/\(message.timestamp)".utf8)).prefix(
                    SealedMessage.idSize))
            let kept: SealedMessage
            switch message.kind {
            case .message:
                guard let key = CarrierExpress.sharedKey(secretKey: secretKey, publicKey: sender.publicKey),
                    let plain = CarrierExpress.open(message.payload, key: key),
                    case .message(let ext, let data)? = try? CarrierPacket.decode(plain), !data.isEmpty
                else {
                    counters.malformedPackets += 1
                    drop(from: sender, "an offline message that does not open (not sealed by its sender for us)")
                    continue
                }
                kept = SealedMessage(kind: .message, id: id, timestamp: message.timestamp, ext: ext, data: data)
            case .friendRequest:
                // For this address only: one with an old nospam is not for us any more.
                guard message.address == ownAddress else { continue }
                kept = SealedMessage(
                    kind: .friendRequest, id: id, timestamp: message.timestamp, ext: nil, data: message.payload,
                    nospam: nospam())
            }
            guard let sealed = kept.seal(to: sender, senderSecretKey: secretKey) else { continue }
            do { _ = try offlineInbox.add(sender: sender, sealed: sealed, id: id) } catch {
                drop(from: sender, "cannot keep an offline message: \(error)")
            }
        }
    }
}
