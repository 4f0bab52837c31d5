import Foundation
import TestSupport
import Testing

@testable import CarrierNode

/// toxcore's "connected" is believed while other nodes are heard (over UDP
/// or a TCP relay); 60 s of hearing only itself makes the node count as off
/// the network, until it hears someone again.
@Suite struct IsolationCheckTests {
    let start = ContinuousClock.now

    func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int(seconds * 1000)) }

    @Test func aNodeThatHearsOthersIsNeverAlone() {
        var check = IsolationCheck()
        check.toxConnection(connected: true, now: at(0))
        for second in stride(from: 5.0, through: 600, by: 5) {
            check.heard(at: at(second - 2))
            let alone1 = check.isolated(now: at(second))
            #expect(!alone1)
        }
    }

    @Test func sixtySecondsOfSilenceIsAloneUntilSomeoneIsHeard() {
        var check = IsolationCheck()
        check.toxConnection(connected: true, now: at(0))
        check.heard(at: at(10))
        let alone2 = check.isolated(now: at(69.9))
        #expect(!alone2)
        let alone3 = check.isolated(now: at(70))
        #expect(alone3)
        // The same (old) instant again changes nothing.
        check.heard(at: at(10))
        let alone4 = check.isolated(now: at(71))
        #expect(alone4)
        // toxcore started afresh says "UDP" again at once, talking to itself: still alone.
        check.restarted(now: at(80))
        check.toxConnection(connected: true, now: at(85))
        let alone5 = check.isolated(now: at(86))
        #expect(alone5)
        // Another node answers: back.
        check.heard(at: at(90))
        let alone6 = check.isolated(now: at(90.5))
        #expect(!alone6)
        let alone7 = check.isolated(now: at(149))
        #expect(!alone7)
        let alone8 = check.isolated(now: at(150))
        #expect(alone8)
    }

    /// Off by toxcore's own word is off; silence counts only from when it says connected.
    @Test func offlineToxcoreIsTakenAtItsWord() {
        var check = IsolationCheck()
        check.toxConnection(connected: false, now: at(0))
        let offline = check.isolated(now: at(1000))
        #expect(!offline)
        check.toxConnection(connected: true, now: at(2000))
        let early = check.isolated(now: at(2059))
        #expect(!early)
        let late = check.isolated(now: at(2060))
        #expect(late)
        check.toxConnection(connected: false, now: at(2061))
        let offAgain = check.isolated(now: at(2062))
        #expect(!offAgain)
    }

    /// Our own port on a loopback or interface address is ourselves; the same
    /// port on another host (toxcore's default 33445 is common) is not.
    @Test func ownDatagramsAreTellableFromOthers() {
        let mapped = DatagramOrigin.mappedPrefix
        let local: Set<[UInt8]> = [mapped + [192, 0, 2, 7]]
        #expect(
            DatagramOrigin(address: mapped + [127, 0, 0, 1], port: 33445).isOwn(ownPort: 33445, localAddresses: []))
        #expect(
            DatagramOrigin(address: Array(repeating: 0, count: 15) + [1], port: 33445).isOwn(
                ownPort: 33445, localAddresses: []))
        #expect(
            DatagramOrigin(address: mapped + [192, 0, 2, 7], port: 33445).isOwn(ownPort: 33445, localAddresses: local))
        #expect(
            !DatagramOrigin(address: mapped + [192, 0, 2, 8], port: 33445).isOwn(ownPort: 33445, localAddresses: local))
        #expect(
            !DatagramOrigin(address: mapped + [127, 0, 0, 1], port: 33446).isOwn(ownPort: 33445, localAddresses: local))
    }

    /// A real socket: what the peek reports is who sent, and the datagram stays for its reader.
    @Test func peekingNamesTheSenderAndTakesNothing() throws {
        let receiver = try LoopbackUdpSocket()
        let sender = try LoopbackUdpSocket()
        try sender.send([1, 2, 3], to: receiver.port)
        #expect(receiver.waitReadable())
        let origin = try #require(DatagramOrigin.peek(receiver.fd))
        #expect(origin.port == sender.port && DatagramOrigin.isLoopback(origin.address))
        #expect(!origin.isOwn(ownPort: receiver.port, localAddresses: DatagramOrigin.localAddresses()))
        #expect(DatagramOrigin.peek(receiver.fd) == origin)  // still there
        #expect(receiver.receive() == [1, 2, 3])
        #expect(DatagramOrigin.localAddresses().contains(DatagramOrigin.mappedPrefix + [127, 0, 0, 1]))
    }
}
