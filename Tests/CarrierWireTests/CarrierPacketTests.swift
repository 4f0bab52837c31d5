import Foundation
import TestSupport
import Testing

@testable import CarrierWire

/// Carrier packets against the bytes the reference library produced
/// (`Fixtures/packets.json`, from `shared/vectors/carrier-wire`), and our
/// own encodings against an independent decoder (flatc's Python code).
@Suite struct CarrierPacketTests {
    struct Vector {
        let name: String
        let bytes: [UInt8]
        let input: [String: Any]
    }

    static func fixtures() -> [String: Any] {
        guard let url = Bundle.module.url(forResource: "packets", withExtension: "json", subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    static func vectors(_ key: String) -> [Vector] {
        (fixtures()[key] as? [[String: Any]] ?? []).compactMap { entry in
            guard let name = entry["name"] as? String, let hex = entry["hex"] as? String,
                let bytes = hexBytes(hex)
            else { return nil }
            return Vector(name: name, bytes: bytes, input: entry["input"] as? [String: Any] ?? [:])
        }
    }

    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        return stride(from: 0, to: digits.count, by: 2).compactMap {
            UInt8(String(decoding: digits[$0...$0 + 1], as: UTF8.self), radix: 16)
        }
    }

    /// The data a vector's input describes: text (with a NUL when the notes say so), or the letter pattern.
    static func data(of vector: Vector) -> [UInt8] {
        if let text = vector.input["data_text"] as? String ?? vector.input["msg_text"] as? String {
            let nul = (vector.input["data_note"] as? String)?.contains("0x00") == true
            return Array(text.utf8) + (nul ? [0] : [])
        }
        let count = vector.input["data_len"] as? Int ?? 0
        let offsets = ["bulkmsg_later": 2048, "invitereq_later": 1267]
        let start = offsets[vector.name] ?? 0
        return (start..<start + count).map { UInt8(ascii: "a") + UInt8($0 % 26) }
    }

    @Test func everyReferenceVectorDecodesToItsFields() throws {
        let vectors = Self.vectors("vectors")
        #expect(vectors.count == 14)
        for vector in vectors {
            let packet = try CarrierPacket.decode(vector.bytes)
            let input = vector.input
            #expect(packet.kind.rawValue == UInt8(input["type"] as? Int ?? -1), "\(vector.name)")
            let ext = input["ext"] as? String
            switch packet {
            case .userInfo(let info):
                #expect(info.hasAvatar == (input["has_avatar"] as? Bool))
                #expect((info.name ?? "") == input["name"] as? String && info.description == input["descr"] as? String)
                #expect(info.phone == input["phone"] as? String && info.gender == input["gender"] as? String)
                #expect(info.email == input["email"] as? String && info.region == input["region"] as? String)
            case .friendRequest(let request):
                #expect(request.name == input["name"] as? String && request.hello == input["hello"] as? String)
                #expect(request.description == input["descr"] as? String)
            case .message(let messageExt, let data):
                #expect(messageExt == ext && data == Self.data(of: vector), "\(vector.name)")
            case .bulk(let fragment), .inviteRequest(let fragment):
                #expect(fragment.ext == ext && fragment.tid == Int64(input["tid"] as? Int ?? -1), "\(vector.name)")
                #expect(fragment.totalSize == UInt32(input["totalsz"] as? Int ?? -1))
                #expect(fragment.bundle == input["bundle"] as? String)
                #expect(fragment.data == Self.data(of: vector), "\(vector.name)")
            case .inviteResponse(let fragment, let status, let reason):
                #expect(fragment.ext == ext && fragment.tid == Int64(input["tid"] as? Int ?? -1))
                #expect(status == Int32(input["status"] as? Int ?? 99) && reason == input["reason"] as? String)
                #expect(fragment.bundle == input["bundle"] as? String && fragment.data == Self.data(of: vector))
            }
            // And back: our bytes of it decode to the same packet.
            #expect(try CarrierPacket.decode(packet.encode()) == packet, "\(vector.name)")
        }
    }

    /// The reference decoder took two of these and crashed on one; ours refuses each with a reason.
    @Test func malformedBuffersAreRefused() throws {
        let expected = [
            "type_friend_remove": "packet type 7", "message_without_body": "not a message body",
            "type_union_mismatch": "not a message body", "message_vector_length_overflow": "a vector of 65556 bytes",
            "all_zero_8_bytes": "the root offset", "root_offset_out_of_range": "the root offset",
        ]
        let malformed = Self.vectors("malformed")
        #expect(malformed.count == expected.count)
        for vector in malformed {
            #expect {
                try CarrierPacket.decode(vector.bytes)
            } throws: { error in
                "\(error)".contains(expected[vector.name] ?? "?")
            }
        }
    }

    /// No cut or flipped byte of a real packet makes the decoder read outside the buffer or trap.
    @Test func damagedPacketsNeverTrap() {
        var generator = SystemRandomNumberGenerator()
        for vector in Self.vectors("vectors") {
            for length in 0..<vector.bytes.count { _ = try? CarrierPacket.decode(Array(vector.bytes.prefix(length))) }
            for _ in 0..<200 {
                var damaged = vector.bytes
                damaged[Int.random(in: 0..<damaged.count, using: &generator)] = UInt8.random(
                    in: 0...255, using: &generator)
                _ = try? CarrierPacket.decode(damaged)
            }
        }
    }

    /// What we write, an independent decoder (flatc's Python code on the
    /// PyPI runtime) reads to the same fields.
    @Test func ourBytesDecodeTheSameWithFlatcsPython() async throws {
        let packets: [CarrierPacket] =
            try Self.vectors("vectors").map { try CarrierPacket.decode($0.bytes) } + [
                .userInfo(.init(name: "Bot", protoVersion: 2, platform: "linux")),
                .userInfo(
                    .init(
                        name: "Bot", protoVersion: 2, platform: "linux", osVersion: "6.1", appVersion: "1.0",
                        avatarUrl: "https://a.example/a.png", url: "https://a.example", ens: "bot.eth",
                        extra: "{\"k\":1}")),
                .bulk(.init(ext: "carrier", tid: -5, totalSize: 5 << 20, data: [1, 2, 3])),
                .inviteResponse(.init(ext: "carrier", tid: Int64.max, bundle: "b"), status: -1, reason: "busy"),
            ]
        let directory = NSTemporaryDirectory() + "carrier-wire-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let hex = packets.map { $0.encode().map { String(format: "%02x", $0) }.joined() }
        try JSONSerialization.data(withJSONObject: hex).write(to: URL(fileURLWithPath: directory + "/in.json"))
        let schema = try #require(Bundle.module.path(forResource: "carrier-packet", ofType: "fbs"))
        let script = try #require(Bundle.module.path(forResource: "decode_packets", ofType: "py"))
        let decoder = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: ["python3", script, schema, directory + "/in.json", directory + "/out.json"])
        #expect(await decoder.waitForExit(timeout: .seconds(60)) == 0, "\(decoder.stderr)")
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/out.json")))
                as? [[String: Any]])
        #expect(decoded.count == packets.count)
        for (packet, fields) in zip(packets, decoded) {
            let hexData = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
            #expect(
                fields["type"] as? Int == Int(packet.kind.rawValue)
                    && fields["bodyType"] as? Int == Int(packet.kind.unionTag))
            switch packet {
            case .userInfo(let info):
                #expect(fields["name"] as? String == info.name && fields["descr"] as? String == info.description)
                #expect(fields["avatar"] as? Bool == info.hasAvatar && fields["region"] as? String == info.region)
                #expect(
                    fields["protoVersion"] as? Int == Int(info.protoVersion)
                        && fields["platform"] as? String == info.platform)
                #expect(
                    fields["osVersion"] as? String == info.osVersion
                        && fields["appVersion"] as? String == info.appVersion)
                #expect(
                    fields["avatarUrl"] as? String == info.avatarUrl && fields["url"] as? String == info.url
                        && fields["ens"] as? String == info.ens && fields["extra"] as? String == info.extra)
            case .friendRequest(let request):
                #expect(fields["name"] as? String == request.name && fields["hello"] as? String == request.hello)
            case .message(let ext, let data):
                #expect(fields["ext"] as? String == ext && fields["data"] as? String == hexData(data))
            case .bulk(let fragment), .inviteRequest(let fragment):
                #expect(fields["ext"] as? String == fragment.ext && fields["tid"] as? Int == Int(fragment.tid))
                #expect(
                    fields["totalsz"] as? Int == Int(fragment.totalSize)
                        && fields["data"] as? String == hexData(fragment.data))
            case .inviteResponse(let fragment, let status, let reason):
                #expect(fields["tid"] as? Int == Int(fragment.tid) && fields["bundle"] as? String == fragment.bundle)
                #expect(fields["status"] as? Int == Int(status) && fields["reason"] as? String == reason)
            }
        }
    }
}
