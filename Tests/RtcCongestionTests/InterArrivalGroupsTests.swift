import Testing

@testable import RtcCongestion

/// Grouping and group deltas on chosen send and arrival times (µs).
@Suite struct InterArrivalGroupsTests {
    @Test func packetsWithinFiveMillisecondsFormOneGroup() {
        var groups = InterArrivalGroups()
        // Three groups of two packets 2 ms apart, a group every 20 ms, each 3 ms later on arrival than sent.
        var deltas: [InterArrivalGroups.Deltas] = []
        for group in 0..<4 {
            for packet in 0..<2 {
                let send = Int64(group * 20_000 + packet * 2_000)
                let arrival = send + 50_000 + Int64(group) * 3_000
                if let found = groups.add(sendTime: send, arrival: arrival) { deltas.append(found) }
            }
        }
        // The first delta needs two complete groups and the start of a third.
        #expect(
            deltas == [
                .init(send: 20_000, arrival: 23_000, arrivalTime: 75_000),
                .init(send: 20_000, arrival: 23_000, arrivalTime: 98_000),
            ])
    }

    @Test func aBurstArrivingTogetherJoinsItsGroup() {
        var groups = InterArrivalGroups()
        // Sent 10 ms apart but arriving 1 ms apart (queued behind something and released): one group.
        var results: [InterArrivalGroups.Deltas?] = []
        for packet in 0..<5 {
            results.append(groups.add(sendTime: Int64(packet) * 10_000, arrival: 200_000 + Int64(packet) * 1_000))
        }
        #expect(results.allSatisfy { $0 == nil })
    }

    @Test func reorderedPacketsAndArrivalsGoingBackGiveNoSample() {
        var groups = InterArrivalGroups()
        #expect(groups.add(sendTime: 100_000, arrival: 150_000) == nil)
        #expect(groups.add(sendTime: 50_000, arrival: 151_000) == nil)  // sent before its group: ignored
        #expect(groups.add(sendTime: 120_000, arrival: 170_000) == nil)
        // The third group starts; the second arrived before the first: no sample.
        #expect(groups.add(sendTime: 140_000, arrival: 100_000) == nil)
    }
}
