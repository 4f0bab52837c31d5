import RtcCodecs

/// Pictures to VP8 for sources that learn the picture size only as pictures
/// come (a container's decoder, an application): an encoder per size, at
/// about 0.06 bit per pixel per frame (200 kbit/s to 2.5 Mbit/s, about where
/// browsers start) unless a bitrate is given, and a keyframe when one was
/// asked for. Used by its source's one sender thread.
final class PictureEncoder {
    private let framesPerSecond: Int
    private let bitrate: Int?
    private var encoder: Vp8VideoEncoder?
    private(set) var framesEncoded = 0
    /// The next picture is made a keyframe (a peer's request, a rewind).
    var keyframeWanted = false

    init(framesPerSecond: Int, bitrate: Int?) {
        self.framesPerSecond = max(framesPerSecond, 1)
        self.bitrate = bitrate
    }

    /// The picture as one VP8 frame at `time`; nil when the rate control skipped it.
    func encode(_ picture: VideoFrame, time: Double) throws -> EncodedSample? {
        let encoder = try encoder(for: picture)
        let forced = keyframeWanted
        keyframeWanted = false
        let encoded = try picture.data.withUnsafeBytes { try encoder.encode(i420: $0, keyframe: forced) }
        framesEncoded += 1
        guard let head = encoded.first else { return nil }
        return EncodedSample(data: encoded.flatMap(\.data), time: time, isKeyframe: head.isKeyframe)
    }

    /// The encoder for this picture size (made at the first picture; a new size makes a new one).
    private func encoder(for picture: VideoFrame) throws -> Vp8VideoEncoder {
        if let encoder, encoder.settings.width == picture.width, encoder.settings.height == picture.height {
            return encoder
        }
        let pixelsPerSecond = Double(picture.width * picture.height * framesPerSecond)
        let rate = bitrate ?? min(max(Int(pixelsPerSecond * 0.06), 200_000), 2_500_000)
        let made = try Vp8VideoEncoder(
            .init(
                width: picture.width, height: picture.height, framesPerSecond: framesPerSecond, bitrate: rate,
                keyframeInterval: framesPerSecond * 10))
        encoder = made
        return made
    }
}
