import Foundation

/// A userspace UDP relay between two peers on 127.0.0.1 that plays the
/// network between them: it can black out, lose, delay and reorder packets,
/// change a side's outward port as a NAT that rebinds would, drop
/// datagrams above a size, and squeeze traffic through a bottleneck.
///
/// Each side has a *mapping*, a relay socket that stands for it: what A
/// sends to B's mapping leaves from A's mapping towards B's real address, so
/// B sees A at A's mapping and never at A's own port. Tests make the peers
/// use the mappings by passing every candidate through `rewrite(_:from:)`
/// (or a description through `rewriteDescription(_:from:)`).
///
/// One thread polls the two sockets and releases delayed packets; the
/// settings may be changed from any thread.
public final class UdpRelay: @unchecked Sendable {
    public enum Side: Int, Sendable, CaseIterable {
        case a = 0
        case b = 1
        var other: Side { self == .a ? .b : .a }
    }

    public struct Counts: Sendable, Equatable {
        public var forwarded = 0
        public var dropped = 0
    }

    private let lock = NSLock()
    /// The relay socket standing for each side (guarded by `lock`).
    private var mappings: [Int32] = [-1, -1]
    /// Each side's real port on 127.0.0.1, learned from its candidates and its packets.
    private var realPorts: [UInt16?] = [nil, nil]
    private var blackoutUntil: ContinuousClock.Instant?
    private var lossRate = 0.0
    private var largestDatagram = Int.max
    private var delay: (base: Double, jitter: Double) = (0, 0)
    /// Per direction (by sending side): when the bottleneck's link is free again.
    private var bottleneck: (bitsPerSecond: Double, queue: Duration)?
    private var linkFreeAt: [ContinuousClock.Instant] = [.now, .now]
    private var delayed: [(due: ContinuousClock.Instant, from: Side, bytes: [UInt8])] = []
    private var counts = Counts()
    private var stopped = false
    private var retired: [Int32] = []
    private let wake: (read: Int32, write: Int32)
    private var thread: Thread?
    private var generator = SystemRandomNumberGenerator()

    public init() throws {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw RelayError("pipe: errno \(errno)") }
        wake = (pipeEnds[0], pipeEnds[1])
        for side in Side.allCases { mappings[side.rawValue] = try Self.openSocket() }
        let thread = Thread { [weak self] in self?.run() }
        thread.name = "udp-relay"
        self.thread = thread
        thread.start()
    }

    deinit { stop() }

    public struct RelayError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The port that stands for `side` (the other side sends there).
    public func mappedPort(of side: Side) -> UInt16 {
        lock.withLock { Self.port(of: mappings[side.rawValue]) }
    }

    /// A candidate line (`candidate:...`, with or without `a=`) from `side`,
    /// made to point at the relay: its 127.0.0.1 port is noted as the side's
    /// real port and replaced with the side's mapping. Other lines pass unchanged.
    public func rewrite(_ line: String, from side: Side) -> String {
        var fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard fields.count > 7, fields[2].lowercased() == "udp", fields[4] == "127.0.0.1",
            let port = UInt16(fields[5])
        else { return line }
        fields[5] = String(
            lock.withLock {
                realPorts[side.rawValue] = port
                return Self.port(of: mappings[side.rawValue])
            })
        return fields.joined(separator: " ")
    }

    /// A description from `side` with each of its candidate lines rewritten.
    public func rewriteDescription(_ sdp: String, from side: Side) -> String {
        sdp.components(separatedBy: "\r\n").map { line in
            line.hasPrefix("a=candidate:") ? rewrite(line, from: side) : line
        }.joined(separator: "\r\n")
    }

    /// Drops every packet for `seconds` (both ways), starting now.
    public func blackout(for seconds: Double) {
        lock.withLock { blackoutUntil = .now + .milliseconds(Int64(seconds * 1000)) }
    }

    /// Drops this share of packets (0...1), at random, both ways.
    public func setLoss(_ rate: Double) { lock.withLock { lossRate = rate } }

    /// Datagrams larger than `bytes` are dropped, as a link with that MTU (or a
    /// relay with a buffer that small) would.
    public func setLargestDatagram(_ bytes: Int) { lock.withLock { largestDatagram = bytes } }

    /// Holds each packet `milliseconds` ± `jitter` (uniform), which reorders them when the jitter is wide.
    public func setDelay(milliseconds: Double, jitter: Double = 0) {
        lock.withLock { delay = (milliseconds / 1000, jitter / 1000) }
    }

    /// Each direction becomes a link of `bitsPerSecond` behind a drop-tail queue
    /// of `queueMilliseconds` (a packet that would wait longer is dropped), as a
    /// slow uplink with a router's buffer is; nil lifts it. Delay adds after it.
    public func setBottleneck(bitsPerSecond: Double?, queueMilliseconds: Double = 200) {
        lock.withLock {
            bottleneck = bitsPerSecond.map { ($0, .microseconds(Int64(queueMilliseconds * 1000))) }
            linkFreeAt = [.now, .now]
        }
    }

    /// The NAT in front of `side` takes a new outward port: from now on the
    /// other side sees it at a new address, and what it sends to the old one is lost.
    public func rebind(_ side: Side) throws {
        let fresh = try Self.openSocket()
        lock.withLock {
            retired.append(mappings[side.rawValue])
            mappings[side.rawValue] = fresh
        }
        poke()
    }

    public var currentCounts: Counts { lock.withLock { counts } }

    public func stop() {
        let wasStopped = lock.withLock {
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        poke()
    }

    private func poke() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
    }

    // MARK: The relay thread

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let (sockets, timeout, isStopped) = lock.withLock { () -> ([Int32], Int32, Bool) in
                for fd in retired { close(fd) }
                retired = []
                let next = delayed.map(\.due).min()
                let wait = next.map { max(0, Int32((($0 - .now).inSeconds * 1000).rounded(.up))) } ?? 100
                return (mappings, min(wait, 100), stopped)
            }
            if isStopped { break }
            var polls = (sockets + [wake.read]).map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            _ = poll(&polls, nfds_t(polls.count), timeout)
            if polls[2].revents != 0 { _ = read(wake.read, &buffer, buffer.count) }
            for side in Side.allCases where polls[side.rawValue].revents & Int16(POLLIN) != 0 {
                var source = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = withUnsafeMutablePointer(to: &source) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        recvfrom(sockets[side.rawValue], &buffer, buffer.count, 0, $0, &length)
                    }
                }
                guard count > 0 else { continue }
                // A packet at `side`'s mapping comes from the other side, for `side`.
                accept(Array(buffer[0..<count]), from: side.other, sourcePort: UInt16(bigEndian: source.sin_port))
            }
            releaseDue()
        }
        lock.withLock {
            for fd in mappings + retired { close(fd) }
            retired = []
        }
        close(wake.read)
        close(wake.write)
    }

    private func accept(_ bytes: [UInt8], from side: Side, sourcePort: UInt16) {
        let due: ContinuousClock.Instant? = lock.withLock {
            realPorts[side.rawValue] = sourcePort
            if let blackoutUntil, ContinuousClock.now < blackoutUntil {
                counts.dropped += 1
                return nil
            }
            if bytes.count > largestDatagram {
                counts.dropped += 1
                return nil
            }
            if lossRate > 0, Double.random(in: 0..<1, using: &generator) < lossRate {
                counts.dropped += 1
                return nil
            }
            var leaves = ContinuousClock.now
            if let bottleneck {
                // A fluid FIFO: the packet starts when the link is free, and is dropped if that is too far off.
                let start = max(leaves, linkFreeAt[side.rawValue])
                guard start - leaves <= bottleneck.queue else {
                    counts.dropped += 1
                    return nil
                }
                leaves = start + .microseconds(Int64(Double(bytes.count * 8) / bottleneck.bitsPerSecond * 1e6))
                linkFreeAt[side.rawValue] = leaves
            } else if delay.base <= 0 && delay.jitter <= 0 {
                return .now
            }
            let seconds = max(0, delay.base + Double.random(in: -delay.jitter...delay.jitter, using: &generator))
            let due = leaves + .microseconds(Int64(seconds * 1e6))
            delayed.append((due, side, bytes))
            return nil
        }
        if due != nil { forward(bytes, from: side) }
    }

    private func releaseDue() {
        let due = lock.withLock { () -> [(from: Side, bytes: [UInt8])] in
            let now = ContinuousClock.now
            let ready = delayed.filter { $0.due <= now }.sorted { $0.due < $1.due }
            delayed.removeAll { $0.due <= now }
            return ready.map { ($0.from, $0.bytes) }
        }
        for packet in due { forward(packet.bytes, from: packet.from) }
    }

    /// Sends what `side` sent from `side`'s mapping to the other side's real port.
    private func forward(_ bytes: [UInt8], from side: Side) {
        let (socket, port) = lock.withLock { (mappings[side.rawValue], realPorts[side.other.rawValue]) }
        guard let port else { return }
        var address = FreePort.loopback(port: port)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(socket, bytes, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        lock.withLock {
            if sent == bytes.count { counts.forwarded += 1 } else { counts.dropped += 1 }
        }
    }

    // MARK: Sockets

    private static func openSocket() throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw RelayError("socket: errno \(errno)") }
        var address = FreePort.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            close(fd)
            throw RelayError("bind: errno \(errno)")
        }
        var size: Int32 = 4 << 20
        for option in [SO_RCVBUF, SO_SNDBUF] {
            _ = setsockopt(fd, SOL_SOCKET, option, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        return fd
    }

    private static func port(of fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }
}
