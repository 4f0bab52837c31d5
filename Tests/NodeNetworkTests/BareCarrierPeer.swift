import CShimToxcore
import CToxcore
import CarrierNode
import Foundation

/// A toxcore node that behaves as the reference Carrier library does on the
/// wire, and nothing more: the Carrier framing, Carrier packets as friend
/// messages (NORMAL), user info as the status message, toxcore's read
/// receipts, no handler for lossless custom packets. The tests hand it the
/// reference library's own bytes (`packets.json` in CarrierWireTests) and
/// read what our node sends it.
///
/// Threads: its loop runs on a thread of its own (`start`); toxcore's
/// callbacks fire inside `tox_iterate` there. Every toxcore call and every
/// read of what the callbacks saw holds `lock`.
final class BareCarrierPeer: @unchecked Sendable {
    struct Seen {
        /// Friend messages received, in order.
        var messages: [[UInt8]] = []
        /// Lossless custom packets that reached its toxcore (Carrier has no
        /// handler for them: counted only to see them arrive).
        var customPackets: [[UInt8]] = []
        var friendConnected = false
        /// Its toxcore says it is on the network.
        var online = false
    }

    private let tox: OpaquePointer
    private let lock = NSLock()
    private let bootstrap: BootstrapNode
    private let neighbours: [BootstrapNode]
    private var seen = Seen()
    private var stopped = false

    /// `neighbours` are asked too, as DHT nodes: a node the test runs, whom
    /// the peer then finds without waiting on the onion's path building,
    /// which on CI's two busy cores took longer than the test's bounds.
    init(bootstrap: BootstrapNode, neighbours: [BootstrapNode] = [], statusMessage: [UInt8]) throws {
        var error = TOX_ERR_OPTIONS_NEW_OK
        guard let options = tox_options_new(&error) else { throw Failure("tox_options_new: \(error)") }
        defer { tox_options_free(options) }
        tox_options_set_ipv6_enabled(options, false)
        tox_options_set_local_discovery_enabled(options, false)
        // A port of its own, as our nodes take (`randomPortRange`): on toxcore's
        // default first port, which other nodes of the suite had just left, the
        // bootstrap node's table still named someone else there (CI: not online in 60 s).
        let start = UInt16.random(in: 34_445...35_444)
        tox_options_set_start_port(options, start)
        tox_options_set_end_port(options, start + 99)
        guard let system = cshim_carrier_system() else { throw Failure("no Carrier framing for this toxcore") }
        tox_options_set_operating_system(options, system)
        var newError = TOX_ERR_NEW_OK
        guard let tox = tox_new(options, &newError) else { throw Failure("tox_new: \(newError)") }
        self.tox = tox
        tox_self_set_status_message(tox, statusMessage, statusMessage.count, nil)
        self.bootstrap = bootstrap
        self.neighbours = neighbours
        askBootstrap()
        tox_callback_friend_message(tox) { _, _, type, data, length, user in
            guard type == TOX_MESSAGE_TYPE_NORMAL, let data, let peer = BareCarrierPeer.from(user) else { return }
            peer.seen.messages.append(Array(UnsafeBufferPointer(start: data, count: length)))
        }
        tox_callback_friend_lossless_packet(tox) { _, _, data, length, user in
            guard let data, let peer = BareCarrierPeer.from(user) else { return }
            peer.seen.customPackets.append(Array(UnsafeBufferPointer(start: data, count: length)))
        }
        tox_callback_self_connection_status(tox) { _, status, user in
            BareCarrierPeer.from(user)?.seen.online = status != TOX_CONNECTION_NONE
        }
        tox_callback_friend_connection_status(tox) { _, _, status, user in
            BareCarrierPeer.from(user)?.seen.friendConnected = status != TOX_CONNECTION_NONE
        }
    }

    deinit { tox_kill(tox) }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    private static func from(_ user: UnsafeMutableRawPointer?) -> BareCarrierPeer? {
        user.map { Unmanaged<BareCarrierPeer>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs toxcore's loop until `stop`, at toxcore's own interval, on a
    /// thread of its own: on the test pool's threads, busy with other suites
    /// on CI's two cores, it iterated too seldom to find our node in 90 s.
    /// While it is off the network it asks the bootstrap node again every
    /// 5 s, as a Carrier app and our node do: one answer lost on a busy
    /// machine left it alone for good (CI: not online in 60 s).
    func start() {
        let thread = Thread { [weak self] in
            var lastAsked = ContinuousClock.now
            while let self, !self.lock.withLock({ self.stopped }) {
                let interval = self.lock.withLock { () -> UInt32 in
                    tox_iterate(self.tox, Unmanaged.passUnretained(self).toOpaque())
                    if !self.seen.online, ContinuousClock.now - lastAsked > .seconds(5) {
                        lastAsked = .now
                        self.askBootstrap()
                    }
                    return tox_iteration_interval(self.tox)
                }
                usleep(interval * 1000)  // the peer's event loop
            }
        }
        thread.name = "bare-carrier-peer"
        thread.start()
    }

    /// Its bootstrap node, as a DHT node and a TCP relay (`lock` held, or before `start`).
    private func askBootstrap() {
        tox_bootstrap(tox, bootstrap.host, bootstrap.port, bootstrap.publicKey, nil)
        tox_add_tcp_relay(tox, bootstrap.host, bootstrap.port, bootstrap.publicKey, nil)
        for node in neighbours { tox_bootstrap(tox, node.host, node.port, node.publicKey, nil) }
    }

    /// Ends the loop (it exits within one interval).
    func stop() { lock.withLock { stopped = true } }

    /// What the callbacks saw so far.
    var state: Seen { lock.withLock { seen } }

    var userId: UserId? {
        var key = [UInt8](repeating: 0, count: 32)
        lock.withLock { tox_self_get_public_key(tox, &key) }
        return UserId(publicKey: key)
    }

    /// A friend request with `payload` as Carrier sends it (`friendreq`).
    func addFriend(_ address: CarrierAddress, payload: [UInt8]) throws {
        var error = TOX_ERR_FRIEND_ADD_OK
        _ = lock.withLock { tox_friend_add(tox, address.bytes, payload, payload.count, &error) }
        guard error == TOX_ERR_FRIEND_ADD_OK else { throw Failure("tox_friend_add: \(error)") }
    }

    /// One Carrier packet as one friend message to its first friend.
    func send(_ packet: [UInt8]) throws {
        var error = TOX_ERR_FRIEND_SEND_MESSAGE_OK
        _ = lock.withLock { tox_friend_send_message(tox, 0, TOX_MESSAGE_TYPE_NORMAL, packet, packet.count, &error) }
        guard error == TOX_ERR_FRIEND_SEND_MESSAGE_OK else { throw Failure("tox_friend_send_message: \(error)") }
    }
}
