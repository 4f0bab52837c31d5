/// Groups packets sent close together and measures how the gaps between
/// groups changed on the way (draft-ietf-rmcat-gcc-02 §5.2; libwebrtc's
/// InterArrivalDelta): a group is the packets sent within 5 ms of its first,
/// plus those that arrive in a burst behind it, since a burst says more
/// about the sender's pacing than about the path.
struct InterArrivalGroups {
    /// Deltas between the last two complete groups, in µs.
    struct Deltas: Equatable {
        var send: Int64
        var arrival: Int64
        /// The arrival time of the newer group's last packet.
        var arrivalTime: Int64
    }

    static let groupLength: Int64 = 5_000
    static let burstDelta: Int64 = 5_000
    static let maxBurstDuration: Int64 = 100_000

    private struct Group {
        var firstSend: Int64
        var lastSend: Int64
        var firstArrival: Int64
        var lastArrival: Int64
    }

    private var current: Group?
    private var previous: Group?

    /// Feeds one received packet, in send order; returns deltas when it starts a new group.
    mutating func add(sendTime: Int64, arrival: Int64) -> Deltas? {
        guard var group = current else {
            current = Group(firstSend: sendTime, lastSend: sendTime, firstArrival: arrival, lastArrival: arrival)
            return nil
        }
        guard sendTime >= group.firstSend else { return nil }  // reordered behind its group: ignored
        if startsNewGroup(group, sendTime: sendTime, arrival: arrival) {
            var deltas: Deltas?
            if let previous {
                let arrivalDelta = group.lastArrival - previous.lastArrival
                // Arrivals that went backwards mean reordering or a clock jump: no sample.
                if arrivalDelta >= 0 {
                    deltas = Deltas(
                        send: group.lastSend - previous.lastSend, arrival: arrivalDelta, arrivalTime: group.lastArrival)
                }
            }
            previous = group
            current = Group(firstSend: sendTime, lastSend: sendTime, firstArrival: arrival, lastArrival: arrival)
            return deltas
        }
        group.lastSend = max(group.lastSend, sendTime)
        group.lastArrival = max(group.lastArrival, arrival)
        current = group
        return nil
    }

    private func startsNewGroup(_ group: Group, sendTime: Int64, arrival: Int64) -> Bool {
        if belongsToBurst(group, sendTime: sendTime, arrival: arrival) { return false }
        return sendTime - group.firstSend > Self.groupLength
    }

    /// A packet that arrives hard behind the group, sooner than it was sent after it.
    private func belongsToBurst(_ group: Group, sendTime: Int64, arrival: Int64) -> Bool {
        let arrivalDelta = arrival - group.lastArrival
        let sendDelta = sendTime - group.lastSend
        if sendDelta == 0 { return true }
        return arrivalDelta - sendDelta < 0 && arrivalDelta <= Self.burstDelta
            && arrival - group.firstArrival < Self.maxBurstDuration
    }
}
