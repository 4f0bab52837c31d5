import AsyncExtras
import FileSafety
import Foundation
import RtcCodecs
import RtcMediaFiles
import RtcPeer
import RtcRTP

/// Receives one media section: a jitter buffer puts packets in order; audio is
/// decoded with concealment of gaps; for video, missing packets are asked for
/// again (NACK), frames are joined and decoded, and a keyframe is asked for
/// (PLI) when a frame cannot be completed. With a recording directory, what arrives is
/// written as it comes: audio to `<name>.wav` (decoded) and `<name>.opus`
/// (Ogg Opus, the packets as received); video to `<name>.ivf` (VP8 frames) and
/// `<name>.y4m` (decoded pictures). Every file is valid at any moment.
///
/// Packets are handled on the thread that delivers them (the peer
/// connection's ICE thread), behind this receiver's lock: a hop to another
/// thread per packet was a thread wake-up each, and wake-ups were the largest
/// cost of a recorder after the codecs on a virtual machine. NACKs and PLIs
/// go out from the same thread, without waiting for the peer connection's actor.
public final class MediaReceiver: @unchecked Sendable {
    /// What the receiver has seen, decoded, concealed and recorded.
    public struct Stats: Sendable, Equatable, Codable {
        /// `audio` or `video`.
        public var kind: String
        /// The media section.
        public var mid: String
        /// RTP packets received.
        public var packetsReceived = 0
        /// Payload bytes received.
        public var bytesReceived = 0
        /// Packets the jitter buffer gave up.
        public var packetsLost = 0
        /// Packets that came after their gap was given up, or twice.
        public var lateOrDuplicate = 0
        /// NACK messages sent (video).
        public var nacksSent = 0
        /// Keyframe requests sent (video).
        public var plisSent = 0
        /// Frames received whole (audio: packets).
        public var framesReceived = 0
        /// Frames decoded.
        public var framesDecoded = 0
        /// Video frames dropped while waiting for a keyframe.
        public var framesDropped = 0
        /// Video keyframes received.
        public var keyframesReceived = 0
        /// Audio packets and video frames the decoder refused (video then waits for a keyframe).
        public var decodeErrors = 0
        /// Audio: 20 ms frames made up by loss concealment or FEC.
        public var concealedFrames = 0
        /// Video: pauses between decoded frames longer than max(3 × the mean interval, mean + 150 ms).
        public var freezes = 0
        /// Video: the longest pause between two decoded frames, seconds (nil before the second frame).
        public var longestFrameGap: Double?
        /// The last decoded picture's width.
        public var width = 0
        /// The last decoded picture's height.
        public var height = 0
        /// Interarrival jitter (RFC 3550 §6.4.1), seconds.
        public var jitter = 0.0
        /// Round-trip time to the sender from RTCP, seconds, if known.
        public var roundTripTime: Double?
        /// Media time received, seconds (audio from samples decoded, video from frame timestamps).
        public var seconds = 0.0
        /// The files written.
        public var recordings: [String] = []
        /// When the first RTP packet arrived, and the first frame was decoded
        /// (wall clock, for call timelines across processes).
        public var firstPacketDate: Date?
        /// (See `firstPacketDate`.)
        public var firstFrameDate: Date?
        /// Capture to decoded frame, seconds: the median and 95th percentile
        /// of the recent frames (`LatencyMeter`); nil until the sender's first report.
        public var latency: Double?
        /// (See `latency`.)
        public var latencyP95: Double?
    }

    /// Where and how a receiver records.
    public struct Recording: Sendable {
        /// The directory the files go into.
        public var directory: String
        /// The file name without extension ("audio", "video").
        public var name: String
        /// The clock the call's tracks share, so that they line up.
        public var clock: RecordingClock
        /// Which files to write.
        public var formats: Set<RecordFormat>

        /// A recording into `directory/name.*`.
        public init(
            directory: String, name: String, clock: RecordingClock, formats: Set<RecordFormat> = RecordFormat.all
        ) {
            self.directory = directory
            self.name = name
            self.clock = clock
            self.formats = formats
        }
    }

    /// WAV (decoded audio), Ogg Opus and IVF (packets as received), Y4M (decoded video).
    public enum RecordFormat: String, Sendable, CaseIterable {
        case wav, opus, ivf, y4m
        /// Every format.
        public static let all = Set(allCases)
    }

    private let peer: PeerConnection
    /// The media section it receives.
    public let mid: String
    /// Audio or video.
    public let kind: MediaKind
    private let recording: Recording?
    /// The call's one-file recording, shared with its other receivers.
    private let webm: WebmRecording?
    /// The application's decoded media, shared with the call's other receivers.
    private let sink: MediaSink?
    /// Guards everything below.
    private let lock = NSLock()
    /// Packets and time in, media and feedback out (`AudioReceivePipeline`, `VideoReceivePipeline`).
    private var pipeline: any ReceivePipeline
    /// The first audio packet's RTP timestamp and its place on the recording clock.
    private var audioStart: (timestamp: UInt32, offset: Double)?
    /// Where the first video frame sits on the recording clock.
    private var videoStartOffset: Double?
    private var ssrc: UInt32?
    private var firstPacketDate: Date?
    private var firstFrameDate: Date?
    private var senderJitter = 0.0
    private var roundTripTime: Double?
    private var tasks: [Task<Void, Never>] = []
    /// The files this track writes, one per format (`TrackRecorder`).
    private let recorders: [any TrackRecorder]
    /// The indices in `recorders` of those that failed (closed, no longer written).
    private var failedRecorders = Set<Int>()
    private var error: String?
    /// Why a file could not be written, if one could not.
    public var lastError: String? { lock.withLock { error } }
    private let started = ContinuousClock.now
    private var senderClock: SenderClock?
    private var latency = LatencyMeter()
    /// When the sender clock, jitter and RTT were last read from the peer connection (once a second).
    private var lastRefresh = -1.0

    /// A receiver for one section, recording and handing decoded frames to `sink` if given.
    public init(
        peer: PeerConnection, mid: String, kind: MediaKind, recording: Recording? = nil, webm: WebmRecording? = nil,
        sink: MediaSink? = nil
    ) {
        self.sink = sink
        self.peer = peer
        self.mid = mid
        self.kind = kind
        self.recording = recording
        self.webm = webm
        recorders = recording.map(Self.recorders(for:)) ?? []
        // A recording of received packets only (Ogg Opus, IVF) needs no decoding.
        let decodes = recording.map { !$0.formats.isDisjoint(with: [.wav, .y4m]) } ?? true
        var error: String?
        switch kind {
        case .audio:
            let decoder = decodes ? Self.made(try OpusAudioDecoder(channels: 2), or: &error) : nil
            pipeline = AudioReceivePipeline(mid: mid, decoder: decoder)
        case .video:
            let decoder = decodes ? Self.made(try Vp8VideoDecoder(), or: &error) : nil
            pipeline = VideoReceivePipeline(mid: mid, decoder: decoder)
        }
        self.error = error
    }

    /// A decoder, or nil with the reason kept in `lastError` (the track then
    /// records packets only, and says why).
    private static func made<T>(_ make: @autoclosure () throws -> T, or error: inout String?) -> T? {
        do { return try make() } catch let failure {
            error = error ?? "cannot make a decoder: \(failure)"
            return nil
        }
    }

    /// One recorder per format the recording asks for that fits the track.
    private static func recorders(for recording: Recording) -> [any TrackRecorder] {
        let base = recording.directory + "/" + recording.name
        let made: [(RecordFormat, any TrackRecorder)] = [
            (.wav, WavRecorder(path: base + ".wav")), (.opus, OggRecorder(path: base + ".opus")),
            (.ivf, IvfRecorder(path: base + ".ivf")), (.y4m, Y4mRecorder(path: base + ".y4m")),
        ]
        return made.filter { recording.formats.contains($0.0) }.map(\.1)
    }

    /// Hands media to every recorder; a failure is kept (`failed`) and the
    /// others go on. A recorder that failed is closed and left alone from then
    /// on: its file holds what was written before (a full disk), instead of a
    /// new attempt at every packet with a gap in the middle.
    private func record(_ body: (any TrackRecorder) throws(MediaFileError) -> Void) {
        for (index, recorder) in recorders.enumerated() where !failedRecorders.contains(index) {
            do { try body(recorder) } catch {
                failed(error)
                failedRecorders.insert(index)
                try? recorder.close()
            }
        }
    }

    /// Keeps the first recording or decoding failure (`lastError`); the
    /// receiver goes on with what still works. Called with `lock` held.
    private func failed(_ failure: any Error) {
        if error == nil { error = "\(failure)" }
    }

    /// A receiver for a track that records into `directory` (if any) under the
    /// track's kind, or kind-mid when another receiver already records that kind.
    public static func forTrack(
        peer: PeerConnection, mid: String, kind: MediaKind, recordInto directory: String?,
        formats: Set<RecordFormat> = RecordFormat.all, clock: RecordingClock, alongside others: [MediaReceiver],
        webm: WebmRecording? = nil, sink: MediaSink? = nil
    ) -> MediaReceiver {
        var recording: Recording?
        if let directory {
            // If this fails, opening the first file fails and says so in `lastError`.
            PrivateFiles.makeDirectory(directory)
            let name = others.contains { $0.kind == kind } ? "\(kind.rawValue)-\(mid)" : kind.rawValue
            recording = Recording(directory: directory, name: name, clock: clock, formats: formats)
        }
        return MediaReceiver(peer: peer, mid: mid, kind: kind, recording: recording, webm: webm, sink: sink)
    }

    /// Starts taking the section's packets.
    public func start() async {
        let first = lock.withLock {
            defer { running = true }
            return !running
        }
        guard first else { return }
        // Packets come to `handle` on the ICE thread; it ends with the connection or `stop`.
        peer.receiveRtp(mid: mid) { [weak self] received in self?.handle(received.packet) }
        let ticker = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: self?.nextTick ?? Self.idleTick)
                await self?.tick()
            }
        }
        lock.withLock { tasks.append(ticker) }
    }

    private var running = false

    /// How often the receiver looks at its jitter buffer while it waits for
    /// missing packets or a keyframe, and otherwise (for statistics, and to
    /// notice a stream that stopped with packets held). Packets arriving drive
    /// everything else, so an idle tick need not be fast: two receivers
    /// ticking every 20 ms were a hundred wake-ups a second.
    static let tick = Duration.milliseconds(20)
    static let idleTick = Duration.milliseconds(100)

    /// Until the next look: the tick while something is awaited, sooner when a
    /// gap is due to be given up (so it holds packets no longer than its wait).
    private var nextTick: Duration {
        lock.withLock {
            guard pipeline.isWaiting || senderClock == nil else { return Self.idleTick }
            guard let deadline = pipeline.gapDeadline else { return Self.tick }
            let seconds = min(max(deadline - now(), 0.001), Self.tick.inSeconds)
            return .microseconds(Int64(seconds * 1e6))
        }
    }

    /// On the delivering thread.
    private func handle(_ packet: RtpPacket) {
        let feedback: [ReceivedMedia] = lock.withLock {
            guard !stopped else { return [] }
            ssrc = packet.ssrc
            if firstPacketDate == nil { firstPacketDate = Date() }
            return play(pipeline.receive(packet, now: now()))
        }
        send(feedback)
    }

    private var stopped = false

    /// Stops receiving, writes what the jitter buffer still holds, and closes the files.
    public func stop() async -> Stats {
        peer.receiveRtp(mid: mid, handler: nil)
        return lock.withLock { stopLocked() }
    }

    private func stopLocked() -> Stats {
        stopped = true
        for task in tasks { task.cancel() }
        tasks = []
        _ = play(pipeline.flush())
        record { recorder throws(MediaFileError) in try recorder.close() }
        return snapshot()
    }

    /// A snapshot of the statistics.
    public func currentStats() async -> Stats { lock.withLock { snapshot() } }

    private func snapshot() -> Stats {
        var snapshot = pipeline.stats
        snapshot.firstPacketDate = firstPacketDate
        snapshot.firstFrameDate = firstFrameDate
        snapshot.jitter = senderJitter
        snapshot.roundTripTime = roundTripTime
        snapshot.recordings = recorders.compactMap(\.path)
        snapshot.latency = latency.median
        snapshot.latencyP95 = latency.p95
        return snapshot
    }

    private func now() -> Double {
        (ContinuousClock.now - started).inSeconds
    }

    private func tick() async {
        let (ssrc, refresh, feedback): (UInt32?, Bool, [ReceivedMedia]) = lock.withLock {
            guard !stopped else { return (nil, false, []) }
            let time = now()
            let feedback = play(pipeline.advance(now: time))
            let refresh = senderClock == nil || time - lastRefresh >= 1
            if refresh { lastRefresh = time }
            return (self.ssrc, refresh, feedback)
        }
        guard let ssrc else { return }
        if refresh {
            let clock = await peer.senderClock(ssrc: ssrc)
            let peerStats = await peer.stats()
            lock.withLock {
                senderClock = clock
                senderJitter = peerStats.inbound.first { $0.ssrc == ssrc }?.jitter ?? senderJitter
                roundTripTime = peerStats.roundTripTime
                pipeline.roundTrip = peerStats.roundTripTime
            }
        }
        send(feedback)
    }

    /// Sends feedback at once, on this thread, after the lock (the peer
    /// connection never waits for its actor here).
    private func send(_ feedback: [ReceivedMedia]) {
        for case .feedback(let ssrc, let nacks, let keyframe) in feedback {
            peer.sendFeedback(mid: mid, mediaSsrc: ssrc, lost: nacks, keyframe: keyframe)
        }
    }

    /// Writes, records and delivers what the pipeline gave out; returns the
    /// feedback to send once the lock is released. Under the lock.
    private func play(_ media: [ReceivedMedia]) -> [ReceivedMedia] {
        var feedback: [ReceivedMedia] = []
        for item in media {
            switch item {
            case .audioStarts(let timestamp):
                guard let recording else { continue }
                let lead = recording.clock.offset(of: wallclock(timestamp, clockRate: 48000))
                record { recorder throws(MediaFileError) in try recorder.audioStarts(leadSeconds: lead) }
            case .opus(let payload, let timestamp):
                record { recorder throws(MediaFileError) in try recorder.opus(payload) }
                writeWebm(audio: payload, timestamp: timestamp)
            case .pcm(let pcm):
                sink?.deliver(audio: AudioFrame(samples: pcm, channels: 2, sampleRate: 48000), mid: mid)
                record { recorder throws(MediaFileError) in try recorder.pcm(pcm) }
            case .vp8(let data, let timestamp, let keyframe, let mediaSeconds):
                writeVideo(data, timestamp: timestamp, keyframe: keyframe, mediaSeconds: mediaSeconds)
            case .picture(let picture, let timestamp):
                sink?.deliver(video: picture, mid: mid)
                record { recorder throws(MediaFileError) in try recorder.picture(picture, timestamp: timestamp) }
            case .decoded(let timestamp):
                if firstFrameDate == nil { firstFrameDate = Date() }
                noteLatency(timestamp, clockRate: kind == .audio ? 48000 : 90000)
            case .feedback: feedback.append(item)
            }
        }
        return feedback
    }

    private func writeWebm(audio payload: [UInt8], timestamp: UInt32) {
        guard let webm else { return }
        let start = audioStart ?? (timestamp, webm.clock.offset(of: wallclock(timestamp, clockRate: 48000)))
        audioStart = start
        let media = Double(Int32(bitPattern: timestamp &- start.timestamp)) / 48000
        webm.write(.audio, payload, seconds: start.offset + media, keyframe: true)
    }

    private func writeVideo(_ data: [UInt8], timestamp: UInt32, keyframe: Bool, mediaSeconds: Double) {
        let offset =
            videoStartOffset
            ?? (recording?.clock ?? webm?.clock).map { max(0, $0.offset(of: wallclock(timestamp, clockRate: 90000))) }
            ?? 0
        videoStartOffset = offset
        webm?.write(.video, data, seconds: offset + mediaSeconds, keyframe: keyframe)
        let milliseconds = UInt64(max(0, (offset + mediaSeconds) * 1000))
        record { recorder throws(MediaFileError) in
            try recorder.vp8(data, milliseconds: milliseconds, keyframe: keyframe)
        }
    }

    /// A frame decoded now: how long after its capture (once the sender's clock is known).
    private func noteLatency(_ timestamp: UInt32, clockRate: Double) {
        guard let clock = senderClock else { return }
        latency.note(Date().timeIntervalSince1970 - clock.wallclock(of: timestamp, clockRate: clockRate))
    }

    /// The sender's wallclock for an RTP timestamp (from its last sender report,
    /// refreshed by the ticker), or the arrival time if no report came yet.
    private func wallclock(_ timestamp: UInt32, clockRate: Double) -> Double {
        if let clock = senderClock { return clock.wallclock(of: timestamp, clockRate: clockRate) }
        return Date().timeIntervalSince1970
    }
}
