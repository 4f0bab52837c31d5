import CToxcore

/// Two loopback-only nodes tell each other where their toxcore answers when
/// a file waits for a new link between them, so neither drops the other's
/// direct packets while its DHT is still looking for the friend; and the file
/// waits until the link is a second old (`NewLinkWarmUp` says why).
///
/// toxcore (0.2.18) moves a link to UDP on the side whose DHT finds the
/// friend's address first (`friend_connection.c`, `dht_ip_callback`), and
/// accepts UDP only from an address its own DHT found (`net_crypto.c`,
/// `udp_handle_packet`). Each side sends its DHT key and UDP port
/// (`ExtraPacket.dhtNode`); the other asks that node on 127.0.0.1 for nodes,
/// and the answer is where its DHT meets the friend (`DHT.c`, `addto_lists`).
/// Only between nodes on 127.0.0.1 alone (`CarrierOptions.loopbackOnly`):
/// elsewhere we do not know the friend's address, which is the DHT's work.
extension Carrier {
    /// A friend's link went up or down (on a loopback-only node).
    func newLinkChanged(_ friend: UserId, up: Bool) {
        guard options.loopbackOnly else { return }
        newLinks.link(friend, up: up, now: clock.now)
    }

    /// A friend's DHT key and UDP port. Ignored unless this node runs on
    /// 127.0.0.1 alone (the only address it would ask).
    func handleDhtHint(key: [UInt8], port: UInt16, from friend: UserId) {
        guard options.loopbackOnly else { return drop(from: friend, "DHT hint on a node not on 127.0.0.1 alone") }
        let actions = newLinks.hint(from: friend)
        if actions.contains(.askFriendsNode) {
            counters.dhtHints += 1
            key.withUnsafeBufferPointer { _ = tox_bootstrap(tox, "127.0.0.1", port, $0.baseAddress, nil) }
        }
        perform(actions, for: friend)
    }

    /// Starts the files of links that just became old enough.
    func startFilesOnSettledLinks(now: ContinuousClock.Instant) {
        guard options.loopbackOnly else { return }
        for friend in newLinks.due(now: now) { offerWaitingFiles(to: friend) }
    }

    /// Whether files to a friend may be offered now (always, off loopback);
    /// if not, the friend hears where our node is.
    func warmedUpForFiles(_ friend: UserId) -> Bool {
        guard options.loopbackOnly, !newLinks.filesMayStart(friend, now: clock.now) else { return true }
        perform(newLinks.fileWaits(for: friend), for: friend)
        return false
    }

    private func perform(_ actions: [NewLinkWarmUp.Action], for friend: UserId) {
        for action in actions where action == .sendHint {
            guard let number = friends[friend]?.number, let port = udpPort() else { continue }
            do { try enqueue(extra: .dhtNode(key: dhtKey(), port: port), to: number, friend: friend) } catch {
                Self.log.debug("no DHT hint to \(friend): \(error)")
            }
        }
    }
}
