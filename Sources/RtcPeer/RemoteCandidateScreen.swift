import Foundation
import RtcSDP

/// Decides what to do with a remote candidate before it reaches ICE: use it,
/// resolve its host name first, or drop it with a reason that is counted
/// (`PeerStats.droppedCandidates`). libnice takes IP literals only; browsers
/// hide host addresses behind mDNS names (`<uuid>.local`), which need a
/// resolver (nss-mdns) on this machine; `.invalid` names never resolve (RFC 6761).
enum RemoteCandidateScreen {
    enum Verdict: Equatable {
        case use(String)
        /// A host name to resolve (off the actor); the candidate is used with its address.
        case resolve(Candidate, host: String)
        case drop(reason: String)
    }

    static func screen(_ line: String) -> Verdict {
        let text = line.hasPrefix("a=") ? String(line.dropFirst(2)) : line
        guard let candidate = try? Candidate(parsing: text) else { return .drop(reason: "not a candidate line") }
        if isAddressLiteral(candidate.address) { return .use(text) }
        let host = candidate.address.lowercased()
        if host.hasSuffix(".invalid") || host == "invalid" {
            return .drop(reason: "reserved .invalid host name")
        }
        // A peer's candidate must not make this machine ask DNS for any name
        // it likes (a probe of our resolver, a beacon to the peer's server):
        // only browsers' mDNS names are looked up, and those stay on the LAN.
        guard isMdnsName(host) else { return .drop(reason: "host name other than .local: not looked up") }
        return .resolve(candidate, host: host)
    }

    /// One label of letters, digits and `-` (a browser's UUID) under `.local`, 1-63 bytes.
    static func isMdnsName(_ host: String) -> Bool {
        guard host.hasSuffix(".local") else { return false }
        let label = host.utf8.dropLast(6)
        return (1...63).contains(label.count)
            && label.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) || $0 == 0x2D }
    }

    static func isAddressLiteral(_ text: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }

    /// The first address `host` resolves to, on a thread of the dispatch pool
    /// (getaddrinfo blocks); nil if it does not resolve.
    static func resolve(_ host: String) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                var hints = addrinfo()
                hints.ai_family = AF_UNSPEC
                hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
                var result: UnsafeMutablePointer<addrinfo>?
                guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else {
                    continuation.resume(returning: nil)
                    return
                }
                defer { freeaddrinfo(result) }
                var buffer = [CChar](repeating: 0, count: Int(NI_MAXHOST))
                let ok = getnameinfo(
                    first.pointee.ai_addr, first.pointee.ai_addrlen, &buffer, socklen_t(buffer.count), nil, 0,
                    NI_NUMERICHOST)
                let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                continuation.resume(returning: ok == 0 ? text : nil)
            }
        }
    }
}
