import Foundation
import Testing

@testable import RtcFileTransfer

/// The text messages of the file protocols (docs/file-protocol.md): what we send
/// reads back the same, and text from a peer that is not one of them is refused.
@Suite struct FileMessageTests {
    @Test func headerAndAckReadBackAsSent() {
        let sha = String(repeating: "ab", count: 32)
        let header = FileMessage.header(name: "clip.webm", size: 5_000_000, sha256: sha)
        let ack = FileMessage.ack(name: "clip.webm", size: 5_000_000, sha256: sha, ok: true)
        #expect(FileMessage(json: header.json) == header)
        #expect(FileMessage(json: ack.json) == ack)
    }

    @Test func textThatIsNotAFileMessageIsRefused() {
        #expect(FileMessage(json: "not json") == nil)
        #expect(FileMessage(json: #"{"type":"chat","name":"a","size":1,"sha256":"x"}"#) == nil)
        #expect(FileMessage(json: #"{"type":"file","name":"a","sha256":"x"}"#) == nil)
        #expect(FileMessage(json: #"{"type":"file","name":"a","size":"big","sha256":"x"}"#) == nil)
        let padded = #"{"type":"file","name":"\#(String(repeating: "a", count: 5000))","size":1,"sha256":"x"}"#
        #expect(FileMessage(json: padded) == nil)
    }

    @Test func aSafeNameKeepsThePeerInsideTheReceiveDirectory() {
        let name = FileMessage.safeName("../../etc/passwd")
        #expect(!name.contains("/"))
        #expect(name != "..")
    }

    @Test func chunkReadsBackWithItsBytesNameSizeAndDigest() throws {
        var chunk = ChunkMessage(
            fileId: "f1", index: 3, mime: "image/png", end: true, data: [0, 1, 2, 255], name: "a.png", size: 4)
        chunk.sha256 = String(repeating: "0f", count: 32)
        let read = try #require(ChunkMessage(json: chunk.json))
        #expect(read == chunk)
    }

    @Test func chunkFromAReferencePeerTakesDefaultsForWhatItLeavesOut() throws {
        let read = try #require(ChunkMessage(json: #"{"fileId":"x","index":0,"data":"AAE="}"#))
        #expect(read.data == [0, 1])
        #expect(read.mime == "application/octet-stream")
        #expect(!read.end)
        #expect(read.name == nil && read.size == nil && read.sha256 == nil)
        #expect(ChunkMessage.fallbackName(fileId: "x", mime: "IMAGE/JPEG") == "x.jpg")
    }

    @Test func textThatIsNotAChunkIsRefused() {
        #expect(ChunkMessage(json: #"{"index":0,"data":""}"#) == nil)
        #expect(ChunkMessage(json: #"{"fileId":"","index":0}"#) == nil)
        #expect(ChunkMessage(json: #"{"fileId":"x","index":-1}"#) == nil)
        #expect(ChunkMessage(json: #"{"fileId":"x","index":0,"data":"***"}"#) == nil)
        let longId = String(repeating: "i", count: 129)
        #expect(ChunkMessage(json: #"{"fileId":"\#(longId)","index":0}"#) == nil)
        let huge = #"{"fileId":"x","index":0,"data":"\#(String(repeating: "A", count: ChunkMessage.maxText))"}"#
        #expect(ChunkMessage(json: huge) == nil)
    }

    @Test func cancelIsRecognisedAndOtherTextIsNot() {
        #expect(CancelMessage.isCancel(CancelMessage.json(name: "a.bin")))
        #expect(!CancelMessage.isCancel(#"{"type":"file","name":"a"}"#))
        #expect(!CancelMessage.isCancel("file-cancel"))
    }
}
