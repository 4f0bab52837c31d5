import Foundation
import Testing

@testable import CarrierWire

/// Beagle's file messages (wire notes §7.5), both forms.
@Suite struct BeagleFileMessageTests {
    @Test func thePackedFormRoundTripsWithItsLayout() throws {
        let file = BeagleFileMessage(fileName: "photo.jpg", contentType: "image/jpeg", data: [1, 2, 3, 0])
        let bytes = try #require(file.encode())
        let length = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        let meta = try #require(
            try JSONSerialization.jsonObject(with: Data(bytes[4..<4 + length])) as? [String: Any])
        #expect(meta["type"] as? String == "file" && meta["filename"] as? String == "photo.jpg")
        #expect(meta["size"] as? Int == 4 && meta["contentType"] as? String == "image/jpeg")
        #expect(Array(bytes[(4 + length)...]) == [1, 2, 3, 0])
        #expect(BeagleFileMessage.decode(bytes) == file)
    }

    @Test func theInlineFormReads() throws {
        let json = #"{"type":"image","data":"AQID","fileName":"cat","fileExtension":"png","mediaType":"image/png"}"#
        let file = try #require(BeagleFileMessage.decode(Array(json.utf8)))
        #expect(file == BeagleFileMessage(fileName: "cat.png", contentType: "image/png", data: [1, 2, 3]))
    }

    /// Ordinary messages are not files, and a lying size or an oversized meta is refused.
    @Test func whatIsNotAFileIsNone() throws {
        #expect(BeagleFileMessage.decode(Array("hello".utf8)) == nil)
        #expect(BeagleFileMessage.decode(Array(#"{"type":"text","data":"AQID"}"#.utf8)) == nil)
        #expect(BeagleFileMessage.decode(Array(#"{"type":"offer","sdp":"v=0"}"#.utf8)) == nil)
        var bytes = try #require(BeagleFileMessage(fileName: "a", data: [1, 2]).encode())
        bytes.append(3)
        #expect(BeagleFileMessage.decode(bytes) == nil, "more bytes than its size says")
        #expect(BeagleFileMessage.decode([0, 0, 0x10, 1, 0x7B]) == nil, "a meta past 4 KiB")
        #expect(BeagleFileMessage.decode([0xFF, 0xFF, 0xFF, 0xFF]) == nil)
        #expect(BeagleFileMessage(fileName: "big", data: [UInt8](repeating: 0, count: 5 << 20)).encode() == nil)
        let longName = String(repeating: "n", count: 5000)
        #expect(BeagleFileMessage(fileName: longName, data: [1]).encode() == nil)
    }
}
