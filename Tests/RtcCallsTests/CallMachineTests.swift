import RtcCalls
import Testing

/// The call state machine, transition by transition: inputs in, outputs out, no clocks.
@Suite struct CallMachineTests {
    typealias Output = CallMachine.Output
    static let timeouts = CallMachine.Timeouts(ringing: 30, disconnectGrace: 3)

    static func signal(_ type: RtcSignal.SignalType, sdp: String? = nil, reason: RtcSignal.Reason? = nil) -> RtcSignal {
        RtcSignal(type: type, sdp: sdp, reason: reason, callId: "c")
    }

    static func candidate(_ n: Int) -> RtcSignal {
        RtcSignal(
            type: .candidate, candidates: [.init(sdp: "candidate:\(n)", sdpMLineIndex: 0, sdpMid: "0")], callId: "c")
    }

    @Test func outgoingCallRingsConnectsAndHangsUp() {
        var (machine, first) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        #expect(first == [.sendOffer, .stateChanged(.ringing)])
        #expect(
            machine.handle(.remote(Self.signal(.event).with(event: .ringing)), now: 1) == [
                .stateChanged(.remoteRinging)
            ])
        // A candidate before the answer waits for it.
        #expect(machine.handle(.remote(Self.candidate(1)), now: 1.5).isEmpty)
        #expect(
            machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 2)
                == [.applyAnswer("A"), .addCandidates(Self.candidate(1).candidates!), .stateChanged(.connecting)])
        #expect(machine.handle(.remote(Self.signal(.action).with(action: .accept)), now: 2).isEmpty)
        #expect(machine.handle(.remote(Self.candidate(2)), now: 2) == [.addCandidates(Self.candidate(2).candidates!)])
        #expect(machine.handle(.transportConnected, now: 2.1) == [.stateChanged(.connected), .startMedia])
        #expect(
            machine.handle(.hangUp, now: 9)
                == [.send(RtcSignal(type: .bye, reason: .normal)), .close, .stateChanged(.ended)])
        #expect(machine.endReason == .hangUp)
        // After the end, nothing moves it.
        #expect(machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 10).isEmpty)
        #expect(machine.handle(.hangUp, now: 10).isEmpty)
    }

    @Test func incomingCallIsAcceptedWithQueuedCandidates() {
        var (machine, first) = CallMachine.incoming(offer: "O", now: 0, timeouts: Self.timeouts)
        #expect(first == [.stateChanged(.ringing), .askApplication])
        #expect(machine.handle(.remote(Self.candidate(1)), now: 0.1).isEmpty)
        // A duplicate offer while ringing is ignored; so is a stray answer.
        #expect(machine.handle(.remote(Self.signal(.offer, sdp: "O")), now: 0.2).isEmpty)
        #expect(machine.handle(.remote(Self.signal(.answer, sdp: "X")), now: 0.2).isEmpty)
        #expect(
            machine.handle(.accept, now: 1)
                == [.answer(offer: "O"), .addCandidates(Self.candidate(1).candidates!), .stateChanged(.connecting)])
        #expect(machine.handle(.accept, now: 1).isEmpty)  // once
        #expect(machine.handle(.transportConnected, now: 1.2) == [.stateChanged(.connected), .startMedia])
        // The same call offered again is a renegotiation, answered in place.
        #expect(machine.handle(.remote(Self.signal(.offer, sdp: "O2")), now: 5) == [.renegotiate(offer: "O2")])
        #expect(machine.handle(.remote(Self.signal(.bye, reason: .normal)), now: 6) == [.close, .stateChanged(.ended)])
        #expect(machine.endReason == .remoteHangUp)
    }

    @Test func incomingCallIsRejectedOrBusy() {
        var (rejecting, _) = CallMachine.incoming(offer: "O", now: 0, timeouts: Self.timeouts)
        #expect(
            rejecting.handle(.reject, now: 1)
                == [.send(RtcSignal(type: .bye, reason: .declined)), .close, .stateChanged(.ended)])
        #expect(rejecting.endReason == .declined)
        var (busy, _) = CallMachine.incoming(offer: "O", now: 0, timeouts: Self.timeouts)
        #expect(
            busy.handle(.busy, now: 1) == [.send(RtcSignal(type: .bye, reason: .busy)), .close, .stateChanged(.ended)])
        #expect(busy.endReason == .busy)
    }

    @Test func theCalleesAnswerEndsAnOutgoingCall() {
        for (reason, expected) in [
            (RtcSignal.Reason.declined, Call.EndReason.declined), (.busy, .busy), (.normal, .remoteHangUp),
        ] {
            var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
            #expect(
                machine.handle(.remote(Self.signal(.bye, reason: reason)), now: 1) == [.close, .stateChanged(.ended)])
            #expect(machine.endReason == expected)
        }
        var (rejected, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        _ = rejected.handle(.remote(Self.signal(.action).with(action: .reject)), now: 1)
        #expect(rejected.endReason == .declined)
    }

    @Test func nobodyAnswersWithinTheRingingTime() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        #expect(machine.handle(.tick, now: 29.9).isEmpty)
        #expect(
            machine.handle(.tick, now: 30)
                == [.send(RtcSignal(type: .bye, reason: .timeout)), .close, .stateChanged(.ended)])
        #expect(machine.endReason == .noAnswer)
        var (undecided, _) = CallMachine.incoming(offer: "O", now: 0, timeouts: Self.timeouts)
        #expect(undecided.handle(.tick, now: 31).isEmpty)  // the caller's timeout goes first
        _ = undecided.handle(.tick, now: 32)
        #expect(undecided.endReason == .noAnswer)
    }

    @Test func aSilentTransportGetsAGracePeriodThenFails() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        _ = machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        _ = machine.handle(.transportConnected, now: 1)
        #expect(machine.handle(.transportDisconnected, now: 10) == [.stateChanged(.disconnected)])
        #expect(machine.handle(.tick, now: 12).isEmpty)
        // It comes back: connected again, media not restarted.
        #expect(machine.handle(.transportConnected, now: 12.5) == [.stateChanged(.connected)])
        #expect(machine.handle(.transportFailed, now: 20) == [.stateChanged(.disconnected)])
        #expect(machine.handle(.tick, now: 22.9).isEmpty)
        #expect(
            machine.handle(.tick, now: 23)
                == [.send(RtcSignal(type: .bye, reason: .error)), .close, .stateChanged(.ended)])
        #expect(machine.endReason == .failed)
    }

    @Test func glareEndsWithABusyByeAndUndeliverableWithout() {
        var (glare, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        #expect(
            glare.handle(.lostGlare, now: 0.1)
                == [.send(RtcSignal(type: .bye, reason: .busy)), .close, .stateChanged(.ended)])
        #expect(glare.endReason == .glare)
        var (lost, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        #expect(lost.handle(.undeliverable, now: 0.1) == [.close, .stateChanged(.ended)])
        #expect(lost.endReason == .error)
    }

    @Test func ourRenegotiationOfferTakesItsAnswerAndGoesFirst() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        #expect(machine.handle(.renegotiate(iceRestart: true), now: 0.5).isEmpty)  // not before it connects
        _ = machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        _ = machine.handle(.transportConnected, now: 1)
        #expect(machine.handle(.renegotiate(iceRestart: true), now: 2) == [.reoffer(iceRestart: true)])
        #expect(machine.handle(.renegotiate(iceRestart: false), now: 2).isEmpty)  // one at a time
        // The peer's own offer meanwhile loses to ours; our answer comes back.
        #expect(machine.handle(.remote(Self.signal(.offer, sdp: "theirs")), now: 2.1).isEmpty)
        #expect(machine.handle(.remote(Self.signal(.answer, sdp: "A2")), now: 2.2) == [.applyAnswer("A2")])
        #expect(machine.handle(.remote(Self.signal(.answer, sdp: "A3")), now: 2.3).isEmpty)  // a stray one
        #expect(machine.state == .connected)
    }

    @Test func strayAndOutOfOrderSignalsChangeNothing() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        // An offer for our own outgoing call, prAnswer, remove-candidates, online: ignored.
        for signal in [
            Self.signal(.offer, sdp: "O"), Self.signal(.prAnswer, sdp: "P"), Self.signal(.removeCandidates),
            Self.signal(.event).with(event: .online), Self.signal(.action).with(action: .accept),
        ] {
            #expect(machine.handle(.remote(signal), now: 1).isEmpty)
        }
        #expect(machine.state == .ringing)
        // The transport cannot connect a call that was never answered; accept is not ours to give.
        #expect(machine.handle(.transportConnected, now: 1).isEmpty)
        #expect(machine.handle(.accept, now: 1).isEmpty)
        // Candidates queue up to a bound.
        for n in 0..<100 { _ = machine.handle(.remote(Self.candidate(n)), now: 1) }
        let outputs = machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 2)
        guard case .addCandidates(let queued) = outputs[1] else {
            Issue.record("no queued candidates")
            return
        }
        #expect(queued.count == 64)
    }
}

extension RtcSignal {
    func with(event: Event? = nil, action: Action? = nil) -> RtcSignal {
        var copy = self
        copy.event = event ?? copy.event
        copy.action = action ?? copy.action
        return copy
    }
}
