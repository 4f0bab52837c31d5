// Port forwarding between two session managers in one process: Bob offers a
// small TCP service (it greets, and shouts back what it is sent) to his
// friends as "greeter"; Alice opens a session and a port-forwarding stream,
// and a local port of hers reaches Bob's service. Then a service Bob does not
// offer is refused, with his reason.
//
//   swift run port-forwarding
//
// On a Carrier node the managers come from `SessionManager.start(on: node)`
// (signals as invites to `friend:session`, friends only); here the signaling
// is in memory, and the connections are real (ICE, DTLS, SCTP on 127.0.0.1).
import CarrierSessions
import Foundation
import RtcCalls
import RtcPeer

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP socket on 127.0.0.1 (the sample's service and its client; POSIX, kept short).
func tcpSocket() -> Int32 { socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }

func loopback(port: UInt16) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

func withSockaddr<T>(_ address: inout sockaddr_in, _ body: (UnsafePointer<sockaddr>, socklen_t) -> T) -> T {
    withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
}

/// Reads until the peer closes its side.
func readAll(_ fd: Int32) -> String {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while case let count = read(fd, &buffer, buffer.count), count > 0 { bytes += buffer[0..<count] }
    return String(decoding: bytes, as: UTF8.self)
}

/// Bob's service: for each connection, a greeting, then what the client sent, in capitals.
func startGreeter() -> UInt16 {
    let listener = tcpSocket()
    var address = loopback(port: 0)
    _ = withSockaddr(&address) { bind(listener, $0, $1) }
    listen(listener, 16)
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
    }
    Thread.detachNewThread {
        while case let client = accept(listener, nil, nil), client >= 0 {
            let request = readAll(client)  // the client half-closes when it has said everything
            let reply = "hello from Bob's greeter; you said: \(request.uppercased())"
            _ = reply.withCString { write(client, $0, strlen($0)) }
            close(client)
        }
    }
    return UInt16(bigEndian: address.sin_port)
}

/// Alice's client: connects to the forwarded port, says something, half-closes, reads the reply.
func ask(port: UInt16, _ text: String) -> String {
    let fd = tcpSocket()
    defer { close(fd) }
    var address = loopback(port: port)
    guard withSockaddr(&address, { connect(fd, $0, $1) }) == 0 else { return "(cannot connect)" }
    _ = text.withCString { write(fd, $0, strlen($0)) }
    shutdown(fd, Int32(SHUT_WR))
    return readAll(fd)
}

let configuration = SessionManager.Configuration(peer: PeerConfiguration(localAddresses: ["127.0.0.1"]))
let (aliceSignals, bobSignals) = InMemorySignaling.pair("alice", "bob")
let alice = SessionManager(provider: aliceSignals, configuration: configuration)
let bob = SessionManager(provider: bobSignals, configuration: configuration)
await alice.start()
await bob.start()

// Bob offers the greeter to his friends (here: to Alice only).
let greeterPort = startGreeter()
await bob.services.add(.init(name: "greeter", host: "127.0.0.1", port: greeterPort, allowed: ["alice"]))
print("bob: offering greeter (127.0.0.1:\(greeterPort)) to alice")

do {
    let session = try await alice.openSession(to: "bob")
    let stream = try await session.openStream([.reliable, .portForwarding])
    let forwarding = try stream.openPortForwarding(service: "greeter")
    print("alice: 127.0.0.1:\(forwarding.port) reaches bob's greeter")

    // Each connection is its own channel; the TCP half-close crosses the session.
    // (The client blocks on its socket: it runs on a thread of its own, not the Swift pool.)
    let port = forwarding.port
    let reply = await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: ask(port: port, "a quiet hello")) }
    }
    print("alice: the greeter replied \"\(reply)\"")

    // A service Bob does not offer: the connection is reset, and Bob's reason comes back.
    let wrong = try stream.openPortForwarding(service: "mail")
    let wrongPort = wrong.port
    Thread.detachNewThread { _ = ask(port: wrongPort, "anyone?") }
    for await event in wrong.events {
        if case .refused(_, let reason) = event {
            print("alice: mail was refused: \(reason)")
            break
        }
    }
    forwarding.close()
    wrong.close()
    await session.close()
} catch {
    print("alice: \(error)")
    exit(1)
}
await alice.stop()
await bob.stop()
