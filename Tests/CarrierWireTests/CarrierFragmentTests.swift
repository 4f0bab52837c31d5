import Foundation
import Testing

@testable import CarrierWire

/// Splitting and joining as the reference library does (`Fixtures/flows.json`:
/// what two reference peers sent each other), and the joiner's bounds.
@Suite struct CarrierFragmentTests {
    let start = ContinuousClock.now

    static func flows() -> [String: Any] {
        guard let url = Bundle.module.url(forResource: "flows", withExtension: "json", subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return [:] }
        return object
    }

    /// byte i = 'a' + (i % 26), as in the flows.
    static func payload(_ count: Int) -> [UInt8] { (0..<count).map { UInt8(ascii: "a") + UInt8($0 % 26) } }

    static func fragment(_ packet: CarrierPacket) -> CarrierPacket.Fragment? {
        switch packet {
        case .bulk(let fragment), .inviteRequest(let fragment), .inviteResponse(let fragment, _, _): fragment
        default: nil
        }
    }

    @Test func messagesSplitAsTheReferenceDid() throws {
        let messages = Self.flows()["messages"] as? [[String: Any]] ?? []
        #expect(messages.count == 3)
        for flow in messages {
            let size = try #require(flow["size"] as? Int)
            let pieces = try CarrierFragmenter.message(Self.payload(size), ext: nil, tid: 42)
            let seen = try #require(flow["fragments"] as? [[String: Any]])
            #expect(pieces.count == seen.count, "\(size)")
            for (piece, fragment) in zip(pieces, seen) {
                #expect(piece.packet.kind.rawValue == UInt8(fragment["packet_type"] as? Int ?? 0))
                #expect(piece.carriesReceipt == ((fragment["msgid_passed_to_toxcore"] as? Int ?? 0) != 0))
                let bytes = piece.packet.encode().count
                #expect(bytes <= CarrierLimits.maxToxMessage)
                if let bulk = Self.fragment(piece.packet) {
                    #expect(bulk.data.count == fragment["data_len"] as? Int)
                    #expect(Int(bulk.totalSize) == fragment["totalsz"] as? Int ?? 0)
                }
            }
        }
    }

    /// Invites and replies split as the reference did, and where it failed
    /// (ext "carrier", a bundle, 1267 bytes or more) ours fits toxcore's limit.
    @Test func invitesAndRepliesSplitAsTheReferenceDid() throws {
        let flows = Self.flows()
        let cases = (flows["invites"] as? [[String: Any]] ?? []) + (flows["invite_replies"] as? [[String: Any]] ?? [])
        #expect(cases.count == 17)
        for flow in cases {
            let size = try #require(flow["size"] as? Int)
            let ext = flow["ext"] as? String
            let bundle = flow["bundle"] as? String
            let status = Int32(flow["status"] as? Int ?? 0)
            let isReply = flow["status"] != nil
            let packets =
                isReply
                ? try CarrierFragmenter.reply(
                    status: status, reason: flow["reason"] as? String, data: Self.payload(size), ext: ext,
                    bundle: bundle, tid: 7)
                : try CarrierFragmenter.invite(Self.payload(size), ext: ext, bundle: bundle, tid: 7)
            let seen = try #require(flow["fragments"] as? [[String: Any]])
            let referenceFailed = seen.contains { $0["tox_send_ok"] as? Bool == false }
            for packet in packets {
                #expect(packet.encode().count <= CarrierLimits.maxToxMessage, "\(size) \(ext ?? "-")")
            }
            if referenceFailed {
                // Ours gives the first fragment's data up until it fits: 1 more fragment at most.
                #expect(packets.compactMap(Self.fragment).map(\.data.count).reduce(0, +) == size)
                continue
            }
            #expect(packets.count == seen.count, "\(size) \(ext ?? "-") \(bundle ?? "-")")
            for (index, (packet, fragment)) in zip(packets, seen).enumerated() {
                let piece = try #require(Self.fragment(packet))
                #expect(piece.data.count == fragment["data_len"] as? Int ?? -1, "\(size) fragment \(index + 1)")
                #expect(Int(piece.totalSize) == fragment["totalsz"] as? Int ?? 0)
                #expect(piece.bundle?.utf8.count == fragment["bundle_len"] as? Int)
                #expect(piece.ext == ext)
            }
        }
    }

    @Test func theJoinerRebuildsWhatWasSplit() throws {
        var joiner = CarrierReassembler<String>()
        let message = Self.payload(5000)
        var outcomes: [CarrierReassembler<String>.Outcome] = []
        for piece in try CarrierFragmenter.message(message, ext: "chat", tid: 9) {
            guard case .bulk(let fragment) = piece.packet else { continue }
            outcomes.append(joiner.take(fragment, kind: .bulk, from: "alice", now: start))
        }
        #expect(outcomes.dropLast().allSatisfy { $0 == .pending })
        #expect(
            outcomes.last
                == .whole(.init(sender: "alice", kind: .bulk, ext: "chat", bundle: nil, tid: 9, data: message)))
        let invite = Self.payload(8192)
        var last: CarrierReassembler<String>.Outcome = .pending
        for packet in try CarrierFragmenter.invite(invite, ext: "carrier", bundle: "b", tid: 3) {
            guard case .inviteRequest(let fragment) = packet else { continue }
            last = joiner.take(fragment, kind: .invite, from: "alice", now: start)
        }
        #expect(
            last == .whole(.init(sender: "alice", kind: .invite, ext: "carrier", bundle: "b", tid: 3, data: invite)))
        #expect(joiner.openTransfers == 0)
    }

    /// A sender cannot make it hold more than its share, or hold it for long,
    /// or send past what it announced.
    @Test func theJoinerIsBounded() {
        var joiner = CarrierReassembler<String>(maxPerSender: 2, maxTransfers: 3, timeout: .seconds(60))
        func first(_ tid: Int64, from sender: String) -> CarrierReassembler<String>.Outcome {
            joiner.take(.init(tid: tid, totalSize: 3000, data: [1]), kind: .bulk, from: sender, now: start)
        }
        #expect(first(1, from: "mallory") == .pending && first(2, from: "mallory") == .pending)
        #expect(first(3, from: "mallory") == .dropped("2 transfers from this sender open already"))
        #expect(first(4, from: "bob") == .pending)
        #expect(first(5, from: "carol") == .dropped("3 transfers open already"))
        let huge = joiner.take(.init(tid: 6, totalSize: 6 << 20, data: [1]), kind: .bulk, from: "bob", now: start)
        #expect(huge == .dropped("a whole of 6291456 bytes, at most 5242880"))
        let orphan = joiner.take(.init(tid: 99, data: [1]), kind: .bulk, from: "bob", now: start)
        #expect(orphan == .dropped("a fragment whose first never came"))
        let past = joiner.take(
            .init(tid: 1, data: [UInt8](repeating: 0, count: 1024)), kind: .bulk, from: "mallory", now: start)
        #expect(past == .pending)
        let oversized = joiner.take(
            .init(tid: 1, data: [UInt8](repeating: 0, count: 1025)), kind: .bulk, from: "mallory", now: start)
        #expect(oversized == .dropped("a fragment of 1025 bytes: 1 to 1024"))
        #expect(joiner.expire(now: start + .seconds(61)) == 2 && joiner.openTransfers == 0)
    }

    /// Many senders together cannot make it hold more than its byte bound:
    /// what a whole claims counts from its first fragment, and is freed with it.
    @Test func theWholesClaimedAreBoundedInBytes() {
        var joiner = CarrierReassembler<Int>(maxBufferedBytes: 10 << 20)
        func first(_ sender: Int) -> CarrierReassembler<Int>.Outcome {
            joiner.take(.init(tid: 1, totalSize: 5 << 20, data: [1]), kind: .bulk, from: sender, now: start)
        }
        #expect(first(1) == .pending && first(2) == .pending)
        #expect(first(3) == .dropped("open transfers claim 10485760 bytes; 5242880 more is past 10485760"))
        joiner.forget(1)
        #expect(first(3) == .pending)
        #expect(joiner.expire(now: start + .seconds(61)) == 2)
        #expect(first(4) == .pending && first(5) == .pending)
    }
}
