import RtcICE
import RtcRTP

/// What a peer connection reports (on `PeerConnection.events()`).
public enum PeerEvent: Sendable {
    /// A local ICE candidate to signal to the peer (trickle): the attribute
    /// value `candidate:...`, for the BUNDLE's first media section.
    case localCandidate(candidate: String, sdpMid: String, sdpMLineIndex: Int)
    case gatheringComplete
    case iceStateChanged(IceState)
    case connectionStateChanged(PeerConnectionState)
    /// The peer opened a data channel.
    case dataChannel(DataChannel)
    /// A media section that receives from the peer.
    case track(mid: String, kind: MediaKind)
    /// The peer asked for a keyframe on a section we send (PLI or FIR).
    case keyframeRequested(mid: String)
}

/// The W3C RTCPeerConnectionState.
public enum PeerConnectionState: String, Sendable {
    case new, connecting, connected, disconnected, failed, closed
}

/// What a media section carries.
public enum MediaKind: String, Sendable {
    case audio, video
}

/// One RTP packet received on a media section.
public struct ReceivedRtp: Sendable {
    /// The media section it came on.
    public var mid: String
    /// The packet, decrypted.
    public var packet: RtpPacket
}

/// A sender's RTP clock against its wallclock, from an RTCP sender report.
public struct SenderClock: Sendable, Equatable {
    /// Unix seconds at which the sender's RTP clock read `rtpTimestamp`.
    public var wallclock: Double
    /// The RTP timestamp the report paired with `wallclock`.
    public var rtpTimestamp: UInt32

    /// A clock from a sender report's two times.
    public init(wallclock: Double, rtpTimestamp: UInt32) {
        self.wallclock = wallclock
        self.rtpTimestamp = rtpTimestamp
    }

    /// The wallclock time an RTP timestamp stands for (timestamps within half the 32-bit range).
    public func wallclock(of timestamp: UInt32, clockRate: Double) -> Double {
        wallclock + Double(Int32(bitPattern: timestamp &- rtpTimestamp)) / clockRate
    }
}
