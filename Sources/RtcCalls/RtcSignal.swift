import Foundation

/// One call signal, the JSON object the reference peers exchange (carrier wire
/// notes §7): `type`, `sdp`, `candidates`, `reason`, `options`, `action`,
/// `callId`, `event`. Decoding accepts what real peers send: Android's
/// `removal-candidates`, a numeric bye reason, a callId in any letter case, a
/// trailing NUL, unknown fields.
public struct RtcSignal: Codable, Sendable, Equatable {
    /// The signal's `type`.
    public enum SignalType: String, Codable, Sendable {
        case offer, answer, candidate
        case removeCandidates = "remove-candidates"
        case prAnswer, bye, action, event
    }

    /// One ICE candidate as the W3C RTCIceCandidateInit gives it.
    public struct Candidate: Codable, Sendable, Equatable {
        /// The candidate line (`candidate:…`).
        public var sdp: String
        /// The index of its media section.
        public var sdpMLineIndex: Int
        /// The mid of its media section.
        public var sdpMid: String?

        /// A candidate for a section.
        public init(sdp: String, sdpMLineIndex: Int, sdpMid: String?) {
            self.sdp = sdp
            self.sdpMLineIndex = sdpMLineIndex
            self.sdpMid = sdpMid
        }

        enum CodingKeys: String, CodingKey { case sdp, sdpMLineIndex, sdpMid }

        /// Some peers leave out the index or the mid; the first section is meant.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            sdp = try container.decodeIfPresent(String.self, forKey: .sdp) ?? ""
            sdpMLineIndex = (try? container.decodeIfPresent(Int.self, forKey: .sdpMLineIndex)) ?? 0
            sdpMid = try? container.decodeIfPresent(String.self, forKey: .sdpMid)
        }
    }

    /// The callee's decision (`action`).
    public enum Action: String, Codable, Sendable { case accept, reject }
    /// A call event (`event`): the callee is ringing, …
    public enum Event: String, Codable, Sendable { case ringing, online, connectToRoom }

    /// Why a call ended (bye `reason`). iOS and web send strings; Android sends
    /// -1 (reject), 0 (normal) or 1 (error), mapped here to declined, normal, error.
    public enum Reason: String, Codable, Sendable {
        case normal, declined, busy, close, unknown, error, timeout, failed
    }

    /// What a call carries (`options`).
    public enum MediaOption: String, Codable, Sendable { case audio, video, data }

    /// What kind of signal it is.
    public var type: SignalType
    /// An offer's or answer's SDP.
    public var sdp: String?
    /// Candidates (`candidate`, `remove-candidates`).
    public var candidates: [Candidate]?
    /// Why (`bye`).
    public var reason: Reason?
    /// What the call carries (an offer's).
    public var options: [MediaOption]?
    /// The callee's decision (`action`).
    public var action: Action?
    /// The call it belongs to.
    public var callId: String?
    /// The event (`event`).
    public var event: Event?

    /// A signal with the fields its type uses.
    public init(
        type: SignalType, sdp: String? = nil, candidates: [Candidate]? = nil, reason: Reason? = nil,
        options: [MediaOption]? = nil, action: Action? = nil, callId: String? = nil, event: Event? = nil
    ) {
        self.type = type
        self.sdp = sdp
        self.candidates = candidates
        self.reason = reason
        self.options = options
        self.action = action
        self.callId = callId
        self.event = event
    }

    enum CodingKeys: String, CodingKey { case type, sdp, candidates, reason, options, action, callId, event }

    /// Decodes tolerantly: unknown fields are ignored, variants mapped (see the type's comment).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let typeName = try container.decode(String.self, forKey: .type)
        guard let type = SignalType(rawValue: typeName == "removal-candidates" ? "remove-candidates" : typeName)
        else {
            throw DecodingError.dataCorruptedError(
                forKey: .type, in: container, debugDescription: "unknown signal type \(typeName)")
        }
        self.type = type
        sdp = try container.decodeIfPresent(String.self, forKey: .sdp)
        candidates = try container.decodeIfPresent([Candidate].self, forKey: .candidates)
        if let number = try? container.decodeIfPresent(Int.self, forKey: .reason) {
            reason = number < 0 ? .declined : number == 0 ? .normal : .error
        } else if let text = try? container.decodeIfPresent(String.self, forKey: .reason) {
            reason = Reason(rawValue: text) ?? .unknown
        }
        // Unknown option names are skipped, not fatal.
        options = (try? container.decodeIfPresent([String].self, forKey: .options))?.compactMap(MediaOption.init)
        action = (try? container.decodeIfPresent(String.self, forKey: .action)).flatMap { $0.flatMap(Action.init) }
        callId = try container.decodeIfPresent(String.self, forKey: .callId)
        event = (try? container.decodeIfPresent(String.self, forKey: .event)).flatMap { $0.flatMap(Event.init) }
    }

    /// The callId compared without letter case (the native Beagle app echoes it upper-case).
    public func sameCall(_ id: String) -> Bool { callId?.lowercased() == id.lowercased() }

    /// Decodes one signal from the bytes of an invite or a line; a trailing NUL
    /// (native bindings add one) and surrounding whitespace are ignored.
    public static func decode(_ bytes: [UInt8]) throws(SignalError) -> RtcSignal {
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0 || bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        guard end > 0 else { throw .undecodable("empty signal") }
        do { return try JSONDecoder().decode(RtcSignal.self, from: Data(bytes[0..<end])) } catch {
            throw .undecodable("not an RtcSignal: \(Self.describe(error))")
        }
    }

    /// The JSON as the reference peers send it (sorted keys).
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? Array(encoder.encode(self))) ?? []
    }

    /// Encodes and decodes one signal of every shape, so that the first real
    /// one does not pay for Foundation's one-time JSON and Codable set-up
    /// (measured: 0.3 ms to encode and 0.5-0.8 ms to decode the first
    /// signal, on the path of every connection's setup). Call it on a
    /// background thread while waiting for the first signal.
    public static func prepareCoding() {
        let samples = [
            RtcSignal(type: .offer, sdp: "v=0"),
            RtcSignal(type: .candidate, candidates: [.init(sdp: "candidate:1", sdpMLineIndex: 0, sdpMid: "0")]),
            RtcSignal(type: .bye, reason: .normal),
        ]
        for sample in samples { _ = try? decode(sample.encoded()) }
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context), DecodingError.typeMismatch(_, let context),
            DecodingError.valueNotFound(_, let context):
            return context.debugDescription
        case DecodingError.keyNotFound(let key, _):
            return "no \(key.stringValue) field"
        default:
            return "\(error)"
        }
    }
}

/// Why a signal could not be read or sent.
public enum SignalError: Error, Equatable, Sendable, CustomStringConvertible {
    case undecodable(String)
    case tooLarge(Int)
    case notDelivered(String)

    /// What went wrong, in words for a log or a user.
    public var description: String {
        switch self {
        case .undecodable(let why): "signal: \(why)"
        case .tooLarge(let size):
            "signal: \(size) bytes does not fit an 8 KB invite, even without candidates in the SDP"
        case .notDelivered(let why): "signal not delivered: \(why)"
        }
    }
}
