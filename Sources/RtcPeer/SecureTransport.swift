import AsyncExtras
import CarrierLog
import Dispatch
import Foundation
import RtcDTLS
import RtcICE
import RtcRTP
import RtcSCTP
import RtcSRTP

/// The data path of one peer connection over one BUNDLEd ICE component:
/// ICE below; DTLS, SRTP and RTP/RTCP demultiplexed per RFC 7983; SCTP
/// over DTLS. Packets never wait for an actor: the receive path runs on the
/// ICE (GLib) thread, SCTP output on the SCTP queue, RTP sends on the
/// caller's thread, each behind the lock of the state it touches.
/// Incoming RTP goes to `onRtp` (on the ICE thread); control events,
/// RTCP among them, to `onEvent` (on whichever of those threads).
final class SecureTransport: @unchecked Sendable {
    enum Event: Sendable {
        case ice(IceEvent)
        case dtlsConnected(SrtpProfile?)
        case dtlsFailed(String)
        case dtlsClosed
        case sctp(SctpAssociation.Event)
        /// A path MTU probe is settled: SCTP packets of this size (nil: the default).
        case pathProbed(Int?)
        case rtcp([RtcpPacket])
    }

    struct Counters: Sendable {
        var bytesSent: UInt64 = 0
        var bytesReceived: UInt64 = 0
        var packetsSent: UInt64 = 0
        var packetsReceived: UInt64 = 0
        var srtpDropped: UInt64 = 0
        /// Datagrams of no protocol we speak (RFC 7983), or DTLS records the session refused.
        var strayDropped: UInt64 = 0
        var simulatedDrops: UInt64 = 0
        var simulatedPaddingDrops: UInt64 = 0
        /// Authenticated RTP/RTCP that did not parse: the peer's bug, not an attack.
        var malformedDropped: UInt64 = 0
        /// Records or packets we could not encrypt (DTLS closed, SRTP refused), so not sent.
        var sendFailures: UInt64 = 0
        var lastReceived: ContinuousClock.Instant?
    }

    let ice: IceAgent
    private let onEvent: @Sendable (Event) -> Void
    private let onRtp: @Sendable (RtpPacket) -> Void
    private let dtlsLock = NSLock()
    private var dtls: DtlsTransport?
    private var dtlsTimer: DispatchSourceTimer?
    private let srtpLock = NSLock()
    /// Guarded by `srtpLock`: the keys DTLS exported, until the first RTP or
    /// RTCP packet needs the sessions made from them (`srtpSessions`).
    private var srtpKeys: (profile: SrtpProfile, keys: SrtpKeys)?
    private var srtpOut: SrtpSession?
    private var srtpIn: SrtpSession?
    private let countersLock = NSLock()
    private var counters = Counters()
    private let sctpLock = NSLock()
    private var sctp: SctpAssociation?

    /// Share of incoming SRTP (not SRTCP) packets dropped on purpose (PeerConfiguration.simulatedRtpLoss).
    private let simulatedLoss: Double
    /// Tests observe the datagrams sent (set before connecting; called on the sending thread).
    var sentDatagramTap: (@Sendable ([UInt8]) -> Void)?

    init(
        ice configuration: IceConfiguration, simulatedLoss: Double = 0,
        onRtp: @escaping @Sendable (RtpPacket) -> Void, onEvent: @escaping @Sendable (Event) -> Void
    ) throws {
        self.onEvent = onEvent
        self.onRtp = onRtp
        self.simulatedLoss = simulatedLoss
        let relay = WeakReference<SecureTransport>()
        ice = try IceAgent(
            configuration: configuration, onEvent: { relay.value?.iceEvent($0) },
            onPacket: { relay.value?.receive($0) })
        relay.value = self
    }

    /// Breaks the init-time cycle between the ICE callbacks and this transport.
    /// On the ICE thread. Once ICE has a pair, held handshake datagrams leave
    /// and a DTLS client says hello from here, not after the event's trip
    /// through the peer connection's actor (0.1-0.4 ms of every setup, traced).
    private func iceEvent(_ event: IceEvent) {
        if case .stateChanged(let state) = event, state == .connected || state == .completed {
            dtlsLock.withLock { iceReady = true }
            sendHeldFlight()
            startDtlsHandshake()
        }
        onEvent(.ice(event))
    }

    /// Guarded by `dtlsLock`: ICE has had a pair to send on.
    private var iceReady = false

    var stats: Counters { countersLock.withLock { counters } }

    // MARK: DTLS

    /// Datagrams of a DTLS handshake that began before our side was ready (bounded).
    private var earlyDtls: [[UInt8]] = []

    /// Sets DTLS up once negotiation fixed the role and the peer's fingerprints.
    /// A server is ready at once; a client says hello now if ICE is connected
    /// already, or as soon as it connects.
    func prepareDtls(
        role: DtlsTransport.Role, context: DtlsContext, remoteFingerprints: [DtlsTransport.RemoteFingerprint]
    ) throws {
        let transport = try DtlsTransport(role: role, context: context, remoteFingerprints: remoteFingerprints)
        let early: [[UInt8]] = dtlsLock.withLock {
            dtls = transport
            defer { earlyDtls = [] }
            return earlyDtls
        }
        for datagram in early { receiveDtls(datagram) }
        startDtlsHandshake()
    }

    /// Sends the ClientHello (client role) once DTLS is set up and ICE has a
    /// pair to send on, whichever comes last; does nothing after that.
    private func startDtlsHandshake() {
        let hello: [[UInt8]]? = dtlsLock.withLock {
            guard iceReady, let dtls, dtls.role == .client, dtls.state == .new else { return nil }
            return dtls.start()
        }
        guard let hello else { return }
        sendHandshake(hello)
        scheduleDtlsTimer()
    }

    /// Passes an event from a layer above (SCTP) through the same handler, in order.
    func relay(_ event: Event) { onEvent(event) }

    /// Attaches the SCTP association whose packets ride on DTLS.
    func attach(_ association: SctpAssociation) { sctpLock.withLock { sctp = association } }

    /// SCTP output (on the SCTP queue): encrypt and send.
    func sendSctp(_ packet: [UInt8]) { sendRecord(packet) }

    private func scheduleDtlsTimer() {
        dtlsLock.withLock {
            dtlsTimer?.cancel()
            dtlsTimer = nil
            guard let dtls, let wait = dtls.timeoutInterval() else { return }
            let timer = DispatchSource.makeTimerSource(queue: .global())
            timer.schedule(deadline: .now() + wait.dispatchInterval)
            timer.setEventHandler { [weak self] in
                guard let self else { return }
                let datagrams = self.dtlsLock.withLock { self.dtls?.handleTimeout() ?? [] }
                self.sendHandshake(datagrams)
                self.scheduleDtlsTimer()
            }
            timer.resume()
            dtlsTimer = timer
        }
    }

    // MARK: Receive (ICE thread)

    func receive(_ datagram: [UInt8]) {
        countersLock.withLock {
            counters.bytesReceived += UInt64(datagram.count)
            counters.packetsReceived += 1
            counters.lastReceived = .now
        }
        switch PacketClass(datagram) {
        case .dtls: receiveDtls(datagram)
        case .rtp: receiveSrtp(datagram)
        case .stun, .unknown:
            // libnice consumes STUN itself: what gets here is no protocol of ours.
            countersLock.withLock { counters.strayDropped += 1 }
        }
    }

    private func receiveDtls(_ datagram: [UInt8]) {
        let (replies, events, keys) = dtlsLock.withLock { () -> ([[UInt8]], [DtlsTransport.Event], SrtpKeys?) in
            guard let dtls else {
                if earlyDtls.count < 16 { earlyDtls.append(datagram) }
                return ([], [], nil)
            }
            let wasConnected = dtls.state == .connected
            let (replies, events) = dtls.receive(datagram)
            // Once connected, a datagram that yields no data, no event and no reply was
            // refused or ignored by OpenSSL (forged, stale or garbled records).
            if wasConnected, replies.isEmpty, events.isEmpty { countersLock.withLock { counters.strayDropped += 1 } }
            var keys: SrtpKeys?
            for case .connected(_, let exported?) in events { keys = exported }
            return (replies, events, keys)
        }
        sendHandshake(replies)
        for event in events {
            switch event {
            case .connected(let profile, _):
                if let profile, let keys { installSrtp(profile: profile, keys: keys) }
                dtlsLock.withLock {
                    dtlsTimer?.cancel()
                    dtlsTimer = nil
                }
                onEvent(.dtlsConnected(profile))
            case .data(let packet):
                if PathMtuProbe.isProbeMessage(packet) {
                    receiveProbeMessage(packet)
                } else {
                    sctpLock.withLock { sctp }?.receive(packet)
                }
            case .closed:
                onEvent(.dtlsClosed)
            case .failed(let error):
                onEvent(.dtlsFailed(error.description))
            }
        }
        if events.isEmpty { scheduleDtlsTimer() }
    }

    /// Keeps the keys; the sessions are made when a packet first needs them,
    /// so that the handshake's end does not wait for libsrtp's one-time start
    /// (~7 ms of CPU per process), and a data-only connection never pays for it.
    private func installSrtp(profile: SrtpProfile, keys: SrtpKeys) {
        srtpLock.withLock { srtpKeys = (profile, keys) }
    }

    /// Under `srtpLock`: the sessions, made from the exported keys on first use.
    private func srtpSessions() -> (outbound: SrtpSession?, inbound: SrtpSession?) {
        if let (profile, keys) = srtpKeys {
            srtpKeys = nil
            do {
                srtpOut = try SrtpSession(
                    profile: profile, key: keys.localKey, salt: keys.localSalt, direction: .outbound)
                srtpIn = try SrtpSession(
                    profile: profile, key: keys.remoteKey, salt: keys.remoteSalt, direction: .inbound)
            } catch {
                // No media can flow on this connection: say why, once.
                Logger("srtp").error("cannot make the SRTP sessions (\(profile)): \(error)")
            }
        }
        return (srtpOut, srtpIn)
    }

    private func receiveSrtp(_ datagram: [UInt8]) {
        let isRtcp = RtcpPacket.isRtcp(datagram)
        if !isRtcp, simulatedLoss > 0, Double.random(in: 0..<1) < simulatedLoss {
            // The RTP header's padding bit is in the clear (SRTP encrypts only the payload).
            let padding = datagram.first.map { $0 & 0x20 != 0 } ?? false
            countersLock.withLock {
                counters.simulatedDrops += 1
                if padding { counters.simulatedPaddingDrops += 1 }
            }
            return
        }
        let plain: [UInt8]? = srtpLock.withLock {
            guard let srtpIn = srtpSessions().inbound else { return nil }
            return isRtcp ? try? srtpIn.unprotectRtcp(datagram) : try? srtpIn.unprotectRtp(datagram)
        }
        guard let plain else {
            countersLock.withLock { counters.srtpDropped += 1 }
            return
        }
        // Authentic but unparsable: counted, never fatal (one bad packet loses only itself).
        if isRtcp {
            guard let packets = try? RtcpPacket.parseCompound(plain) else { return countMalformed() }
            onEvent(.rtcp(packets))
        } else {
            guard let packet = try? RtpPacket(parsing: plain) else { return countMalformed() }
            onRtp(packet)
        }
    }

    private func countMalformed() {
        countersLock.withLock { counters.malformedDropped += 1 }
    }

    // MARK: Path MTU probe (PathMtuProbe)

    /// Guarded by `probeLock`: the probe under way.
    private var probe: PathMtuProbe?
    private let probeLock = NSLock()

    /// Probes the path for SCTP packets of `size` bytes; `.pathProbed` follows
    /// (with the size, or nil if no acknowledgement came in time).
    func probePath(size: Int) {
        probeLock.withLock { probe = PathMtuProbe(size: size, now: .now) }
        stepProbe()
    }

    private func stepProbe() {
        let step: PathMtuProbe.Step? = probeLock.withLock {
            guard probe != nil else { return nil }
            let step = probe?.tick(now: .now)
            if case .done = step { probe = nil }
            return step
        }
        switch step {
        case .send(let record, let next)?:
            sendRecord(record)
            wakeProbe(at: next)
        case .wait(let next)?:
            wakeProbe(at: next)
        case .done(let size)?:
            onEvent(.pathProbed(size))
        case nil:
            break
        }
    }

    private func wakeProbe(at instant: ContinuousClock.Instant) {
        let wait = max(ContinuousClock.now.duration(to: instant), .zero)
        DispatchQueue.global().asyncAfter(deadline: .now() + wait.dispatchInterval) { [weak self] in
            self?.stepProbe()
        }
    }

    /// On the ICE thread: a probe is answered at once (if it came whole); an
    /// acknowledgement settles ours.
    private func receiveProbeMessage(_ record: [UInt8]) {
        switch PathMtuProbe.decode(record) {
        case .probe(let token, let size)?:
            sendRecord(PathMtuProbe.encode(.acknowledgement(token: token, size: size)))
        case .acknowledgement(let token, let size)?:
            let settled = probeLock.withLock {
                guard probe?.acknowledged(token: token, size: size) == true else { return false }
                probe = nil
                return true
            }
            if settled { onEvent(.pathProbed(size)) }
        case nil:
            countersLock.withLock { counters.strayDropped += 1 }
        }
    }

    /// One DTLS record of application data.
    private func sendRecord(_ plaintext: [UInt8]) {
        let datagrams: [[UInt8]]? = dtlsLock.withLock { try? dtls?.send(plaintext) }
        guard let datagrams else { return countSendFailure() }  // DTLS closed or not up: SCTP retransmits or gives up
        sendAll(datagrams)
    }

    // MARK: Send

    /// Protects and sends an RTP packet; false before SRTP is ready.
    @discardableResult
    func sendRtp(_ packet: RtpPacket) -> Bool {
        guard let protected = protect({ try $0.protectRtp(packet.serialized()) }) else { return false }
        sendAll([protected])
        return true
    }

    @discardableResult
    func sendRtcp(_ packets: [RtcpPacket]) -> Bool {
        let compound = packets.flatMap { $0.serialized() }
        guard let protected = protect({ try $0.protectRtcp(compound) }) else { return false }
        sendAll([protected])
        return true
    }

    /// What `work` made of a packet with the outbound SRTP session; nil
    /// before SRTP is ready, or (counted) when libsrtp refused it.
    private func protect(_ work: (SrtpSession) throws -> [UInt8]) -> [UInt8]? {
        let result: Result<[UInt8], any Error>? = srtpLock.withLock {
            srtpSessions().outbound.map { outbound in Result { try work(outbound) } }
        }
        switch result {
        case nil: return nil
        case .failure:
            countSendFailure()
            return nil
        case .success(let protected): return protected
        }
    }

    private func countSendFailure() {
        countersLock.withLock { counters.sendFailures += 1 }
    }

    /// DTLS handshake flights: one that cannot leave yet (ICE has no selected
    /// pair on this side, a moment after the peer's has) is kept and sent when
    /// ICE connects, instead of waiting out a retransmission timer.
    private func sendHandshake(_ datagrams: [[UInt8]]) {
        var unsent: [[UInt8]] = []
        for datagram in datagrams {
            if ice.send(datagram) {
                count(datagram)
            } else {
                unsent.append(datagram)
            }
        }
        guard !unsent.isEmpty else { return }
        dtlsLock.withLock { heldFlight = Array((heldFlight + unsent).suffix(16)) }
    }

    /// ICE connected: the held handshake datagrams leave now.
    private func sendHeldFlight() {
        let held = dtlsLock.withLock {
            defer { heldFlight = [] }
            return heldFlight
        }
        if !held.isEmpty { sendHandshake(held) }
    }

    private var heldFlight: [[UInt8]] = []

    private func count(_ datagram: [UInt8]) {
        sentDatagramTap?(datagram)
        countersLock.withLock {
            counters.bytesSent += UInt64(datagram.count)
            counters.packetsSent += 1
        }
    }

    private func sendAll(_ datagrams: [[UInt8]]) {
        for datagram in datagrams where ice.send(datagram) { count(datagram) }
    }

    /// Closed: nothing will be sent or received again.
    var isClosed: Bool { dtlsLock.withLock { closed } }
    private var closed = false

    func close() {
        let goodbye: [[UInt8]] = dtlsLock.withLock {
            closed = true
            dtlsTimer?.cancel()
            dtlsTimer = nil
            return dtls?.close() ?? []
        }
        sendAll(goodbye)
        sctpLock.withLock { sctp }?.close()
        ice.close()
        // What a closed transport keeps would stay as long as its connection is
        // referenced (a call client keeps ended calls for their statistics):
        // the TLS session, the SRTP contexts, the SCTP association and held datagrams.
        dtlsLock.withLock {
            dtls = nil
            earlyDtls = []
            heldFlight = []
        }
        srtpLock.withLock {
            srtpOut = nil
            srtpIn = nil
            srtpKeys = nil
        }
        sctpLock.withLock { sctp = nil }
    }
}
