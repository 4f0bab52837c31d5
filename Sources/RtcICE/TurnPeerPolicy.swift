/// Which peer addresses a TURN server is asked to reach.
///
/// libnice pairs its relay candidate with every candidate of the peer,
/// including the peer's host addresses on a private network behind its NAT.
/// A server on the public internet cannot reach those, and some say so in
/// the worst way: a hardened host black-holes the private ranges, the send
/// fails at once with EINVAL (ENETUNREACH without a route), and coturn 4.6
/// then closes the whole allocation, every permission with it, so the relayed
/// pairs that would have worked die too. So a guard asks a public server only
/// for public peers. A server on a private or loopback address (a relay
/// inside a company network, or a test's) may reach anything.
///
/// Nothing is lost: a peer's private address that the relay could reach
/// would be reachable directly from a host on that network as well.
enum TurnPeerPolicy {
    /// Whether a message from libnice goes on to the server at `server`: not
    /// a CreatePermission, ChannelBind or Send naming a peer it may not relay
    /// to. libnice takes a permission that never comes as granted once its
    /// retransmissions end, and its checks of those pairs fail by timeout.
    static func forwards(_ datagram: [UInt8], server: [UInt8]?) -> Bool {
        guard let message = TurnMessage(datagram) else { return true }  // ChannelData: bound channels only
        switch message.method {
        case TurnMessage.createPermission, TurnMessage.channelBind, TurnMessage.send:
            return message.peerAddresses.allSatisfy { mayRelay(to: $0, server: server) }
        default:
            return true
        }
    }

    /// Whether the server's answer says our allocation is gone (437
    /// Allocation Mismatch, RFC 8656 §7.1: a server that restarted or closed
    /// it), or its refresh failed for good (anything but the 401 and 438 that
    /// libnice answers with new credentials).
    static func meansAllocationLost(_ datagram: [UInt8]) -> Bool {
        guard let message = TurnMessage(datagram), message.messageClass == .error,
            let number = message.errorNumber
        else { return false }
        switch message.method {
        case TurnMessage.refresh: return number != 401 && number != 438
        case TurnMessage.createPermission, TurnMessage.channelBind: return number == 437
        default: return false
        }
    }

    /// Whether to ask a server at `server` to relay to `peer` (IP address
    /// bytes, 4 or 16; an unknown server address counts as public).
    static func mayRelay(to peer: [UInt8], server: [UInt8]?) -> Bool {
        guard let server, isPublic(server) else { return true }
        return isPublic(peer)
    }

    /// Not in a range that stays inside a site or a machine (RFC 6890):
    /// private, shared (CGN), loopback, link-local, benchmarking, multicast,
    /// reserved, unique-local. The documentation ranges count as public:
    /// labs and examples stand them in for the internet.
    static func isPublic(_ address: [UInt8]) -> Bool {
        switch address.count {
        case 4:
            let (a, b) = (address[0], address[1])
            if a == 0 || a == 10 || a == 127 || a >= 224 { return false }
            if a == 100 && b & 0xC0 == 64 { return false }  // 100.64.0.0/10
            if a == 169 && b == 254 { return false }
            if a == 172 && b & 0xF0 == 16 { return false }  // 172.16.0.0/12
            if a == 192 && b == 168 { return false }
            if a == 198 && b & 0xFE == 18 { return false }  // 198.18.0.0/15
            return true
        case 16:
            if address[0] & 0xFE == 0xFC { return false }  // fc00::/7
            if address[0] == 0xFE && address[1] & 0xC0 == 0x80 { return false }  // fe80::/10
            if address[0] == 0xFF { return false }  // multicast
            if address.dropLast(1).allSatisfy({ $0 == 0 }) { return false }  // :: and ::1
            if address[0..<10].allSatisfy({ $0 == 0 }) && address[10] == 0xFF && address[11] == 0xFF {
                return isPublic(Array(address[12..<16]))  // ::ffff:a.b.c.d
            }
            return true
        default:
            return false
        }
    }
}
