// Media an application makes and takes itself, no files: the caller pushes a
// tone and a moving picture it draws in code; the callee takes the decoded
// audio and pictures through a sink and prints the audio level and frame
// rate it gets. Two call clients in one process, signaling in memory.
//
//   swift run live-media [SECONDS]
import Foundation
import RtcCalls
import RtcCodecs
import RtcMedia
import RtcPeer

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

let seconds = Double(CommandLine.arguments.dropFirst().first ?? "") ?? 3
let (aliceSignals, bobSignals) = InMemorySignaling.pair("alice", "bob")
let loopback = CallClient.Configuration(peer: PeerConfiguration(localAddresses: ["127.0.0.1"]))
let alice = CallClient(provider: aliceSignals, configuration: loopback)
let bob = CallClient(provider: bobSignals, configuration: loopback)
await alice.start()
await bob.start()

/// What the callee's sink saw; the sink's callbacks run on its own queue.
final class Meter: @unchecked Sendable {
    let lock = NSLock()
    var sumOfSquares = 0.0
    var samples = 0
    var pictures = 0
    var size = ""
}
let meter = Meter()
let sink = MediaSink(
    onAudio: { audio, _ in
        meter.lock.withLock {
            for sample in audio.samples { meter.sumOfSquares += Double(sample) * Double(sample) }
            meter.samples += audio.samples.count
        }
    },
    onVideo: { picture, _ in
        meter.lock.withLock {
            meter.pictures += 1
            meter.size = "\(picture.width)x\(picture.height)"
        }
    })

// Bob answers with the sink; Alice calls with live sources.
let bobEvents = await bob.events()
let aliceEvents = await alice.events()
Task {
    for await case .incoming(let call) in bobEvents {
        var media = CallMedia()
        media.sink = sink
        try? await bob.accept(call.id, media: media)
    }
}
let audio = try LiveAudioSource(channels: 1)
let video = LiveVideoSource(framesPerSecond: 30)
var media = CallMedia()
media.liveAudio = audio
media.liveVideo = video
let call = try await alice.makeCall(to: "bob", options: [.audio, .video], media: media)
for await case .stateChanged(let current) in aliceEvents where current.id == call.id && current.state == .connected {
    break
}
say("connected; sending \(seconds) s of a 440 Hz tone and a moving square")

// The generator: 20 ms of tone and a picture every 33 ms, in real time.
let started = Date()
var sent = (samples: 0, pictures: 0)
while Date().timeIntervalSince(started) < seconds {
    let elapsed = Date().timeIntervalSince(started)
    while Double(sent.samples) / 48000 < elapsed + 0.1 {
        audio.push((0..<960).map { Int16(8000 * sin(2 * .pi * 440 * Double(sent.samples + $0) / 48000)) })
        sent.samples += 960
    }
    while Double(sent.pictures) / 30 < elapsed {
        var picture = VideoFrame.grey(width: 320, height: 240)
        let left = (sent.pictures * 4) % 280
        for y in 100..<140 { for x in left..<left + 40 { picture.data[y * 320 + x] = 235 } }
        video.push(picture)
        sent.pictures += 1
    }
    try await Task.sleep(for: .milliseconds(5))
}
try await alice.endCall(call.id)
for await case .ended in aliceEvents { break }
await sink.flush()  // the sink's last callbacks have run

let (level, pictures, size) = meter.lock.withLock { () -> (Double, Int, String) in
    let rms = meter.samples > 0 ? (meter.sumOfSquares / Double(meter.samples)).squareRoot() : 0
    return (rms > 0 ? 20 * log10(rms / 32768) : -120, meter.pictures, meter.size)
}
say(
    "bob heard audio at \(String(format: "%.1f", level)) dBFS and saw \(pictures) pictures (\(String(format: "%.1f", Double(pictures) / seconds)) fps, \(size)); the sink dropped \(sink.dropped)"
)
await alice.stop()
await bob.stop()
