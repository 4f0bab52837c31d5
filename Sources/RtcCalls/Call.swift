import Foundation

/// What a call is and where it stands, as the application sees it.
public struct Call: Sendable, Equatable, Identifiable {
    /// Whether we placed the call or the peer did.
    public enum Direction: String, Sendable, Codable { case outgoing, incoming }

    /// The reference's state names where they fit (peer-webrtc's CallEngine).
    public enum State: String, Sendable, Codable {
        /// Outgoing: the offer is out, no reply yet. Incoming: waiting for the application's decision.
        case ringing
        /// Outgoing: the callee said it is ringing (`event: ringing`).
        case remoteRinging
        /// Answer and accept exchanged; the transport is coming up.
        case connecting
        case connected
        /// The transport stopped carrying packets; ICE restarts until it is back, or the
        /// call ends (failed) when the recovery window (`Timeouts.recoveryWindow`) has passed.
        case disconnected
        case ended
    }

    /// Why a call ended.
    public enum EndReason: String, Sendable, Codable {
        /// We hung up.
        case hangUp
        /// The peer hung up (bye with reason normal, or another reason we do not know).
        case remoteHangUp
        /// The callee declined (bye `declined`, or action `reject`); or we declined an incoming call.
        case declined
        /// The callee was busy; or we answered busy.
        case busy
        /// Nobody answered within the ringing timeout.
        case noAnswer
        /// The transport failed while connecting, or stayed lost past the recovery window.
        case failed
        /// Both sides called each other at once and this call lost (the other one goes on).
        case glare
        /// Something local went wrong (an SDP we could not apply, a signal not delivered).
        case error
    }

    /// The callId the signals carry (lowercased UUID).
    public let id: String
    /// The peer's user id.
    public let peer: String
    /// Outgoing or incoming.
    public let direction: Direction
    /// What the call carries: audio, video, data.
    public var options: [RtcSignal.MediaOption]
    /// Where the call is now.
    public var state: State
    /// When it began: the dial, or the offer's arrival.
    public var startDate: Date
    /// When it first connected.
    public var connectedDate: Date?
    /// When it ended.
    public var endDate: Date?
    /// Why it ended (nil until it has).
    public var endReason: EndReason?
    /// What went wrong, for `error` (a signal that could not be sent and why, an SDP we could not use).
    public var endDetail: String?
    /// Times the connected call lost its transport, and the longest time it
    /// took to come back (seconds; an outage still going on is not counted yet).
    public var outages = 0
    /// (See `outages`.)
    public var longestOutage = 0.0
    /// When each step of the call's setup happened (the first time).
    public var timeline = CallTimeline()

    /// A call in its first state (ringing).
    public init(
        id: String, peer: String, direction: Direction, options: [RtcSignal.MediaOption], startDate: Date = Date()
    ) {
        self.id = id
        self.peer = peer
        self.direction = direction
        self.options = options
        self.state = .ringing
        self.startDate = startDate
    }

    /// Seconds connected so far (or in all, once ended); 0 if it never connected.
    public var duration: Double {
        guard let connectedDate else { return 0 }
        return (endDate ?? Date()).timeIntervalSince(connectedDate)
    }
}

/// When each step of a call's setup happened, the first time it did. Wall
/// clock, so that the timelines of two processes on one machine line up (the
/// caller's `offerSent` against the callee's `offerReceived`). The first RTP
/// packet and decoded frame of each kind are in the receivers' stats
/// (`MediaReceiver.Stats.firstPacketDate`, `firstFrameDate`).
public struct CallTimeline: Sendable, Equatable, Codable {
    /// Our first offer went to the signaling.
    public var offerSent: Date?
    /// The peer's first offer arrived.
    public var offerReceived: Date?
    /// Our answer went to the signaling.
    public var answerSent: Date?
    /// The peer's answer arrived.
    public var answerReceived: Date?
    /// ICE found a working pair.
    public var iceConnected: Date?
    /// DTLS done: the peer connection is connected and media may flow.
    public var transportConnected: Date?

    /// A timeline with no steps yet.
    public init() {}
}
