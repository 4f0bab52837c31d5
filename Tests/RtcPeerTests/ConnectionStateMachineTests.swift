import RtcICE
import Testing

@testable import RtcPeer

/// ICE and DTLS events in, the W3C connection state out, without a network.
@Suite struct ConnectionStateMachineTests {
    @Test func aCallConnectsLosesItsPathAndComesBack() {
        var machine = ConnectionStateMachine()
        #expect(machine.negotiating() == .connecting)
        #expect(machine.negotiating() == nil)  // once
        #expect(machine.ice(.connected) == nil)  // ICE alone is not connected: DTLS must be
        #expect(machine.dtlsUp() == .connected)
        // Consent lost on an established connection: disconnected, counted, not failed.
        #expect(machine.ice(.failed) == .disconnected)
        #expect(machine.iceLosses == 1 && machine.failureReason == nil)
        // An ICE restart connects again: DTLS kept its session.
        #expect(machine.ice(.checking) == nil)
        #expect(machine.ice(.completed) == .connected)
        #expect(machine.ice(.disconnected) == .disconnected)
        #expect(machine.ice(.connected) == .connected)
    }

    @Test func failingBeforeDtlsIsFailedWithAReason() {
        var machine = ConnectionStateMachine()
        _ = machine.negotiating()
        #expect(machine.ice(.failed) == .failed)
        #expect(machine.failureReason == "ICE failed: no candidate pair works" && machine.iceLosses == 0)
        var dtls = ConnectionStateMachine()
        _ = dtls.negotiating()
        #expect(dtls.dtlsFailed("fingerprint mismatch") == .failed)
        #expect(dtls.failureReason == "fingerprint mismatch")
    }

    @Test func closedIsFinal() {
        var machine = ConnectionStateMachine()
        _ = machine.dtlsUp()
        #expect(machine.close() == .closed)
        #expect(machine.close() == nil)
        #expect(machine.ice(.failed) == nil && machine.iceLosses == 0)
        #expect(machine.dtlsUp() == nil && machine.ice(.connected) == nil)
        #expect(machine.state == .closed)
    }
}
