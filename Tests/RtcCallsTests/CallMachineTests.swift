import RtcCalls
import TestSupport
import Testing

/// The call state machine, transition by transition: inputs in, outputs out, no clocks.
@Suite struct CallMachineTests {
    typealias Output = CallMachine.Output
    static let timeouts = CallMachine.Timeouts(ringing: 30, disconnectGrace: 3, recoveryWindow: 30)

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

    @Test func aLostTransportRestartsIceUntilItIsBackOrTheWindowHasPassed() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        _ = machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        _ = machine.handle(.transportConnected, now: 1)
        // Lost: the caller restarts ICE at once, and the answer comes.
        #expect(
            machine.handle(.transportDisconnected, now: 10) == [
                .stateChanged(.disconnected), .reoffer(iceRestart: true),
            ])
        #expect(machine.handle(.tick, now: 10.5).isEmpty)
        #expect(machine.handle(.remote(Self.signal(.answer, sdp: "R1")), now: 10.6) == [.applyAnswer("R1")])
        // Still lost: again 1 s after the loss, then 3 s; an answer that never came is taken back.
        #expect(machine.handle(.tick, now: 11) == [.reoffer(iceRestart: true)])
        #expect(machine.handle(.tick, now: 12.9).isEmpty)
        #expect(machine.handle(.tick, now: 13) == [.rollback, .reoffer(iceRestart: true)])
        // Back: connected again, media not restarted, the outage measured.
        #expect(machine.handle(.transportConnected, now: 13.5) == [.stateChanged(.connected)])
        #expect(machine.recovery.lastOutage == 3.5 && machine.recovery.restartsMade == 3)
        #expect(machine.handle(.tick, now: 14).isEmpty)
        // Lost for good: restarts every 2 s, then the call ends when the window has passed.
        #expect(machine.handle(.transportFailed, now: 20).contains(.stateChanged(.disconnected)))
        for second in stride(from: 20.5, through: 49.5, by: 0.5) {
            #expect(!machine.handle(.tick, now: second).contains(.close))
        }
        #expect(
            machine.handle(.tick, now: 50)
                == [.send(RtcSignal(type: .bye, reason: .error)), .close, .stateChanged(.ended)])
        #expect(machine.endReason == .failed && machine.recovery.losses == 2)
    }

    @Test func aTransportThatFailsWhileConnectingEndsAfterTheGracePeriod() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        _ = machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        #expect(machine.handle(.transportDisconnected, now: 2).isEmpty)  // still checking
        #expect(machine.handle(.transportFailed, now: 3).isEmpty)
        #expect(machine.handle(.tick, now: 5.9).isEmpty)
        #expect(machine.handle(.tick, now: 6).contains(.close))
        #expect(machine.endReason == .failed)
    }

    /// DTLS close_notify from the peer is its hang-up; its bye, on the
    /// signaling path, may trail it and gives the reason if it comes in time.
    @Test func aPeerThatClosesTheTransportHasHungUp() {
        var (machine, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        _ = machine.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        _ = machine.handle(.transportConnected, now: 1)
        #expect(machine.handle(.transportClosed, now: 2).isEmpty)
        #expect(machine.handle(.transportFailed, now: 2.1).isEmpty)  // no recovery for a closed transport
        #expect(machine.handle(.tick, now: 3.9).isEmpty)
        #expect(machine.handle(.tick, now: 4) == [.close, .stateChanged(.ended)])
        #expect(machine.endReason == .remoteHangUp)
        // The bye comes within the grace: its reason wins.
        var (other, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        _ = other.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        _ = other.handle(.transportConnected, now: 1)
        _ = other.handle(.transportClosed, now: 2)
        #expect(other.handle(.remote(Self.signal(.bye, reason: .busy)), now: 2.5) == [.close, .stateChanged(.ended)])
        #expect(other.endReason == .busy)
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

    @Test func offersThatCrossAreSettledByTheCalleeYielding() {
        // The caller is impolite: its offer goes first, the callee's is ignored.
        var (caller, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
        #expect(caller.handle(.renegotiate(iceRestart: true), now: 0.5).isEmpty)  // not before it connects
        _ = caller.handle(.remote(Self.signal(.answer, sdp: "A")), now: 1)
        _ = caller.handle(.transportConnected, now: 1)
        #expect(caller.handle(.renegotiate(iceRestart: true), now: 2) == [.reoffer(iceRestart: true)])
        #expect(caller.handle(.renegotiate(iceRestart: false), now: 2).isEmpty)  // one at a time: queued
        #expect(caller.handle(.remote(Self.signal(.offer, sdp: "theirs")), now: 2.1).isEmpty)
        // The answer comes, and the queued renegotiation goes out after it.
        #expect(
            caller.handle(.remote(Self.signal(.answer, sdp: "A2")), now: 2.2)
                == [.applyAnswer("A2"), .reoffer(iceRestart: false)])
        #expect(caller.handle(.remote(Self.signal(.answer, sdp: "A3")), now: 2.3) == [.applyAnswer("A3")])
        #expect(caller.handle(.remote(Self.signal(.answer, sdp: "A4")), now: 2.4).isEmpty)  // a stray one
        #expect(caller.state == .connected)

        // The callee is polite: it rolls its offer back, answers, and offers again.
        var (callee, _) = CallMachine.incoming(offer: "O", now: 0, timeouts: Self.timeouts)
        _ = callee.handle(.accept, now: 0.5)
        _ = callee.handle(.transportConnected, now: 1)
        #expect(callee.handle(.renegotiate(iceRestart: false), now: 2) == [.reoffer(iceRestart: false)])
        #expect(
            callee.handle(.remote(Self.signal(.offer, sdp: "theirs")), now: 2.1)
                == [.rollback, .renegotiate(offer: "theirs"), .reoffer(iceRestart: false)])
        #expect(callee.handle(.remote(Self.signal(.answer, sdp: "A")), now: 2.2) == [.applyAnswer("A")])
        #expect(!callee.negotiation.awaitingAnswer)
    }

    /// Both sides renegotiate (or restart ICE) at the same instant, many
    /// times, and the signals arrive in every order: both always end with no
    /// offer outstanding, having answered each other's last wish.
    @Test func crossingRenegotiationsConvergeInEveryArrivalOrder() {
        var generator = SplitMix(seed: 12)
        for round in 0..<500 {
            var (caller, _) = CallMachine.outgoing(now: 0, timeouts: Self.timeouts)
            _ = caller.handle(.remote(Self.signal(.answer, sdp: "A")), now: 0)
            _ = caller.handle(.transportConnected, now: 0)
            var (callee, _) = CallMachine.incoming(offer: "O", now: 0, timeouts: Self.timeouts)
            _ = callee.handle(.accept, now: 0)
            _ = callee.handle(.transportConnected, now: 0)
            var machines = [caller, callee]
            // In flight, per direction (signaling keeps order within one direction).
            var wires: [[RtcSignal]] = [[], []]
            var answered = [0, 0]
            func carry(_ outputs: [Output], from side: Int) {
                for output in outputs {
                    switch output {
                    case .reoffer: wires[side].append(Self.signal(.offer, sdp: "offer"))
                    case .renegotiate:
                        answered[side] += 1
                        wires[side].append(Self.signal(.answer, sdp: "answer"))
                    default: break
                    }
                }
            }
            let wishes = 1 + round % 4
            for _ in 0..<wishes {
                for side in [0, 1].shuffled(using: &generator) {
                    carry(
                        machines[side].handle(.renegotiate(iceRestart: Bool.random(using: &generator)), now: 1),
                        from: side)
                }
            }
            var steps = 0
            while !(wires[0].isEmpty && wires[1].isEmpty), steps < 1000 {
                steps += 1
                let from = wires[0].isEmpty ? 1 : wires[1].isEmpty ? 0 : Int.random(in: 0...1, using: &generator)
                let signal = wires[from].removeFirst()
                carry(machines[1 - from].handle(.remote(signal), now: 1), from: 1 - from)
            }
            #expect(steps < 1000)
            #expect(!machines[0].negotiation.awaitingAnswer && !machines[1].negotiation.awaitingAnswer)
            // Each side's wish was answered at least once by the other.
            #expect(answered[0] >= 1 && answered[1] >= 1)
            #expect(machines.allSatisfy { $0.state == .connected })
        }
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
