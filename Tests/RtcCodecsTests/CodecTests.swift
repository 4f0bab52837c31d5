import Foundation
import RtcCodecs
import TestSupport
import Testing

@Suite struct OpusTests {
    static func tone(seconds: Double, left: Double, right: Double) -> [Int16] {
        let frames = Int(seconds * 48000)
        var samples = [Int16](repeating: 0, count: frames * 2)
        for index in 0..<frames {
            let t = Double(index) / 48000
            samples[index * 2] = Int16(8000 * sin(2 * .pi * left * t))
            samples[index * 2 + 1] = Int16(8000 * sin(2 * .pi * right * t))
        }
        return samples
    }

    @Test func stereoToneSurvivesEncodeAndDecode() throws {
        let encoder = try OpusAudioEncoder(.init(channels: 2, bitrate: 64000))
        let decoder = try OpusAudioDecoder(channels: 2)
        let source = Self.tone(seconds: 1, left: 440, right: 660)
        var decoded: [Int16] = []
        for start in stride(from: 0, to: source.count, by: 1920) {
            let packet = try encoder.encode(Array(source[start..<start + 1920]))
            #expect(OpusAudioDecoder.frameSamples(of: packet) == 960)
            decoded += try decoder.decode(packet)
        }
        let audio = AudioFrame(samples: decoded, channels: 2, sampleRate: 48000)
        #expect(audio.frameCount == 48000)
        #expect(MediaChecks.tonePower(audio, channel: 0, frequency: 440) > 0.8)
        #expect(MediaChecks.tonePower(audio, channel: 1, frequency: 660) > 0.8)
        #expect(MediaChecks.tonePower(audio, channel: 0, frequency: 660) < 0.05)
    }

    @Test func lossIsConcealedAndFecRecoversAFrame() throws {
        let encoder = try OpusAudioEncoder(.init(channels: 2, bitrate: 64000, inbandFec: true, expectedLossPercent: 20))
        let decoder = try OpusAudioDecoder(channels: 2)
        let source = Self.tone(seconds: 0.2, left: 440, right: 440)
        let packets = try stride(from: 0, to: source.count, by: 1920).map {
            try encoder.encode(Array(source[$0..<$0 + 1920]))
        }
        _ = try decoder.decode(packets[0])
        let concealed = decoder.recover(lost: 960, next: packets[2])
        #expect(concealed.count == 1920)
        #expect(concealed.contains { $0 != 0 })  // not silence: PLC or FEC filled it
        #expect(try decoder.decode(packets[2]).count == 1920)
    }

    @Test func badInputIsAnError() throws {
        let decoder = try OpusAudioDecoder(channels: 1)
        #expect(throws: CodecError.self) { try decoder.decode([]) }
        #expect(throws: CodecError.self) { try OpusAudioEncoder(.init(channels: 3)) }
        #expect(OpusAudioDecoder.frameSamples(of: []) == nil)
    }
}

@Suite struct Vp8Tests {
    /// A moving gradient: enough structure for the encoder to work on.
    static func picture(_ index: Int, width: Int = 160, height: Int = 120) -> VideoFrame {
        var frame = VideoFrame.grey(width: width, height: height)
        for y in 0..<height {
            for x in 0..<width { frame.data[y * width + x] = UInt8(truncatingIfNeeded: x * 2 + y + index * 3) }
        }
        return frame
    }

    @Test func encodeDecodeKeepsThePicture() throws {
        let encoder = try Vp8VideoEncoder(.init(width: 160, height: 120, framesPerSecond: 30, bitrate: 800_000))
        let decoder = try Vp8VideoDecoder()
        var psnrs: [Double] = []
        var keyframes = 0
        for index in 0..<30 {
            let source = Self.picture(index)
            for encoded in try encoder.encode(source, keyframe: index == 20) {
                if encoded.isKeyframe { keyframes += 1 }
                if let picture = try decoder.decode(encoded.data) {
                    psnrs.append(picture.lumaPsnr(against: source) ?? 0)
                }
            }
        }
        #expect(psnrs.count == 30)
        #expect(keyframes == 2)  // the first frame and the forced one
        #expect(psnrs.reduce(0, +) / Double(psnrs.count) > 30)
    }

    @Test func oddSizesAndGarbageAreErrors() throws {
        #expect(throws: CodecError.self) { try Vp8VideoEncoder(.init(width: 161, height: 120)) }
        let decoder = try Vp8VideoDecoder()
        #expect(throws: CodecError.self) { try decoder.decode([1, 2, 3, 4, 5]) }
    }
}

@Suite struct Vp8PayloadTests {
    @Test func framesSplitAndJoinWithPictureIds() throws {
        let frame = (0..<3000).map { UInt8(truncatingIfNeeded: $0) }
        let payloads = Vp8Payload.packetize(frame, pictureId: 0x1234, maxPayloadSize: 1200)
        #expect(payloads.count == 3 && payloads.allSatisfy { $0.count <= 1200 })
        let first = try Vp8Payload.descriptor(payloads[0])
        #expect(first.startsFrame && first.pictureId == 0x1234 && first.length == 4)
        #expect(try !Vp8Payload.descriptor(payloads[1]).startOfPartition)
        #expect(try Vp8Payload.depacketize(payloads) == frame)
        // A frame must start with partition 0's first packet.
        #expect(throws: CodecError.self) { try Vp8Payload.depacketize(Array(payloads.dropFirst())) }
    }

    /// Descriptors as other stacks write them (RFC 7741 §4.2 examples): no
    /// extension, a 7-bit picture id, and L/T/K fields.
    @Test func descriptorVariantsParse() throws {
        #expect(try Vp8Payload.descriptor([0x10, 0x9D]).length == 1)
        let short = try Vp8Payload.descriptor([0x90, 0x80, 0x05, 0x9D])
        #expect(short.pictureId == 5 && short.length == 3)
        let full = try Vp8Payload.descriptor([0x90, 0xF0, 0x81, 0x02, 0x07, 0x40, 0x9D])
        #expect(full.pictureId == 0x102 && full.length == 6)
        #expect(throws: CodecError.self) { try Vp8Payload.descriptor([0x90, 0x80]) }
        #expect(throws: CodecError.self) { try Vp8Payload.descriptor([]) }
        // Keyframe: the P bit (bit 0 of the first VP8 byte) is clear.
        #expect(Vp8Payload.startsKeyframe([0x90, 0x80, 0x05, 0x9C]))
        #expect(!Vp8Payload.startsKeyframe([0x90, 0x80, 0x05, 0x9D]))
    }

    /// The picture size comes from a real encoder's keyframe; a delta frame,
    /// a wrong start code or a cut header give none.
    @Test func keyframeSizeIsReadFromTheHeader() throws {
        let encoder = try Vp8VideoEncoder(.init(width: 320, height: 176, framesPerSecond: 30, bitrate: 300_000))
        let frames = try (0..<2).flatMap { try encoder.encode(Vp8Tests.picture($0, width: 320, height: 176)) }
        let keyframe = try #require(frames.first { $0.isKeyframe })
        let size = try #require(Vp8Payload.keyframeSize(keyframe.data))
        #expect(size.width == 320 && size.height == 176)
        #expect(frames.filter { !$0.isKeyframe }.allSatisfy { Vp8Payload.keyframeSize($0.data) == nil })
        var badStartCode = keyframe.data
        badStartCode[4] = 0x02
        #expect(Vp8Payload.keyframeSize(badStartCode) == nil)
        #expect(Vp8Payload.keyframeSize(Array(keyframe.data.prefix(9))) == nil)
        // The top two bits of each field are a scale hint, not size.
        var scaled = keyframe.data
        scaled[7] |= 0xC0
        #expect(Vp8Payload.keyframeSize(scaled)?.width == 320)
    }
}
