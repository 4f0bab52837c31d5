import CarrierWire
import Testing

@testable import CarrierNode

@Suite struct Base58Tests {
    @Test func knownValues() {
        #expect(Base58.encode([UInt8]("hello world".utf8)) == "StV1DL6CwTryKyV")
        #expect(Base58.encode([0, 0, 1]) == "112")
        #expect(Base58.decode("112") == [0, 0, 1])
        #expect(Base58.encode([]) == "")
    }

    @Test func roundTripsRandomBytesIncludingLeadingZeros() {
        for length in [1, 2, 31, 32, 38, 64] {
            for zeros in [0, 1, 3] where zeros <= length {
                var bytes = [UInt8](repeating: 0, count: length)
                for index in zeros..<length { bytes[index] = UInt8.random(in: 0...255) }
                #expect(Base58.decode(Base58.encode(bytes)) == bytes)
            }
        }
    }

    @Test func rejectsCharactersOutsideTheAlphabetAndOverlongText() {
        #expect(Base58.decode("0OIl") == nil)
        #expect(Base58.decode("abc€") == nil)
        #expect(Base58.decode("") == nil)
        #expect(Base58.decode(String(repeating: "z", count: 200)) == nil)
    }
}

@Suite struct AddressTests {
    let key: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xFF) }

    @Test func checksumAndLayout() throws {
        let id = try #require(UserId(publicKey: key))
        let address = CarrierAddress(userId: id, nospam: 0x0102_0304)
        let bytes = address.bytes
        #expect(bytes.count == 38)
        #expect(Array(bytes[32..<36]) == [1, 2, 3, 4])
        var even: UInt8 = 0
        var odd: UInt8 = 0
        for index in stride(from: 0, to: 36, by: 2) { even ^= bytes[index] }
        for index in stride(from: 1, to: 36, by: 2) { odd ^= bytes[index] }
        #expect(bytes[36] == even && bytes[37] == odd)
        let text = address.description
        #expect(text.count <= 52)
        #expect(CarrierAddress(text) == address)
        #expect(CarrierAddress.userId(fromAddress: text) == id)
    }

    @Test func rejectsBadChecksumAndWrongLengths() throws {
        let id = try #require(UserId(publicKey: key))
        var bytes = CarrierAddress(userId: id, nospam: 42).bytes
        bytes[37] ^= 1
        #expect(!CarrierAddress.isValid(Base58.encode(bytes)))
        #expect(!CarrierAddress.isValid(id.description))
        #expect(!UserId.isValid(CarrierAddress(userId: id, nospam: 1).description))
        #expect(UserId.isValid(id.description))
        #expect(!UserId.isValid("not-base58!"))
        #expect(UserId(Base58.encode([UInt8](repeating: 9, count: 31))) == nil)
    }
}

/// User ids and transfer keys hash their bytes in one piece: equal values
/// must still hash alike and unequal ones stay apart in a set.
@Suite struct IdentifierHashingTests {
    private static func id(_ byte: UInt8) -> UserId? { UserId(publicKey: [UInt8](repeating: byte, count: 32)) }

    @Test func equalUserIdsHashAlikeAndDifferentOnesStayApart() throws {
        let one = try #require(Self.id(1))
        let again = try #require(UserId(one.description))
        let other = try #require(Self.id(2))
        #expect(one.hashValue == again.hashValue)
        #expect(Set([one, again, other]).count == 2)
    }

    @Test func transferKeysTellFriendDirectionAndFileApart() throws {
        let friend = try #require(Self.id(1))
        let sha = [UInt8](repeating: 7, count: 32)
        let key = FileTransferKey(friend: friend, sha256: sha, outgoing: true)
        #expect(key.hashValue == FileTransferKey(friend: friend, sha256: sha, outgoing: true).hashValue)
        let keys: Set = [
            key,
            FileTransferKey(friend: friend, sha256: sha, outgoing: false),
            FileTransferKey(friend: try #require(Self.id(2)), sha256: sha, outgoing: true),
            FileTransferKey(friend: friend, sha256: [UInt8](repeating: 8, count: 32), outgoing: true),
            FileTransferKey(friend: friend, sha256: sha, outgoing: true),
        ]
        #expect(keys.count == 4)
    }
}
