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
}
