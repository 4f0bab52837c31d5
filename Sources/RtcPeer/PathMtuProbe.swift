import Foundation

/// Larger SCTP packets where the path carries them, found by probing.
///
/// RFC 8831 §5 asks data channels to find the path MTU by probing (RFC 4821,
/// RFC 8899) rather than trusting ICMP; usrsctp does neither over DTLS, so
/// every packet stays at the safe default of about 1200 bytes. On a path
/// inside one machine that default is what limits a data channel: each packet
/// costs a DTLS record, a system call on both sides and a SACK's share, and
/// with 16 KB packets a transfer between two local processes needs a
/// thirteenth of them (measured: about 2.5 times the throughput, at a third
/// of the CPU).
///
/// So, when both ends say they take larger packets (`a=x-carrier-sctp-packet`
/// in their SDP, which other stacks ignore) and ICE's selected pair stays
/// inside this machine (`IceAgent.isLocalPath`: loopback, or our own address
/// at both ends), each end sends one probe of the size it wants, inside DTLS, and
/// uses that size for SCTP only once the peer has acknowledged it. A probe
/// lost or cut short (a relay process with a small buffer sits on loopback
/// too) leaves the default. usrsctp fixes its packet size when its
/// association starts, so the probe runs first: about one round trip on
/// loopback, and at most `giveUpAfter` when no answer comes.
///
/// Probe and acknowledgement are DTLS application data that cannot be SCTP:
/// their first two bytes, SCTP's source port, are zero, a port no SCTP packet
/// may carry (RFC 9260 §3.1). Layout, big-endian: port 0 (2 bytes), kind (2:
/// 1 probe, 2 acknowledgement), token (4), size (4), then zeros up to `size`
/// for a probe.
struct PathMtuProbe: Sendable {
    /// The SDP attribute on the data section: the largest SCTP packet this end takes over DTLS.
    static let attribute = "x-carrier-sctp-packet"
    /// What we take and probe for: an SCTP packet in one DTLS record, which
    /// stays under our 16 KiB datagram limit with any cipher's overhead.
    static let largest = 16000
    /// The smallest size worth probing: anything less is no gain over the default.
    static let smallest = 4000
    /// When probes go out (from the first one), and when we stop waiting.
    static let retries: [Duration] = [.zero, .milliseconds(20), .milliseconds(60)]
    static let giveUpAfter = Duration.milliseconds(120)

    enum Message: Equatable, Sendable {
        case probe(token: UInt32, size: Int)
        case acknowledgement(token: UInt32, size: Int)
    }

    /// Whether a decrypted DTLS record is one of ours rather than SCTP.
    static func isProbeMessage(_ plaintext: [UInt8]) -> Bool {
        plaintext.count >= 2 && plaintext[0] == 0 && plaintext[1] == 0
    }

    static func encode(_ message: Message) -> [UInt8] {
        let (kind, token, size): (UInt16, UInt32, Int) =
            switch message {
            case .probe(let token, let size): (1, token, size)
            case .acknowledgement(let token, let size): (2, token, size)
            }
        var bytes: [UInt8] = [0, 0, UInt8(kind >> 8), UInt8(kind & 0xff)]
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: token >> shift)) }
        let size32 = UInt32(clamping: size)
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: size32 >> shift)) }
        if case .probe = message, size > bytes.count { bytes += [UInt8](repeating: 0, count: size - bytes.count) }
        return bytes
    }

    /// A probe must arrive whole: one that is shorter than it says was cut on
    /// the way, and answering it would claim a path that does not exist.
    static func decode(_ bytes: [UInt8]) -> Message? {
        guard bytes.count >= 12, bytes[0] == 0, bytes[1] == 0 else { return nil }
        func word(_ at: Int) -> UInt32 { bytes[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        let token = word(4)
        let size = Int(word(8))
        switch UInt16(bytes[2]) << 8 | UInt16(bytes[3]) {
        case 1: return bytes.count == size ? .probe(token: token, size: size) : nil
        case 2: return .acknowledgement(token: token, size: size)
        default: return nil
        }
    }

    /// What the prober does next.
    enum Step: Equatable, Sendable {
        /// Send this probe, then call `tick` again at `next`.
        case send([UInt8], next: ContinuousClock.Instant)
        /// Call `tick` again at this time.
        case wait(until: ContinuousClock.Instant)
        /// Probing is over: SCTP packets of this size (nil: the default).
        case done(Int?)
    }

    private let size: Int
    private let token: UInt32
    private let started: ContinuousClock.Instant
    private var sent = 0
    private(set) var result: Int??

    /// A probe for `size` bytes, begun at `now`.
    init(size: Int, token: UInt32 = .random(in: 1...UInt32.max), now: ContinuousClock.Instant) {
        self.size = size
        self.token = token
        started = now
    }

    /// The size both ends take, if it is worth probing: nil when the peer did
    /// not advertise larger packets or advertised too little.
    static func size(remoteAdvertised: Int?) -> Int? {
        guard let remoteAdvertised else { return nil }
        let size = min(remoteAdvertised, largest)
        return size >= smallest ? size : nil
    }

    /// What to do at `now`.
    mutating func tick(now: ContinuousClock.Instant) -> Step {
        if let result { return .done(result) }
        let elapsed = now - started
        if elapsed >= Self.giveUpAfter {
            result = .some(nil)
            return .done(nil)
        }
        if sent < Self.retries.count, elapsed >= Self.retries[sent] {
            sent += 1
            return .send(Self.encode(.probe(token: token, size: size)), next: nextWake)
        }
        return .wait(until: nextWake)
    }

    /// The next probe's time, or the time to give up once all are sent.
    private var nextWake: ContinuousClock.Instant {
        started + (sent < Self.retries.count ? Self.retries[sent] : Self.giveUpAfter)
    }

    /// An acknowledgement arrived; true if it settles the probe.
    mutating func acknowledged(token: UInt32, size: Int) -> Bool {
        guard result == nil, token == self.token, size == self.size else { return false }
        result = .some(size)
        return true
    }
}
