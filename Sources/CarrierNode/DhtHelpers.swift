import CToxcore

/// Extra DHT nodes for a private network, run beside its bootstrap node
/// (`carrier node`): they serve the DHT and the onion and nothing else (no
/// identity worth keeping, no friends, no callbacks).
///
/// Why a small network needs them: toxcore counts a node online only while
/// at least half of the nodes it announces itself to (up to 12) answer, and
/// once it has met 12 nodes it needs 6 alive (`onion_isconnected` in
/// toxcore's `onion_client.c`). While it counts itself offline it stops
/// searching for its friends and stops telling them where it is. On a network
/// of one bootstrap node, a bot and callers that are each a new process, the
/// bot met 12 nodes after a dozen calls and went off the network once the dead
/// ones dropped out of its list, about a minute later. These nodes keep enough
/// alive; they also make most onion paths go through live nodes.
///
/// One task iterates all of them on the actor at toxcore's own interval, which
/// costs far less than a `Carrier` each; `stop` ends that task before it kills
/// the instances, so no toxcore call touches a killed one.
public actor DhtHelpers {
    private var toxes: [OpaquePointer] = []
    private var loop: Task<Void, Never>?

    /// `count` new DHT nodes on random ports, bootstrapped to `nodes`.
    /// `loopbackOnly` turns local discovery off, as for a node on 127.0.0.1.
    public init(count: Int, bootstrap nodes: [BootstrapNode], loopbackOnly: Bool, carrierFraming: Bool = true)
        throws(CarrierError)
    {
        var options = CarrierOptions(dataDirectory: nil, bootstrapNodes: nodes)
        options.carrierFraming = carrierFraming
        options.loopbackOnly = loopbackOnly
        for _ in 0..<count {
            let tox: OpaquePointer
            do { tox = try Carrier.makeTox(options: options, savedata: nil) } catch {
                toxes.forEach { tox_kill($0) }
                throw error
            }
            for node in nodes {
                node.publicKey.withUnsafeBufferPointer {
                    _ = tox_bootstrap(tox, node.host, node.port, $0.baseAddress, nil)
                }
            }
            toxes.append(tox)
        }
    }

    /// Starts iterating them.
    public func start() {
        guard loop == nil else { return }
        loop = Task { await self.run() }
    }

    private func run() async {
        while !Task.isCancelled {
            var interval: UInt32 = 50
            for tox in toxes {
                tox_iterate(tox, nil)
                interval = min(interval, tox_iteration_interval(tox))
            }
            try? await Task.sleep(for: .milliseconds(Int(max(interval, 1))))
        }
    }

    /// Stops the loop, then kills every instance.
    public func stop() async {
        loop?.cancel()
        await loop?.value
        loop = nil
        toxes.forEach { tox_kill($0) }
        toxes = []
    }
}
