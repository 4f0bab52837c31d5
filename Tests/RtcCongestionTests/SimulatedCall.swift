import Foundation
import RtcCongestion
import RtcRTP

/// Senders that pace packets at their estimator's target through one
/// simulated link, receivers that record arrivals and send transport-wide
/// feedback every 50 ms back over an uncongested path: a whole call's
/// congestion control on virtual time, 1 ms a step, in milliseconds of real time.
struct SimulatedCall {
    struct Sample {
        var time: Int64
        var target: Double
        /// What arrived at the receiver over the last second, bit/s.
        var received: Double
        var queueDelay: Int64
    }

    final class Flow {
        var estimator: SendSideEstimator
        var recorder = TransportFeedbackRecorder()
        var inFlight: [(arrival: Int64, sequence: UInt16, size: Int)] = []
        var nextInFlight = 0
        var feedbackInFlight: [(due: Int64, feedback: TransportFeedback)] = []
        var mediaBudget = 0.0
        var probe: (cluster: ProbeCluster, remaining: Int, budget: Double)?  // remaining packets
        var received: [(time: Int64, size: Int)] = []
        var samples: [Sample] = []
        var startTime: Int64

        init(_ configuration: SendSideEstimator.Configuration, startTime: Int64) {
            estimator = SendSideEstimator(configuration)
            self.startTime = startTime
        }
    }

    static let packetSize = 1200
    static let tick: Int64 = 1000
    static let feedbackInterval: Int64 = 50_000

    var link: SimulatedLink
    var flows: [Flow]
    private(set) var now: Int64 = 0

    init(link: SimulatedLink, flows: Int = 1, configuration: SendSideEstimator.Configuration = .init()) {
        self.link = link
        self.flows = (0..<flows).map { _ in Flow(configuration, startTime: 0) }
    }

    mutating func run(until end: Int64, name: String = #function) {
        defer {
            // CONGESTION_TRACE=1 swift test --filter EstimatorScenarioTests prints each flow's seconds.
            if ProcessInfo.processInfo.environment["CONGESTION_TRACE"] != nil {
                for (index, flow) in flows.enumerated() { print("\(name) flow \(index):\n\(flow.trace)") }
            }
        }
        while now < end {
            now += Self.tick
            // Take turns at the link, so neither flow always queues first.
            let order = (now / Self.tick) % 2 == 0 ? Array(flows.indices) : flows.indices.reversed()
            for index in order where flows[index].startTime <= now { step(flows[index]) }
        }
    }

    private mutating func step(_ flow: Flow) {
        while flow.nextInFlight < flow.inFlight.count, flow.inFlight[flow.nextInFlight].arrival <= now {
            let packet = flow.inFlight[flow.nextInFlight]
            flow.recorder.record(sequence: packet.sequence, at: packet.arrival)
            flow.received.append((packet.arrival, packet.size))
            flow.nextInFlight += 1
        }
        if flow.nextInFlight > 4096 {
            flow.inFlight.removeFirst(flow.nextInFlight)
            flow.nextInFlight = 0
        }
        if now % Self.feedbackInterval == 0 {
            for feedback in flow.recorder.makeFeedback(senderSsrc: 1, mediaSsrc: 2) {
                flow.feedbackInFlight.append((now + link.delay, feedback))
            }
        }
        while let first = flow.feedbackInFlight.first, first.due <= now {
            flow.feedbackInFlight.removeFirst()
            flow.estimator.feedback(first.feedback, at: now)
        }
        if flow.probe == nil, let cluster = flow.estimator.nextProbe(at: now) {
            flow.probe = (cluster, cluster.packetCount, 0)
            // Media sent during the burst counts in it (`SendSideEstimator.probeStarted`), as on a peer connection.
            flow.estimator.probeStarted(cluster: cluster.id, at: now, duration: cluster.duration)
        }
        let target = flow.estimator.target
        // Media paced at the target; never more than two packets of saved-up budget.
        flow.mediaBudget = min(flow.mediaBudget + target * Double(Self.tick) / 8_000_000, Double(2 * Self.packetSize))
        while flow.mediaBudget >= Double(Self.packetSize) {
            flow.mediaBudget -= Double(Self.packetSize)
            send(flow, size: Self.packetSize, probeCluster: nil)
        }
        if var probe = flow.probe {
            probe.budget += probe.cluster.rate * Double(Self.tick) / 8_000_000
            let size = probe.cluster.packetSize
            while probe.budget >= Double(size), probe.remaining > 0 {
                probe.budget -= Double(size)
                probe.remaining -= 1
                send(flow, size: size, probeCluster: probe.cluster.id)
            }
            flow.probe = probe.remaining > 0 ? probe : nil
        }
        if now % 100_000 == 0 {
            let since = now - 1_000_000
            let bytes = flow.received.reversed().prefix { $0.time > since }.reduce(0) { $0 + $1.size }
            if flow.received.count > 20_000 { flow.received.removeFirst(10_000) }
            flow.samples.append(
                Sample(
                    time: now, target: flow.estimator.target, received: Double(bytes * 8),
                    queueDelay: link.queueDelay(at: now)))
        }
    }

    private mutating func send(_ flow: Flow, size: Int, probeCluster: Int?) {
        let packet = flow.estimator.packetSent(size: size, at: now, probeCluster: probeCluster)
        if let arrival = link.send(size: size, at: now) {
            flow.inFlight.append((arrival, UInt16(truncatingIfNeeded: packet.sequence), size))
        }
    }
}

extension SimulatedCall.Flow {
    /// The target at `time` (the last sample at or before it).
    func target(at time: Int64) -> Double { samples.last { $0.time <= time }?.target ?? 0 }

    /// Samples in [from, to).
    func samples(from: Int64, to: Int64) -> [SimulatedCall.Sample] {
        samples.filter { $0.time >= from && $0.time < to }
    }

    /// A line per second, for a test that fails.
    var trace: String {
        samples.filter { $0.time % 1_000_000 == 0 }.map {
            "\($0.time / 1_000_000)s target \(Int($0.target / 1000)) received \(Int($0.received / 1000)) queue \($0.queueDelay / 1000) ms"
        }.joined(separator: "\n")
    }
}

/// Seconds to µs.
func seconds(_ value: Double) -> Int64 { Int64(value * 1_000_000) }
