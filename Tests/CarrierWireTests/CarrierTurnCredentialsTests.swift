import Foundation
import Testing

@testable import CarrierWire

/// TURN credentials against the reference library's own (`Fixtures/turn.json`).
@Suite struct CarrierTurnCredentialsTests {
    static func hex(_ text: String?) -> [UInt8] {
        let digits = Array((text ?? "").utf8)
        return stride(from: 0, to: digits.count - 1, by: 2).compactMap {
            UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)
        }
    }

    @Test func theReferenceCredentialIsReproducedAndChecked() throws {
        let url = try #require(Bundle.module.url(forResource: "turn", withExtension: "json", subdirectory: "Fixtures"))
        let vector = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let inputs = try #require(vector["inputs"] as? [String: String])
        let output = try #require(vector["output"] as? [String: Any])
        let credentials = try #require(
            CarrierTurnCredentials.derive(
                secretKey: Self.hex(inputs["my_secret_key_hex"]),
                relayPublicKey: Self.hex(inputs["relay_public_key_hex"]),
                server: inputs["relay_ip"] ?? "", nonce: Self.hex(inputs["nonce_hex"])))
        #expect(credentials.username == output["username"] as? String)
        #expect(credentials.password == output["password"] as? String)
        #expect(credentials.realm == output["realm"] as? String && Int(credentials.port) == output["port"] as? Int)
        #expect(credentials.server == output["server"] as? String)
        // The relay's side, as its coturn computes it.
        let relay = Self.hex(inputs["relay_secret_key_hex"])
        #expect(
            CarrierTurnCredentials.expectedPassword(username: credentials.username, relaySecretKey: relay)
                == credentials.password)
        #expect(CarrierTurnCredentials.expectedPassword(username: "nobody@x.auth.tox", relaySecretKey: relay) == nil)
        #expect(CarrierTurnCredentials.randomNonce() != CarrierTurnCredentials.randomNonce())
    }
}
