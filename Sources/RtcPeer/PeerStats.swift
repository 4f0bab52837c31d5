/// A snapshot of a peer connection's transport and media statistics.
public struct PeerStats: Sendable, Equatable {
    /// A connection that has not been made yet: nothing sent or received.
    public static let none = PeerStats(
        bytesSent: 0, bytesReceived: 0, packetsSent: 0, packetsReceived: 0, srtpDropped: 0, packetsLostByPeer: 0,
        inbound: [])

    /// Bytes sent on the transport (every layer's).
    public var bytesSent: UInt64
    /// Bytes received on the transport.
    public var bytesReceived: UInt64
    /// Datagrams sent.
    public var packetsSent: UInt64
    /// Datagrams received.
    public var packetsReceived: UInt64
    /// SRTP/SRTCP packets dropped (failed authentication or replayed).
    public var srtpDropped: UInt64
    /// Datagrams dropped as no protocol of ours, or DTLS records the session refused.
    public var strayDropped: UInt64 = 0
    /// Incoming RTP packets dropped on purpose (`PeerConfiguration.simulatedRtpLoss`).
    public var simulatedDrops: UInt64 = 0
    /// Of `simulatedDrops`, padding-only packets (probe bursts): no receiver
    /// misses them, so they are neither lost nor asked for again.
    public var simulatedPaddingDrops: UInt64 = 0
    /// Authenticated RTP/RTCP packets dropped because they did not parse.
    public var malformedDropped: UInt64 = 0
    /// DTLS records and RTP/RTCP packets not sent because they could not be
    /// encrypted (the DTLS session closed, SRTP refused the packet).
    public var sendFailures: UInt64 = 0
    /// Round-trip time from RTCP reports, seconds, if known.
    public var roundTripTime: Double?
    /// Cumulative loss the peer reported for what we send.
    public var packetsLostByPeer: Int64
    /// Per incoming SSRC: packets received, lost and jitter (seconds).
    public var inbound: [InboundStreamStats]
    /// The ICE pair in use (local and remote candidate lines).
    public var selectedPair: (local: String, remote: String)?
    /// The same pair as types, protocols and addresses.
    public var path: IcePath?
    /// Remote candidates not used, by reason (an unresolved mDNS name, a
    /// reserved `.invalid` host, a line that does not parse, …).
    public var droppedCandidates: [String: Int] = [:]
    /// Times ICE lost the established connection (consent expired) and left
    /// it to an ICE restart to bring it back.
    public var connectionLosses = 0
    /// The largest SCTP packet this end sends, when a path probe raised it
    /// above the default of about 1200 bytes (PathMtuProbe); nil otherwise.
    public var sctpPacketSize: Int?
    /// Congestion control, when the peer speaks transport-wide feedback or sends REMB.
    public var congestion: Congestion?
    /// What our REMBs tell a peer that takes only REMB (aiortc), bit/s: our
    /// estimate of the path from its video's arrivals; nil for other peers.
    public var estimateSentInRemb: Double?
    /// REMBs sent to such a peer.
    public var rembsSent = 0
    /// Packets sent on our RTX streams (RFC 4588: NACKs answered, probe padding),
    /// when RTX is negotiated; without it NACKs are answered on the media stream.
    public var rtxPacketsSent: UInt64 = 0
    /// Packets received on the peer's RTX streams.
    public var rtxPacketsReceived: UInt64 = 0

    /// What the send-side estimator makes of the path (`RtcCongestion`).
    public struct Congestion: Sendable, Equatable {
        /// The rate the senders should aim at, bit/s.
        public var targetBitrate: Double
        /// What the peer acknowledged receiving over the last half second, bit/s.
        public var acknowledgedBitrate: Double?
        /// From transport-wide feedback: send to feedback, seconds.
        public var roundTripTime: Double?
        /// Share of packets lost in the last loss report, 0-1.
        public var loss: Double
        /// The delay detector's verdict: normal, overusing or underusing.
        public var usage: String
        /// We sent well under the target: the media, not the path, limits the rate.
        public var applicationLimited: Bool
        /// The peer's REMB, bit/s, if it sent one.
        public var receiverEstimate: Double?
        /// Transport-wide feedback packets received.
        public var feedbacksReceived: Int
        /// What we sent over the last half second, bit/s, if known (RTP and
        /// probes, headers included, IP/UDP/SRTP not).
        public var sentBitrate: Double?
    }

    /// One incoming RTP stream's reception (RFC 3550 §6.4.1).
    public struct InboundStreamStats: Sendable, Equatable {
        /// Its media section.
        public var mid: String
        /// Its SSRC.
        public var ssrc: UInt32
        /// Packets received.
        public var packetsReceived: UInt64
        /// Packets expected but not received (cumulative, may go negative with duplicates).
        public var packetsLost: Int64
        /// Interarrival jitter, seconds.
        public var jitter: Double
    }

    /// Equal in every figure, the selected pair included.
    public static func == (lhs: PeerStats, rhs: PeerStats) -> Bool {
        lhs.bytesSent == rhs.bytesSent && lhs.bytesReceived == rhs.bytesReceived && lhs.inbound == rhs.inbound
            && lhs.selectedPair?.local == rhs.selectedPair?.local
    }
}
