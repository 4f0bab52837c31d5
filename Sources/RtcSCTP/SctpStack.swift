import CUsrsctp
import Dispatch
import Foundation

/// usrsctp is process-wide: one stack, initialised once in no-threads mode,
/// with every usrsctp call made on one serial queue (`queue`). Its callbacks
/// (output, receive, send-space) run synchronously inside those calls, so
/// they run on `queue` too. A timer on the queue drives usrsctp's timers
/// while any association exists.
final class SctpStack: @unchecked Sendable {
    static let shared = SctpStack()

    let queue = DispatchQueue(label: "carrier.sctp", qos: .userInteractive)
    // Touched only on `queue`.
    private var associations: [UnsafeMutableRawPointer: SctpAssociation] = [:]
    private var timer: DispatchSourceTimer?
    private var lastTick = DispatchTime.now()
    /// When a packet last went in or out, and whether the timer runs at the idle pace.
    private var lastActivity = DispatchTime.now()
    private(set) var idle = false

    /// How often usrsctp's timers are driven while packets flow (retransmission
    /// and delayed-SACK timers want it fine), and after a second without any:
    /// an idle association (a call's data channel) needs only its heartbeats,
    /// and a 10 ms timer was a hundred wake-ups a second for nothing.
    static let busyInterval = DispatchTimeInterval.milliseconds(10)
    static let idleInterval = DispatchTimeInterval.milliseconds(250)

    private init() {
        let output: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?, Int, UInt8, UInt8) -> Int32 = {
            address, buffer, length, _, _ in
            guard let address, let buffer, length > 0 else { return 0 }
            var packet = Array(UnsafeRawBufferPointer(start: buffer, count: length))
            packet.withUnsafeMutableBytes { SctpChecksum.stamp($0) }
            SctpStack.shared.noteActivity()
            SctpStack.shared.associations[address]?.outbound(packet)
            return 0
        }
        usrsctp_init_nothreads(0, output, nil)
        // We stamp and check the CRC32C ourselves (SctpChecksum): much cheaper.
        usrsctp_enable_crc32c_offload()
        usrsctp_sysctl_set_sctp_ecn_enable(0)
        usrsctp_sysctl_set_sctp_delayed_sack_time_default(20)
        // Retransmission timeouts double up to this (RFC 4960's default is 60 s):
        // after an outage, or losses while ICE restarts, a transfer waited up to a
        // minute for its next retransmission although the path was back (seen as a
        // 50 s stall under 5% loss). 10 s bounds that wait; with the default 10
        // retransmissions an association still outlives a 30 s recovery window.
        usrsctp_sysctl_set_sctp_rto_max_default(10_000)
        // Large messages and round-trip time both want room: see field notes on buffers.
        usrsctp_sysctl_set_sctp_max_chunks_on_queue(8192)
        usrsctp_sysctl_set_sctp_sendspace(UInt32(SctpAssociation.socketBuffer))
        usrsctp_sysctl_set_sctp_recvspace(UInt32(SctpAssociation.socketBuffer))
    }

    /// On `queue`.
    func register(_ association: SctpAssociation, address: UnsafeMutableRawPointer) {
        dispatchPrecondition(condition: .onQueue(queue))
        associations[address] = association
        usrsctp_register_address(address)
        if timer == nil { startTimer() }
    }

    /// On `queue`.
    func deregister(address: UnsafeMutableRawPointer) {
        dispatchPrecondition(condition: .onQueue(queue))
        usrsctp_deregister_address(address)
        associations[address] = nil
        if associations.isEmpty {
            timer?.cancel()
            timer = nil
        }
    }

    /// On `queue`: a packet went in or out; the timer runs at the busy pace again.
    func noteActivity() {
        lastActivity = .now()
        if idle { pace(idle: false) }
    }

    /// On `queue`: the timer ticks at the busy or the idle pace from now on.
    private func pace(idle: Bool) {
        self.idle = idle
        let (interval, leeway) =
            idle ? (Self.idleInterval, DispatchTimeInterval.milliseconds(20)) : (Self.busyInterval, .milliseconds(2))
        timer?.schedule(deadline: .now() + interval, repeating: interval, leeway: leeway)
    }

    private func startTimer() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        self.timer = timer
        lastTick = .now()
        lastActivity = .now()
        pace(idle: false)
        timer.setEventHandler { [unowned self] in
            let now = DispatchTime.now()
            if !idle, now.uptimeNanoseconds - lastActivity.uptimeNanoseconds > 1_000_000_000 { pace(idle: true) }
            let elapsed = UInt32(min((now.uptimeNanoseconds - lastTick.uptimeNanoseconds) / 1_000_000, 1000))
            guard elapsed > 0 else { return }
            lastTick = now
            usrsctp_handle_timers(elapsed)
            for association in associations.values { association.drain() }
        }
        timer.resume()
    }
}
