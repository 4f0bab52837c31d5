import RtcMedia
import RtcRTP
import TestSupport
import Testing

/// The jitter buffer's wait follows the network: a lost packet holds the
/// ones behind it about as long as the delay varies, not a fixed time.
@Suite struct AdaptiveJitterTests {
    /// Audio packets every 20 ms through a network whose one-way delay is
    /// `delay` ± `jitter` (uniform, so packets reorder) and loses `loss` of
    /// them; the buffer is looked at every millisecond. Returns how long each
    /// played packet was held after it arrived, and the buffer.
    static func play(
        packets: Int, delay: Double, jitter: Double, loss: Double, seed: UInt64
    ) -> (holds: [Double], buffer: JitterBuffer) {
        var random = SplitMix(seed: seed)
        var arrivals: [(time: Double, packet: RtpPacket)] = []
        for index in 0..<packets where Double.random(in: 0..<1, using: &random) >= loss {
            let sent = Double(index) * 0.02
            let packet = RtpPacket(
                payloadType: 111, sequenceNumber: UInt16(truncatingIfNeeded: 40000 + index),
                timestamp: UInt32(truncatingIfNeeded: 1_000_000 + index * 960), ssrc: 9, payload: [1])
            arrivals.append((sent + delay + Double.random(in: -jitter...jitter, using: &random), packet))
        }
        arrivals.sort { $0.time < $1.time }
        var buffer = JitterBuffer(settings: .audio)
        var arrivedAt: [UInt16: Double] = [:]
        var holds: [Double] = []
        var next = 0
        var now = 0.0
        while next < arrivals.count || !buffer.isEmpty {
            while next < arrivals.count, arrivals[next].time <= now {
                buffer.insert(arrivals[next].packet, arrival: arrivals[next].time)
                arrivedAt[arrivals[next].packet.sequenceNumber] = arrivals[next].time
                next += 1
            }
            for case .packet(let packet) in buffer.pop(now: now) {
                holds.append(now - (arrivedAt[packet.sequenceNumber] ?? now))
            }
            now += 0.001
        }
        return (holds, buffer)
    }

    @Test func underThirtyPlusMinusTenMsALossHoldsNoMoreThanTheJitterAndTwentyMs() {
        let (holds, buffer) = Self.play(packets: 1500, delay: 0.030, jitter: 0.010, loss: 0.02, seed: 7)
        let longest = holds.max() ?? 0
        // ±10 ms of jitter, + 20 ms; the buffer is looked at every millisecond.
        #expect(longest <= 0.010 + 0.020 + 0.001, "held a packet \(longest * 1000) ms")
        #expect(buffer.lost > 0, "the losses were given up, not waited for forever")
        // Reordered packets still play: few arrive after their gap was given up.
        #expect(Double(buffer.late) < 0.01 * 1500, "\(buffer.late) packets came too late")
        #expect(buffer.delayVariation > 0.015 && buffer.delayVariation < 0.021)
    }

    @Test func onASteadyNetworkALossCostsOnlyTheMargin() {
        let (holds, buffer) = Self.play(packets: 500, delay: 0.030, jitter: 0, loss: 0.05, seed: 3)
        #expect((holds.max() ?? 0) <= JitterBuffer.Settings.audio.margin + 0.001)
        #expect(abs(buffer.currentWait - JitterBuffer.Settings.audio.margin) < 1e-6)
        #expect(buffer.late == 0)
    }

    @Test func theWaitGrowsWithTheJitterAndShrinksWhenItCalms() {
        var buffer = JitterBuffer(settings: .audio)
        var random = SplitMix(seed: 11)
        var index = 0
        func send(_ count: Int, jitter: Double) {
            for _ in 0..<count {
                let packet = RtpPacket(
                    payloadType: 111, sequenceNumber: UInt16(truncatingIfNeeded: index),
                    timestamp: UInt32(truncatingIfNeeded: index * 960), ssrc: 9, payload: [1])
                buffer.insert(packet, arrival: Double(index) * 0.02 + Double.random(in: 0...jitter, using: &random))
                _ = buffer.pop(now: Double(index) * 0.02 + 0.2)
                index += 1
            }
        }
        send(200, jitter: 0)
        let calm = buffer.currentWait
        send(200, jitter: 0.060)
        let rough = buffer.currentWait
        send(200, jitter: 0)
        #expect(calm < 0.011 && rough > 0.05 && buffer.currentWait < 0.011, "\(calm) \(rough) \(buffer.currentWait)")
        #expect(rough <= JitterBuffer.Settings.audio.maxWait)
    }

    @Test func videoAlsoWaitsForItsNacksToBeAnswered() {
        var buffer = JitterBuffer(settings: .video)
        #expect(abs(buffer.currentWait - (0.01 + 3 * 0.04)) < 1e-9)
        buffer.roundTrip = 0.05  // NACKs answered one round trip later
        #expect(abs(buffer.currentWait - (0.01 + 3 * 0.05)) < 1e-9)
        buffer.roundTrip = 1  // capped
        #expect(buffer.currentWait == JitterBuffer.Settings.video.maxWait)
    }
}

extension AdaptiveJitterTests {
    /// A slow uplink's queue fills to 0.2 s and drops a packet; the
    /// retransmission the first NACK brings is dropped too, and the second's
    /// comes through the same queue 0.45 s after the packet behind the gap.
    /// Video asks again only once the first answer could have come, and waits
    /// for the second (audio would conceal).
    @Test func videoWaitsForRetransmissionsThroughAFullQueue() {
        var buffer = JitterBuffer(settings: .video)
        var played: [UInt16] = []
        func take(_ outputs: [JitterBuffer.Output]) {
            for case .packet(let packet) in outputs { played.append(packet.sequenceNumber) }
        }
        let frame = 1.0 / 30
        for index in 0..<60 {  // two seconds of frames, the queue's delay growing to 0.2 s
            guard index != 50 else { continue }  // dropped at the bottleneck
            let queue = min(Double(index) / 45, 1) * 0.2
            let packet = RtpPacket(
                payloadType: 96, sequenceNumber: UInt16(index), timestamp: UInt32(index * 3000), ssrc: 5, payload: [1])
            buffer.insert(packet, arrival: Double(index) * frame + queue)
            take(buffer.pop(now: Double(index) * frame + queue))
            if index == 51 { #expect(buffer.nacks(now: Double(index) * frame + queue) == [50]) }
        }
        let behind = 51 * frame + 0.2  // when the packet after the gap came, and the first NACK went
        #expect(buffer.nackSpacing > 0.2 && buffer.currentWait > 0.7, "\(buffer.nackSpacing) \(buffer.currentWait)")
        #expect(buffer.nacks(now: behind + 0.1).isEmpty)  // its answer is still in the queue
        #expect(buffer.nacks(now: behind + buffer.nackSpacing + 0.001) == [50])  // the first answer was lost
        take(buffer.pop(now: behind + 0.44))
        #expect(played.last == 49)  // still waiting
        let retransmission = RtpPacket(
            payloadType: 96, sequenceNumber: 50, timestamp: 50 * 3000, ssrc: 5, payload: [1])
        buffer.insert(retransmission, arrival: behind + 0.45)
        take(buffer.pop(now: behind + 0.45))
        #expect(played == Array(0..<60).map(UInt16.init))
        #expect(buffer.lost == 0 && buffer.late == 0)
    }

    /// On a calm network NACKs repeat every 40 ms, or every round trip when RTCP measured one.
    @Test func nacksRepeatAfterTheirAnswerCouldHaveCome() {
        var buffer = JitterBuffer(settings: .video)
        #expect(abs(buffer.nackSpacing - 0.04) < 1e-9)
        buffer.roundTrip = 0.15
        #expect(abs(buffer.nackSpacing - 0.15) < 1e-9)
    }

    @Test func aGapSaysWhenItWillBeGivenUp() {
        var buffer = JitterBuffer(settings: .audio)
        let packet = { (sequence: UInt16) in
            RtpPacket(
                payloadType: 111, sequenceNumber: sequence, timestamp: UInt32(sequence) * 960, ssrc: 9, payload: [1])
        }
        buffer.insert(packet(1), arrival: 0.02)
        _ = buffer.pop(now: 0.02)
        #expect(buffer.gapDeadline == nil)  // nothing held
        buffer.insert(packet(3), arrival: 0.06)
        _ = buffer.pop(now: 0.06)
        guard let deadline = buffer.gapDeadline else {
            Issue.record("a gap holds packet 3, but no deadline")
            return
        }
        #expect(abs(deadline - (0.06 + buffer.currentWait)) < 1e-9)
        #expect(buffer.pop(now: deadline - 0.0005).isEmpty)
        #expect(buffer.pop(now: deadline).count == 2)  // lost 1, then 3
        #expect(buffer.gapDeadline == nil)
    }
}
