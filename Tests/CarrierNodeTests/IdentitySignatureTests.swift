import Foundation
import Testing

@testable import CarrierNode

/// The identity signature vectors (checked against an independent implementation),
/// a resource of this test target: `Fixtures/identity-signatures.json`.
struct SignatureVectors: Decodable {
    struct Case: Decodable {
        let secret_key: String
        let public_key: String
        let random: String?
        let message_utf8: String
        let signature: String
        let verify_only: Bool?
    }
    let cases: [Case]

    static func load() throws -> SignatureVectors {
        let url = try #require(
            Bundle.module.url(
                forResource: "identity-signatures", withExtension: "json",
                subdirectory: "Fixtures"))
        return try JSONDecoder().decode(SignatureVectors.self, from: Data(contentsOf: url))
    }
}

extension [UInt8] {
    init(hex: String) { self = Hex.decode(hex) ?? [] }
    var hex: String { Hex.encode(self) }
}

@Suite struct IdentitySignatureTests {
    @Test func reproducesEveryVectorByteForByte() throws {
        let vectors = try SignatureVectors.load()
        #expect(vectors.cases.count >= 4)
        for vector in vectors.cases {
            let secret = [UInt8](hex: vector.secret_key)
            let message = Array(vector.message_utf8.utf8)
            let expected = [UInt8](hex: vector.signature)
            #expect(IdentitySignature.publicKey(secretKey: secret)?.hex == vector.public_key)
            if let random = vector.random {
                let signature = try IdentitySignature.sign(
                    message: message, secretKey: secret, random: [UInt8](hex: random))
                #expect(signature.hex == vector.signature, "vector \(vector.message_utf8)")
            }
            #expect(
                IdentitySignature.verify(
                    message: message, signature: expected, publicKey: [UInt8](hex: vector.public_key)))
        }
    }

    @Test func verifiesWithAUserIdAlone() throws {
        let vector = try #require(try SignatureVectors.load().cases.first)
        let userId = try #require(UserId(publicKey: [UInt8](hex: vector.public_key)))
        let text = userId.description
        let parsed = try #require(UserId(text))
        #expect(
            IdentitySignature.verify(
                message: Array(vector.message_utf8.utf8), signature: [UInt8](hex: vector.signature), userId: parsed))
    }

    @Test func rejectsTamperedMessageSignatureOrKey() throws {
        let vector = try #require(try SignatureVectors.load().cases.first)
        let message = Array(vector.message_utf8.utf8)
        let signature = [UInt8](hex: vector.signature)
        let key = [UInt8](hex: vector.public_key)
        #expect(!IdentitySignature.verify(message: message + [0x21], signature: signature, publicKey: key))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!IdentitySignature.verify(message: message, signature: flipped, publicKey: key))
        var signBit = signature
        signBit[63] ^= 0x80
        #expect(!IdentitySignature.verify(message: message, signature: signBit, publicKey: key))
        var otherKey = key
        otherKey[0] ^= 1
        #expect(!IdentitySignature.verify(message: message, signature: signature, publicKey: otherKey))
        #expect(!IdentitySignature.verify(message: message, signature: Array(signature.prefix(63)), publicKey: key))
    }

    @Test func randomisedSignaturesVerifyForFreshKeys() throws {
        for _ in 0..<20 {
            var secret = [UInt8](repeating: 0, count: 32)
            for index in secret.indices { secret[index] = UInt8.random(in: 0...255) }
            let publicKey = try #require(IdentitySignature.publicKey(secretKey: secret))
            let message = Array("hello \(secret[0])".utf8)
            let signature = try IdentitySignature.sign(message: message, secretKey: secret)
            #expect(IdentitySignature.verify(message: message, signature: signature, publicKey: publicKey))
        }
    }

    @Test func refusesEmptyMessagesAndBadKeys() {
        #expect(throws: IdentitySignature.SignError.emptyMessage) {
            try IdentitySignature.sign(message: [], secretKey: [UInt8](repeating: 1, count: 32))
        }
        #expect(throws: IdentitySignature.SignError.badSecretKey) {
            try IdentitySignature.sign(message: [1], secretKey: [1, 2])
        }
    }
}
