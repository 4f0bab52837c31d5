import Foundation
import TestSupport
import Testing

/// A bootstrap node on 127.0.0.1 that a test's `carrier` processes join
/// through (`common`), and the identities they use.
struct LocalNetwork {
    let node: CarrierProcess
    /// `--bootstrap HOST:PORT:KEY --loopback`, for every command that goes online.
    let common: [String]

    init() async throws {
        node = try CarrierProcess(["node", "--host", "127.0.0.1"])
        let entry = try #require(await node.waitForLine(containing: "127.0.0.1:", timeout: .seconds(20)))
        common = ["--bootstrap", entry, "--loopback"]
    }

    /// The identity in the data directory `data` (made if new): its address and user id.
    static func identity(_ data: String) async throws -> (address: String, userId: String) {
        let (_, lines, _) = try await CarrierProcess.run(["id", "--data", data, "--json"])
        let object = try #require(json(lines.last))
        return (try #require(object["address"] as? String), try #require(object["userId"] as? String))
    }
}
