import RtcRTP
import Testing

@testable import RtcCongestion

/// The pieces between a packet sent and an estimate: numbering, feedback
/// written by the receiver and matched by the sender, and the detector.
@Suite struct FeedbackLoopTests {
    @Test func feedbackMatchesSentPacketsAcrossTheSixteenBitWrap() throws {
        var history = SentPacketHistory()
        var recorder = TransportFeedbackRecorder()
        var sent: [SentPacket] = []
        for index in 0..<66_000 {
            let packet = history.add(size: 1000, at: Int64(index) * 1000, probeCluster: nil)
            sent.append(packet)
            // Every tenth packet is lost; the rest arrive 30 ms after they left.
            if index % 10 != 3 {
                recorder.record(sequence: UInt16(truncatingIfNeeded: packet.sequence), at: packet.sendTime + 30_000)
            }
            if index % 100 == 99 {
                var results: [PacketResult] = []
                for feedback in recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2) {
                    // Through the wire format, as the sender gets it.
                    guard
                        case .transportFeedback(let read) = try RtcpPacket.parseCompound(
                            RtcpPacket.transportFeedback(feedback).serialized()
                        ).first
                    else {
                        Issue.record("not feedback")
                        return
                    }
                    results += history.results(for: read)
                }
                // Each packet reported once, the trailing loss (if any) only once a later packet arrived.
                let expected = sent.suffix(100)
                #expect(results.map(\.sent) == Array(expected))
                for result in results {
                    let lost = result.sent.sequence % 10 == 3
                    #expect((result.arrival == nil) == lost)
                    if let arrival = result.arrival { #expect(abs(arrival - result.sent.sendTime - 30_000) < 250) }
                }
            }
        }
    }

    @Test func feedbackNeverReportsAPacketTwiceOrALossStillInFlight() {
        var recorder = TransportFeedbackRecorder()
        recorder.record(sequence: 10, at: 1000)
        recorder.record(sequence: 12, at: 3000)
        let first = recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2)
        #expect(first.count == 1)
        #expect(first.first?.baseSequence == 10)
        #expect(first.first?.arrivals.count == 3)
        #expect(first.first?.arrivals[1] == nil)
        // 11 comes late: it was reported lost, so it is not reported again.
        recorder.record(sequence: 11, at: 4000)
        #expect(recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2).isEmpty)
        recorder.record(sequence: 13, at: 5000)
        let second = recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2)
        #expect(second.first?.baseSequence == 13)
        #expect(second.first?.feedbackCount == 1)
    }

    @Test func aLongPauseSplitsFeedbackWhereADeltaWouldNotFit() {
        var recorder = TransportFeedbackRecorder()
        recorder.record(sequence: 0, at: 0)
        recorder.record(sequence: 1, at: 10_000_000)  // ten seconds later: beyond a signed 16-bit delta
        let feedbacks = recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2)
        #expect(feedbacks.map(\.baseSequence) == [0, 1])
        #expect(feedbacks.map { $0.referenceMicroseconds + ($0.arrivals.last.flatMap { $0 } ?? 0) } == [0, 10_000_000])
    }

    @Test func aSenderThatJumpsFarAheadCannotMakeTheRecorderHoldMore() {
        var recorder = TransportFeedbackRecorder()
        for sequence in stride(from: 0, to: 60_000, by: 3) { recorder.record(sequence: UInt16(sequence), at: 1000) }
        let feedbacks = recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2)
        #expect(feedbacks.reduce(0) { $0 + $1.arrivals.count } <= TransportFeedbackRecorder.capacity)
    }

    @Test func theReceiversReferenceTimeIsUnwrappedAfterSixDays() {
        var history = SentPacketHistory()
        let a = history.add(size: 100, at: 0, probeCluster: nil)
        let b = history.add(size: 100, at: 1000, probeCluster: nil)
        // The 24-bit reference is at its top, then wraps to its bottom, 64 ms later.
        let top = TransportFeedback(
            senderSsrc: 1, mediaSsrc: 2, baseSequence: UInt16(a.sequence), referenceTime: 0x7F_FFFF, feedbackCount: 0,
            arrivals: [0])
        let wrapped = TransportFeedback(
            senderSsrc: 1, mediaSsrc: 2, baseSequence: UInt16(b.sequence), referenceTime: -0x80_0000,
            feedbackCount: 1, arrivals: [0])
        let first = history.results(for: top).first?.arrival ?? 0
        let second = history.results(for: wrapped).first?.arrival ?? 0
        #expect(second - first == 64_000)
    }

    @Test func growingQueueingDelayIsOveruseAndSteadyDelayIsNot() {
        var steady = TrendlineEstimator()
        var growing = TrendlineEstimator()
        var sawOveruse = false
        for group in 1...100 {
            let time = Double(group) * 20
            #expect(steady.update(arrivalDelta: 20, sendDelta: 20, arrivalTime: time) == .normal)
            // Each group arrives 2 ms later than it was sent after the last: a queue filling.
            if growing.update(arrivalDelta: 22, sendDelta: 20, arrivalTime: time + Double(group) * 2) == .overusing {
                sawOveruse = true
            }
        }
        #expect(sawOveruse)
    }

    @Test func packetsSentInABurstCountAsOneGroup() {
        var groups = InterArrivalGroups()
        // Three groups 20 ms apart; within each, packets 1 ms apart.
        var deltas: [InterArrivalGroups.Deltas] = []
        for group in 0..<3 {
            for packet in 0..<4 {
                let send = Int64(group * 20_000 + packet * 1000)
                if let delta = groups.add(sendTime: send, arrival: send + 50_000) { deltas.append(delta) }
            }
        }
        if let delta = groups.add(sendTime: 80_000, arrival: 130_000) { deltas.append(delta) }
        #expect(deltas.map(\.send) == [20_000, 20_000])
        #expect(deltas.map(\.arrival) == [20_000, 20_000])
    }

    @Test func mediaSentDuringABurstCountsInIt() {
        var estimator = SendSideEstimator()
        let cluster = estimator.nextProbe(at: 0)?.id ?? 1
        estimator.probeStarted(cluster: cluster, at: 1_000, duration: 15_000)
        #expect(estimator.packetSent(size: 1200, at: 500).probeCluster == nil)  // before it
        #expect(estimator.packetSent(size: 1200, at: 8_000).probeCluster == cluster)
        #expect(estimator.packetSent(size: 300, at: 9_000, probeCluster: cluster).probeCluster == cluster)
        #expect(estimator.packetSent(size: 1200, at: 16_000).probeCluster == cluster)
        #expect(estimator.packetSent(size: 1200, at: 17_000).probeCluster == nil)  // after its last packet
    }

    @Test func aReceiverCapIsNeverExceededAndProbesStartAboveTheStartRate() {
        var estimator = SendSideEstimator(.init(start: 300_000, minimum: 30_000, maximum: 2_500_000))
        let probe = estimator.nextProbe(at: 0)
        #expect(probe?.rate == 900_000)
        #expect(estimator.nextProbe(at: 0) == nil)  // further only once the path carried the first
        #expect((probe?.packetSize ?? 0) <= 1200 && (probe?.packetCount ?? 0) >= 5)
        estimator.receiverEstimate(120_000)
        #expect(estimator.target == 120_000)
        estimator.receiverEstimate(0)
        #expect(estimator.target == 300_000)
    }
}
