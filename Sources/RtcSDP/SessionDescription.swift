/// A session description (RFC 8866) with the attributes WebRTC uses
/// (RFC 8829 JSEP). Parse with `init(parsing:)`, write with `description`.
public struct SessionDescription: Equatable, Sendable, CustomStringConvertible {
    /// The `o=` line: who made the description, and its version.
    public struct Origin: Equatable, Sendable {
        /// `-` in WebRTC.
        public var username = "-"
        /// Random, fixed for the session.
        public var sessionId: UInt64
        /// Goes up with each new description of the session.
        public var sessionVersion: UInt64
        /// Not used by WebRTC.
        public var address = "127.0.0.1"

        /// An origin line.
        public init(username: String = "-", sessionId: UInt64, sessionVersion: UInt64, address: String = "127.0.0.1") {
            self.username = username
            self.sessionId = sessionId
            self.sessionVersion = sessionVersion
            self.address = address
        }
    }

    /// `a=group:<semantics> <mid>...`, e.g. BUNDLE.
    public struct Group: Equatable, Sendable {
        /// `BUNDLE`, …
        public var semantics: String
        /// The sections grouped, by mid.
        public var mids: [String]

        /// One `a=group` line.
        public init(semantics: String, mids: [String]) {
            self.semantics = semantics
            self.mids = mids
        }
    }

    /// The `o=` line.
    public var origin: Origin
    /// The `s=` line (`-`).
    public var sessionName = "-"
    /// The `t=` line (`0 0`).
    public var timing = "0 0"
    /// A session-level `c=` line, if any.
    public var connection: String?
    /// `a=group` lines.
    public var groups: [Group] = []
    /// `a=msid-semantic`, as written.
    public var msidSemantic: String?
    /// `a=ice-lite`: the peer only answers checks.
    public var iceLite = false
    /// `a=extmap-allow-mixed` (RFC 8285 §6).
    public var extmapAllowMixed = false
    /// Session-level ICE and DTLS attributes (media-level ones take precedence).
    public var iceUfrag: String?
    /// (See `iceUfrag`.)
    public var icePwd: String?
    /// Session-level `a=ice-options`.
    public var iceOptions: [String] = []
    /// Session-level `a=fingerprint` lines.
    public var fingerprints: [Fingerprint] = []
    /// Session-level `a=setup`.
    public var setup: SetupRole?
    /// Every other session attribute, in order.
    public var otherAttributes: [Attribute] = []
    /// The `m=` sections, in order.
    public var media: [MediaDescription] = []

    /// A description with an origin and its sections.
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

    /// The fingerprints that apply to a section: its own, else the session's.
    public func fingerprints(for media: MediaDescription) -> [Fingerprint] {
        media.fingerprints.isEmpty ? fingerprints : media.fingerprints
    }

    /// The DTLS role that applies to a section: its own, else the session's.
    public func setup(for media: MediaDescription) -> SetupRole? { media.setup ?? setup }

    /// Whether the peer trickles candidates (`a=ice-options:trickle`).
    public var supportsTrickle: Bool {
        (iceOptions + media.flatMap(\.iceOptions)).contains("trickle")
    }
}
