import Foundation
import FuzzTargets
import TestSupport
import Testing

/// The fuzzers' smoke pass on every `make test`: each seed of
/// `Fuzz/corpus/<target>/`, and a few hundred deterministic mutations of it
/// (bit flips, cuts, repeats, random bytes), through its target. Without the
/// sanitizer this finds crashes and traps, not memory errors: `make fuzz`
/// runs libFuzzer with AddressSanitizer for that.
@Suite struct FuzzCorpusTests {
    static let corpus = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")

    static func seeds(_ target: String) -> [[UInt8]] {
        let folder = corpus.appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap {
            FileManager.default.contents(atPath: folder.appendingPathComponent($0).path)
        }
        .map { Array($0) }
    }

    @Test func everyTargetHasSeeds() {
        for (name, _) in FuzzTargets.all { #expect(!Self.seeds(name).isEmpty, "no seeds for \(name)") }
    }

    @Test(arguments: FuzzTargets.all.map(\.name))
    func seedsAndTheirMutationsPassThrough(_ name: String) throws {
        let run = try #require(FuzzTargets.named(name))
        var generator = SplitMix(seed: 0x5eed)
        // The media readers go through a file each time: fewer mutations for them.
        let mutations = ["wav", "ogg-opus", "ivf", "y4m"].contains(name) ? 40 : 300
        for seed in Self.seeds(name) {
            run(seed)
            for _ in 0..<mutations { run(Self.mutate(seed, &generator)) }
        }
        run([])
    }

    static func mutate(_ seed: [UInt8], _ generator: inout SplitMix) -> [UInt8] {
        var bytes = seed
        for _ in 0..<Int.random(in: 1...4, using: &generator) {
            switch Int.random(in: 0..<6, using: &generator) {
            case 0 where !bytes.isEmpty:
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
            case 1 where !bytes.isEmpty:
                bytes.removeLast(Int.random(in: 0...bytes.count, using: &generator))
            case 2 where !bytes.isEmpty:
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] = [0, 0xFF, 0x7F, 0x80][Int.random(in: 0..<4, using: &generator)]
            case 3:
                let index = Int.random(in: 0...bytes.count, using: &generator)
                bytes.insert(
                    contentsOf: (0..<Int.random(in: 1...16, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }, at: index)
            case 4 where bytes.count > 1:
                let start = Int.random(in: 0..<bytes.count, using: &generator)
                let end = min(bytes.count, start + Int.random(in: 1...64, using: &generator))
                bytes.insert(contentsOf: bytes[start..<end], at: start)
            default:
                if !bytes.isEmpty { bytes.swapAt(0, Int.random(in: 0..<bytes.count, using: &generator)) }
            }
        }
        return bytes
    }
}
