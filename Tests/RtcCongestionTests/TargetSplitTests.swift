import RtcCongestion
import Testing

@Suite struct TargetSplitTests {
    /// Audio first, up to 64 kbit/s each; alone it may take the whole target,
    /// beside video half of it at most.
    @Test func audioComesFirstWithinItsCap() {
        #expect(TargetSplit(target: 40_000, audioTracks: 1, videoTracks: 0, repairs: 0).audioEach == 40_000)
        #expect(TargetSplit(target: 500_000, audioTracks: 1, videoTracks: 0, repairs: 0).audioEach == 64_000)
        let tight = TargetSplit(target: 80_000, audioTracks: 1, videoTracks: 1, repairs: 0)
        #expect(tight.audioEach == 40_000)
        #expect(tight.videoEach == 40_000)
        let two = TargetSplit(target: 1_000_000, audioTracks: 2, videoTracks: 2, repairs: 0)
        #expect(two.audioEach == 64_000)
        #expect(two.videoEach == 436_000)
    }

    /// What retransmissions took comes out of the video's share.
    @Test func repairsComeOutOfTheVideo() {
        let split = TargetSplit(target: 400_000, audioTracks: 1, videoTracks: 1, repairs: 100_000)
        #expect(split.audioEach == 64_000)
        #expect(split.videoEach == 236_000)
    }

    /// A burst of loss whose repairs filled the target for a second leaves the
    /// video half its share, not the floor (which froze a 400 kbit/s call's
    /// picture for 0.87 s in the lab).
    @Test func repairsTakeAtMostHalfTheVideo() {
        let burst = TargetSplit(target: 411_000, audioTracks: 1, videoTracks: 1, repairs: 411_000)
        #expect(burst.videoEach == (411_000 - 64_000) / 2)
        #expect(TargetSplit(target: 411_000, audioTracks: 1, videoTracks: 1, repairs: 200_000).videoEach == 173_500)
        #expect(TargetSplit(target: 411_000, audioTracks: 1, videoTracks: 1, repairs: 150_000).videoEach == 197_000)
    }

    /// However small the target, each video track keeps 30 kbit/s, and nothing goes negative.
    @Test func videoKeepsItsFloor() {
        let small = TargetSplit(target: 50_000, audioTracks: 1, videoTracks: 2, repairs: 50_000)
        #expect(small.audioEach == 25_000)
        #expect(small.videoEach == TargetSplit.videoFloor)
        let none = TargetSplit(target: -1, audioTracks: 1, videoTracks: 1, repairs: -5)
        #expect(none.audioEach == 0)
        #expect(none.videoEach == TargetSplit.videoFloor)
    }

    /// The packets' headers come out of each share: at 400 kbit/s, audio's
    /// 50 packets of 62 header bytes leave Opus its 64 kbit/s within 88.8
    /// kbit/s of link, and video's packets (a frame's worth at least, one per
    /// 1,200 payload bytes) leave its encoder what its headers do not take.
    @Test func headersComeOutOfTheShares() {
        let split = TargetSplit(target: 400_000, audioTracks: 1, videoTracks: 1, repairs: 0, packetOverhead: 62)
        #expect(split.audioEach == 64_000)
        let video = split.videoEach
        let videoPackets = TargetSplit.videoPacketsPerSecond(media: video)
        // Media plus headers fill the target exactly.
        let link = 64_000 + 50 * 62 * 8 + video + videoPackets * 62 * 8
        #expect(abs(link - 400_000) < 1, "\(link) bit/s on the link")
        #expect(video > 280_000 && video < 295_000, "video \(video)")
        // Small frames are a packet each: at 150 kbit/s the video's 30 packets' headers come out.
        let small = TargetSplit(target: 150_000, audioTracks: 1, videoTracks: 1, repairs: 0, packetOverhead: 62)
        #expect(abs(small.audioEach - (75_000 - 24_800)) < 1)
        #expect(abs(small.videoEach - (75_000 - 30 * 62 * 8)) < 1, "video \(small.videoEach)")
        // Tight: audio's half of the link, less its headers, down to Opus's floor.
        let tight = TargetSplit(target: 80_000, audioTracks: 1, videoTracks: 1, repairs: 0, packetOverhead: 62)
        #expect(abs(tight.audioEach - (40_000 - 24_800)) < 1)
        #expect(tight.videoEach == TargetSplit.videoFloor)
        let starved = TargetSplit(target: 20_000, audioTracks: 1, videoTracks: 0, repairs: 0, packetOverhead: 62)
        #expect(starved.audioEach == TargetSplit.audioFloor)
        let nothing = TargetSplit(target: 0, audioTracks: 1, videoTracks: 0, repairs: 0, packetOverhead: 62)
        #expect(nothing.audioEach == 0)
    }
}
