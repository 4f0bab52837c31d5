import RtcMedia
import RtcPeer

/// What a call sends and where it records, chosen per call.
public struct CallMedia: Sendable, Equatable {
    /// Audio to send: the audio track of any file libavformat reads (WAV, Ogg
    /// Opus, MP3, FLAC, MP4, MKV, WebM, …); nil sends none (the section still receives).
    public var audio: String?
    /// Video to send: Y4M, IVF, or the video track of any file libavformat reads.
    public var video: String?
    /// Seconds into the files to start from.
    public var start: Double = 0
    /// Play the files again at their end.
    public var loop: Bool
    /// Seconds of media to send, then the senders stop (nil: the whole files, or for ever with `loop`).
    public var duration: Double?
    /// Send every data-channel message straight back (a test peer, `carrier rtc --echo`).
    public var echo = false
    /// Record what the peer sends: a directory (one file per track, named by
    /// kind), or a path ending in `.webm` (one WebM with both tracks as received).
    public var recordDirectory: String?

    /// The recording is one WebM file.
    public var recordsWebm: Bool { recordDirectory?.lowercased().hasSuffix(".webm") == true }

    /// For a WebM recording: the file, made when the first track arrives,
    /// expecting the kinds this side receives; nil otherwise.
    public func webmRecording(on peer: PeerConnection, clock: RecordingClock) async throws -> WebmRecording? {
        guard recordsWebm, let path = recordDirectory else { return nil }
        let kinds = await peer.transceiverInfos.filter { $0.direction == .sendrecv || $0.direction == .recvonly }
            .map(\.kind)
        return try WebmRecording(path: path, kinds: Set(kinds), clock: clock)
    }
    /// Which files a recording writes (WAV, Ogg Opus, IVF, Y4M).
    public var recordFormats: Set<MediaReceiver.RecordFormat>
    /// Where files the peer sends over the data channel are saved (nil refuses them).
    public var receiveDirectory: String?
    /// Audio and video the application makes itself (instead of files), and
    /// where the peer's decoded media goes for it.
    public var liveAudio: LiveAudioSource?
    /// (See `liveAudio`.)
    public var liveVideo: LiveVideoSource?
    /// Where decoded audio and pictures go, for the application.
    public var sink: MediaSink?

    /// Equal files and options, and the same live sources and sink.
    public static func == (lhs: CallMedia, rhs: CallMedia) -> Bool {
        lhs.audio == rhs.audio && lhs.video == rhs.video && lhs.start == rhs.start && lhs.loop == rhs.loop
            && lhs.duration == rhs.duration && lhs.echo == rhs.echo
            && lhs.recordDirectory == rhs.recordDirectory && lhs.recordFormats == rhs.recordFormats
            && lhs.receiveDirectory == rhs.receiveDirectory && lhs.liveAudio === rhs.liveAudio
            && lhs.liveVideo === rhs.liveVideo && lhs.sink === rhs.sink
    }

    /// Whether this side sends media of `kind` (a file or a live source).
    public func sends(_ kind: MediaKind) -> Bool {
        file(for: kind) != nil || (kind == .audio ? liveAudio != nil : liveVideo != nil)
    }

    /// Files to send, where to record and where to save received files; nothing by default.
    public init(
        audio: String? = nil, video: String? = nil, loop: Bool = false, recordDirectory: String? = nil,
        recordFormats: Set<MediaReceiver.RecordFormat> = MediaReceiver.RecordFormat.all,
        receiveDirectory: String? = nil
    ) {
        self.audio = audio
        self.video = video
        self.loop = loop
        self.recordDirectory = recordDirectory
        self.recordFormats = recordFormats
        self.receiveDirectory = receiveDirectory
    }

    /// Opens the files to send (a file that cannot be read is an error now, not
    /// silence later); done before a call is placed or accepted, so that media
    /// starts as soon as the call connects.
    public func openSources() throws -> [MediaKind: any MediaSource] {
        var sources: [MediaKind: any MediaSource] = [:]
        for kind in [MediaKind.audio, .video] {
            if kind == .audio, let liveAudio {
                sources[kind] = liveAudio
            } else if kind == .video, let liveVideo {
                sources[kind] = liveVideo
            } else if let path = file(for: kind) {
                sources[kind] = try MediaSources.open(path, kind: kind, start: start)
            }
        }
        return sources
    }

    /// The file this side sends on a section of `kind`, if any.
    public func file(for kind: MediaKind) -> String? { kind == .audio ? audio : video }

    /// A receiver for a track the peer sends on `mid`, recording as these
    /// options say; nil if `receivers` has one for that section already.
    public func receiver(
        forTrack mid: String, kind: MediaKind, peer: PeerConnection, clock: RecordingClock,
        alongside receivers: [MediaReceiver], webm: WebmRecording? = nil
    ) -> MediaReceiver? {
        guard !receivers.contains(where: { $0.mid == mid }) else { return nil }
        return MediaReceiver.forTrack(
            peer: peer, mid: mid, kind: kind, recordInto: recordsWebm ? nil : recordDirectory, formats: recordFormats,
            clock: clock, alongside: receivers, webm: webm, sink: sink)
    }

    /// Between the peer's offer and our answer: sections we have nothing to send on only receive.
    public func receiveOnlyWhereNothingToSend(on peer: PeerConnection) async {
        for info in await peer.transceiverInfos where !sends(info.kind) {
            await peer.setDirection(.recvonly, mid: info.mid)
        }
    }
}
