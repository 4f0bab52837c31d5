import Foundation
import RtcCalls
import RtcMedia

/// A call's setup, step by step, for its summary: each step in ms after the
/// call's start (our dial, or the offer's arrival at the callee), and the
/// start itself as Unix ms, so that the caller's and callee's summaries line
/// up (scripts/bench_calls.py reads them so). Steps that did not happen are
/// left out.
enum CallSteps {
    static func json(_ call: Call, received: [MediaReceiver.Stats]) -> [String: any Sendable] {
        let start = call.startDate
        var steps: [String: any Sendable] = ["startUnixMs": (start.timeIntervalSince1970 * 1000).rounded()]
        let timeline = call.timeline
        let named: [(String, Date?)] = [
            ("offerSent", timeline.offerSent), ("offerReceived", timeline.offerReceived),
            ("answerSent", timeline.answerSent), ("answerReceived", timeline.answerReceived),
            ("iceConnected", timeline.iceConnected), ("transportConnected", timeline.transportConnected),
        ]
        for (name, date) in named {
            if let date { steps[name] = after(start, date) }
        }
        for stats in received {
            let kind = stats.kind.prefix(1).uppercased() + stats.kind.dropFirst()
            if let date = stats.firstPacketDate { steps["firstRtp" + kind] = after(start, date) }
            if let date = stats.firstFrameDate { steps["firstFrame" + kind] = after(start, date) }
        }
        return steps
    }

    /// One line: the steps in the order they happened.
    static func text(_ steps: [String: any Sendable]) -> String {
        let timed = steps.compactMap { key, value in
            key == "startUnixMs" ? nil : (value as? Double).map { (key, $0) }
        }
        return "steps (ms): " + timed.sorted { $0.1 < $1.1 }.map { "\($0.0) \($0.1)" }.joined(separator: ", ")
    }

    private static func after(_ start: Date, _ date: Date) -> Double {
        rounded(date.timeIntervalSince(start) * 1000)
    }
}
