import CarrierSessions
import FileSafety
import Foundation
import RtcCalls
import RtcFileTransfer
import RtcPeer
import TestSupport

/// Two session managers joined by in-memory signaling, with real peer
/// connections on 127.0.0.1, and a session from Alice to Bob.
struct SessionPair {
    static let loopback = PeerConfiguration(localAddresses: ["127.0.0.1"])
    let alice: SessionManager
    let bob: SessionManager

    init(
        alice aliceConfiguration: SessionManager.Configuration = .init(peer: SessionPair.loopback),
        bob bobConfiguration: SessionManager.Configuration = .init(peer: SessionPair.loopback)
    ) async {
        let (aliceSignals, bobSignals) = InMemorySignaling.pair("alice", "bob")
        alice = SessionManager(provider: aliceSignals, configuration: aliceConfiguration)
        bob = SessionManager(provider: bobSignals, configuration: bobConfiguration)
        await alice.start()
        await bob.start()
    }

    /// Alice's session to Bob and Bob's side of it.
    func connect() async throws -> (alice: Session, bob: Session) {
        let incoming = bob.incomingSessions
        let session = try await alice.openSession(to: "bob")
        let other = try requireValue(await incoming.first(within: .seconds(10)) { $0 })
        return (session, other)
    }

    /// A session and one stream Alice opens on it, with Bob's side of both.
    func stream(_ options: SessionStream.Options) async throws -> (
        alice: Session, bob: Session, mine: SessionStream, theirs: SessionStream
    ) {
        let (alice, bob) = try await connect()
        let offered = bob.incomingStreams
        let mine = try await alice.openStream(options)
        let theirs = try requireValue(await offered.first(within: .seconds(5)) { $0 }, "Bob's stream")
        return (alice, bob, mine, theirs)
    }

    func stop() async {
        await alice.stop()
        await bob.stop()
    }
}

struct Missing: Error, CustomStringConvertible {
    let description: String
}

/// The value, or a test failure that says what was missing.
func requireValue<T>(_ value: T?, _ what: String = "a value within the time allowed") throws -> T {
    guard let value else { throw Missing(description: "missing: \(what)") }
    return value
}

func randomBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var generator = SplitMix(seed: seed)
    var bytes = [UInt8](repeating: 0, count: count)
    var index = 0
    while index < count {
        var word = generator.next()
        for _ in 0..<8 where index < count {
            bytes[index] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            index += 1
        }
    }
    return bytes
}

/// Everything a channel delivers until its end of data.
func readAll(_ channel: StreamChannel) async throws -> [UInt8] {
    var all: [UInt8] = []
    while let bytes = try await channel.read() { all += bytes }
    return all
}

func sha256Hex(_ bytes: [UInt8]) -> String {
    let hash = Sha256()
    hash.update(bytes)
    return Sha256.hex(hash.finish())
}
