/// A session description (RFC 8866) with the attributes WebRTC uses
/// (RFC 8829 JSEP). Parse with `init(parsing:)`, write with `description`.
public struct SessionDescription: Equatable, Sendable, CustomStringConvertible {
    public struct Origin: Equatable, Sendable {
        public var username = "-"
        public var sessionId: UInt64
        public var sessionVersion: UInt64
        public var address = "127.0.0.1"

        public init(username: String = "-", sessionId: UInt64, sessionVersion: UInt64, address: String = "127.0.0.1") {
            self.username = username
            self.sessionId = sessionId
            self.sessionVersion = sessionVersion
            self.address = address
        }
    }

    /// `a=group:<semantics> <mid>...`, e.g. BUNDLE.
    public struct Group: Equatable, Sendable {
        public var semantics: String
        public var mids: [String]

        public init(semantics: String, mids: [String]) {
            self.semantics = semantics
            self.mids = mids
        }
    }

    public var origin: Origin
    public var sessionName = "-"
    public var timing = "0 0"
    public var connection: String?
    public var groups: [Group] = []
    public var msidSemantic: String?
    public var iceLite = false
    public var extmapAllowMixed = false
    /// Session-level ICE and DTLS attributes (media-level ones take precedence).
    public var iceUfrag: String?
    public var icePwd: String?
    public var iceOptions: [String] = []
    public var fingerprints: [Fingerprint] = []
    public var setup: SetupRole?
    public var otherAttributes: [Attribute] = []
    public var media: [MediaDescription] = []

    public init(origin: Origin, media: [MediaDescription] = []) {
        self.origin = origin
        self.media = media
    }

    /// The mids bundled on one transport (first BUNDLE group), or empty.
    public var bundle: [String] { groups.first { $0.semantics == "BUNDLE" }?.mids ?? [] }

    /// ICE credentials of a media section, falling back to the session level.
    public func iceCredentials(for media: MediaDescription) -> (ufrag: String, pwd: String)? {
        guard let ufrag = media.iceUfrag ?? iceUfrag, let pwd = media.icePwd ?? icePwd else { return nil }
        return (ufrag, pwd)
    }

    public func fingerprints(for media: MediaDescription) -> [Fingerprint] {
        media.fingerprints.isEmpty ? fingerprints : media.fingerprints
    }

    public func setup(for media: MediaDescription) -> SetupRole? { media.setup ?? setup }

    /// Whether the peer trickles candidates (`a=ice-options:trickle`).
    public var supportsTrickle: Bool {
        (iceOptions + media.flatMap(\.iceOptions)).contains("trickle")
    }
}
