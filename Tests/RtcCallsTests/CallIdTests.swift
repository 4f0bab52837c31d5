import RtcCalls
import Testing

/// Which call ids may name a call (and so a folder or a file).
@Suite struct CallIdTests {
    @Test func uuidLikeIdsPassInEitherCase() {
        #expect(CallId.isAcceptable("0f8fad5b-d9cb-469f-a165-70867728950e"))
        #expect(CallId.isAcceptable("0F8FAD5B-D9CB-469F-A165-70867728950E"))  // the native Beagle app
        #expect(CallId.isAcceptable(String(repeating: "a", count: 64)))
        #expect(CallId.isAcceptable("legacy-7sKXm2ZBoTTu7XLkBLYQjz9ZsVpfWrEEKA8tUXpxP4hR"))
    }

    @Test func anythingThatCouldBecomeAPathIsRefused() {
        for id in [
            "", "../../../x/pwned", "..", ".", "a/b", "a\\b", "call id", "a\u{0}b", "a\nb", "é",
            String(repeating: "a", count: 65), "%2e%2e", "~", "a.webm",
        ] {
            #expect(!CallId.isAcceptable(id), "\(id.debugDescription)")
        }
    }
}
