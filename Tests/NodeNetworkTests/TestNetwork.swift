import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// One local toxcore network shared by every test in this target: toxcore
/// needs 8-10 s to join a fresh network, so it is started once. A bootstrap
/// node (also a TCP relay, which is what reports "connected" on loopback) and
/// three peers on 127.0.0.1; Alice is friends with Bob and with Carol, who are
/// not friends with each other.
struct TestNetwork: Sendable {
    let bootstrap: Carrier
    let alice: Carrier
    let bob: Carrier
    let carol: Carrier
    let entry: BootstrapNode
    let root: String

    static func shared() async throws -> TestNetwork { try await Holder.instance.network() }

    private actor Holder {
        static let instance = Holder()
        private var starting: Task<TestNetwork, any Error>?

        func network() async throws -> TestNetwork {
            if let starting { return try await starting.value }
            let task = Task { try await TestNetwork.start() }
            starting = task
            return try await task.value
        }
    }

    static func start() async throws -> TestNetwork {
        let root = NSTemporaryDirectory() + "carrier-net-\(getpid())-\(UUID().uuidString.prefix(8))"
        var bootstrapOptions = CarrierOptions()
        bootstrapOptions.loopbackOnly = true
        bootstrapOptions.tcpRelayPort = try FreePort.tcp()
        let bootstrap = try Carrier(options: bootstrapOptions)
        let entry = try #require(await bootstrap.bootstrapEntry())
        try await bootstrap.start()

        let alice = try peer("alice", root: root, entry: entry)
        let bob = try peer("bob", root: root, entry: entry)
        let carol = try peer("carol", root: root, entry: entry)
        for node in [alice, bob, carol] { try await node.start() }
        for node in [alice, bob, carol] {
            #expect(await node.waitUntilReady(timeout: .seconds(60)), "node did not join the local network")
        }
        try await befriend(alice, bob)
        try await befriend(alice, carol)
        return TestNetwork(bootstrap: bootstrap, alice: alice, bob: bob, carol: carol, entry: entry, root: root)
    }

    static func peer(
        _ name: String, root: String, entry: BootstrapNode, ports: ClosedRange<UInt16>? = nil,
        adjust: (inout CarrierOptions) -> Void = { _ in }
    ) throws -> Carrier {
        var options = CarrierOptions(dataDirectory: root + "/" + name, bootstrapNodes: [entry])
        options.loopbackOnly = true
        options.udpPorts = ports
        adjust(&options)
        return try Carrier(options: options)
    }

    /// `requester` adds `accepter` by address; `accepter` accepts the request
    /// when it arrives; returns when both see the link up.
    static func befriend(_ requester: Carrier, _ accepter: Carrier) async throws {
        let requests = await accepter.events()
        let requesterId = requester.userId
        try await requester.addFriend(address: await accepter.address().description, hello: "hello from a test")
        let hello = await requests.first(within: .seconds(90)) { event -> String? in
            if case .friendRequest(let from, _, _, let hello) = event, from == requesterId { return hello }
            return nil
        }
        #expect(hello == "hello from a test")
        try await accepter.acceptFriend(requesterId)
        #expect(await requester.waitUntilConnected(to: accepter.userId, timeout: .seconds(90)))
        #expect(await accepter.waitUntilConnected(to: requesterId, timeout: .seconds(90)))
    }
}

/// Random bytes from the kernel in one read (a byte at a time took seconds per 64 MB in debug builds).
func randomBytes(_ count: Int) -> [UInt8] {
    let urandom = FileHandle(forReadingAtPath: "/dev/urandom")
    defer { try? urandom?.close() }
    var bytes = [UInt8]()
    while bytes.count < count, let data = try? urandom?.read(upToCount: count - bytes.count), !data.isEmpty {
        bytes += data
    }
    return bytes
}
