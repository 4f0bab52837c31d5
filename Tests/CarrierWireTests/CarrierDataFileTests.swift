import Foundation
import Testing

@testable import CarrierWire

/// `carrier.data` as the reference SDK writes it (`Fixtures/carrier-data.json`:
/// its header and layout; the Tox section itself holds a secret key and is not there).
@Suite struct CarrierDataFileTests {
    static func vector() throws -> [String: Any] {
        let url = try #require(
            Bundle.module.url(forResource: "carrier-data", withExtension: "json", subdirectory: "Fixtures"))
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    @Test func aFreshIdentityHasTheReferencesLayout() throws {
        let vector = try Self.vector()
        let header = CarrierTurnCredentialsTests.hex(vector["header_256_hex"] as? String)
        #expect(header.count == 256)
        let fields = try #require(vector["header"] as? [String: Any])
        let toxLength = try #require(fields["tox_savedata_len"] as? Int)
        // Our file for a savedata of the same length: the same first 16 bytes and size.
        let ours = CarrierDataFile(toxSavedata: [UInt8](repeating: 7, count: toxLength)).encode()
        #expect(ours.count == vector["file_size"] as? Int)
        #expect(Array(ours[0..<16]) == Array(header[0..<16]))
        #expect(ours[48..<256].allSatisfy { $0 == 0 })
        #expect(CarrierDataFile.paddedSize(0) == 256 && CarrierDataFile.paddedSize(200) == 512)
        #expect(CarrierDataFile.paddedSize(toxLength) == 1280)
    }

    @Test func labelsRoundTripAndDamageIsRefused() throws {
        let file = CarrierDataFile(
            toxSavedata: Array(0..<200),
            labels: [.init(friendNumber: 0, text: "Alice"), .init(friendNumber: 7, text: "ボブ")])
        let bytes = file.encode()
        #expect(try CarrierDataFile.decode(bytes) == file)
        var damaged = bytes
        damaged[300] ^= 1
        #expect(throws: CarrierDataFile.Failure.malformed("its SHA-256 does not match (damaged or cut)")) {
            try CarrierDataFile.decode(damaged)
        }
        #expect(throws: CarrierDataFile.Failure.self) { try CarrierDataFile.decode(Array(bytes.dropLast(256))) }
        var wrongMagic = bytes
        wrongMagic[0] = 0
        #expect(throws: CarrierDataFile.Failure.malformed("its magic is not 0x0E0C0D0A")) {
            try CarrierDataFile.decode(wrongMagic)
        }
        #expect(throws: CarrierDataFile.Failure.self) { try CarrierDataFile.decode([UInt8](repeating: 0, count: 10)) }
    }
}
