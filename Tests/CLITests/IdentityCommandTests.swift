import Foundation
import TestSupport
import Testing

@Suite struct IdentityCommandTests {
    @Test func helpListsEveryCommandAndUnknownCommandsAreUsageErrors() async throws {
        let (status, lines, _) = try await CarrierProcess.run(["--help"])
        #expect(status == 0)
        let text = lines.joined(separator: "\n")
        for command in [
            "id", "profile", "sign", "verify", "node", "express", "listen", "friend", "message", "invite", "send-file",
            "call", "rtc", "demo",
        ] {
            #expect(text.contains("  \(command) "), "help lacks \(command)")
        }
        let (badStatus, _, stderr) = try await CarrierProcess.run(["frobnicate"])
        #expect(badStatus == 2)
        #expect(stderr.contains("unknown command frobnicate"))
        let (optionStatus, _, optionError) = try await CarrierProcess.run(["id", "--nope"])
        #expect(optionStatus == 2)
        #expect(optionError.contains("unknown option --nope"))
    }

    /// STUN and TURN servers are checked before anything starts, on the
    /// command line and in the config file, and the error says what to do.
    @Test func badIceServersAreUsageErrors() async throws {
        for (arguments, words) in [
            (["--stun", "turn:203.0.113.1"], "--stun takes a stun: URL"),
            (["--turn", "stun:203.0.113.1"], "--turn takes a turn: or turns: URL"),
            (["--turn", "turn:203.0.113.1"], "--turn-user and --turn-pass"),
            (["--turn", "turn:203.0.113.1:99999", "--turn-user", "u", "--turn-pass", "p"], "bad port"),
        ] {
            let (status, _, stderr) = try await CarrierProcess.run(["rtc", "offer"] + arguments)
            #expect(status == 2 && stderr.contains(words), "\(arguments): \(stderr)")
        }
        let config = NSTemporaryDirectory() + "carrier-ice-\(UUID().uuidString).json"
        defer { try? FileManager.default.removeItem(atPath: config) }
        try #"{"bootstrap":[],"iceServers":[{"urls":"turn:203.0.113.1"}]}"#.write(
            toFile: config, atomically: true, encoding: .utf8)
        let (status, _, stderr) = try await CarrierProcess.run(["rtc", "offer", "--config", config])
        #expect(status == 2 && stderr.contains("iceServers") && stderr.contains("username"), "\(stderr)")
        // A limit of none is a mistake, named as such.
        try #"{"bootstrap":[],"limits":{"maxCallsPerFriend":0}}"#.write(
            toFile: config, atomically: true, encoding: .utf8)
        let (limit, _, limitError) = try await CarrierProcess.run(["rtc", "offer", "--config", config])
        #expect(limit == 2 && limitError.contains("limits.maxCallsPerFriend must be 1 or more"), "\(limitError)")
    }

    @Test func versionIsPrinted() async throws {
        let (status, lines, _) = try await CarrierProcess.run(["--version"])
        #expect(status == 0 && lines.first?.hasPrefix("carrier 0.") == true)
    }

    /// The key exported from one data directory imports into another as the
    /// same identity; a new nospam changes the address and keeps the user id.
    @Test func keyExportImportAndNospam() async throws {
        let root = temporaryDirectory("export")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (_, exported, warning) = try await CarrierProcess.run([
            "id", "--export-key", "--json", "--data", root + "/a",
        ])
        let original = try #require(json(exported.last))
        let key = try #require(original["secretKey"] as? String)
        #expect(key.count == 64 && warning.contains("secret key"))
        let (status, imported, _) = try await CarrierProcess.run(
            ["id", "--import-key", key, "--json", "--data", root + "/b"])
        #expect(status == 0 && json(imported.last)?["userId"] as? String == original["userId"] as? String)
        let (_, changed, _) = try await CarrierProcess.run([
            "id", "--nospam", "0badf00d", "--json", "--data", root + "/a",
        ])
        let after = try #require(json(changed.last))
        #expect(after["nospam"] as? String == "0badf00d" && after["userId"] as? String == original["userId"] as? String)
        #expect(after["address"] as? String != original["address"] as? String)
        #expect(after["secretKey"] == nil)
        let (bad, _, badError) = try await CarrierProcess.run(["id", "--nospam", "xyz", "--data", root + "/a"])
        #expect(bad == 2 && badError.contains("8 hex digits"))
    }

    /// An identity goes out as a Carrier app's carrier.data and comes back
    /// the same; the file is private and never written over.
    @Test func carrierDataExportAndImport() async throws {
        let root = temporaryDirectory("carrier-data")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let file = root + "/carrier.data"
        let (status, exported, warning) = try await CarrierProcess.run([
            "id", "--export-carrier-data", file, "--json", "--data", root + "/a",
        ])
        let original = try #require(json(exported.last))
        #expect(status == 0 && original["carrierData"] as? String == file && warning.contains("secret key"))
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let bytes = try #require(FileManager.default.contents(atPath: file))
        #expect(Array(bytes.prefix(8)) == [0x0E, 0x0C, 0x0D, 0x0A, 0, 0, 0, 2])
        let (again, _, againError) = try await CarrierProcess.run([
            "id", "--export-carrier-data", file, "--data", root + "/a",
        ])
        #expect(again == 2 && againError.contains(file), "\(againError)")
        let (imported, lines, _) = try await CarrierProcess.run([
            "id", "--import-carrier-data", file, "--json", "--data", root + "/b",
        ])
        #expect(imported == 0 && json(lines.last)?["address"] as? String == original["address"] as? String)
        // Not into a directory that holds an identity, and not from a file that is not one.
        let (occupied, _, occupiedError) = try await CarrierProcess.run([
            "id", "--import-carrier-data", file, "--data", root + "/a",
        ])
        #expect(occupied != 0 && occupiedError.contains("holds an identity already"), "\(occupiedError)")
        try Data("not a carrier.data".utf8).write(to: URL(fileURLWithPath: root + "/junk"))
        let (junk, _, junkError) = try await CarrierProcess.run([
            "id", "--import-carrier-data", root + "/junk", "--data", root + "/c",
        ])
        #expect(junk == 2 && junkError.contains("junk"), "\(junkError)")
    }

    /// `--network` names a public network; a name it does not know, or the
    /// Carrier network without its framing, is refused before anything starts.
    @Test func unknownNetworksAreUsageErrors() async throws {
        let (status, _, stderr) = try await CarrierProcess.run(["id", "--network", "tox"])
        #expect(status == 2 && stderr.contains("--network takes carrier"), "\(stderr)")
        let (stock, _, stockError) = try await CarrierProcess.run([
            "id", "--network", "carrier", "--stock-toxcore",
        ])
        #expect(stock == 2 && stockError.contains("drop --stock-toxcore"), "\(stockError)")
    }

    @Test func profileIsSetOfflineAndKept() async throws {
        let data = temporaryDirectory("profile")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (status, _, _) = try await CarrierProcess.run(
            ["profile", "--name", "Bot", "--description", "records calls", "--presence", "busy", "--data", data])
        #expect(status == 0)
        let (_, lines, _) = try await CarrierProcess.run(["profile", "--json", "--data", data])
        let profile = try #require(json(lines.last))
        #expect(profile["name"] as? String == "Bot" && profile["description"] as? String == "records calls")
        #expect(profile["presence"] as? String == "busy")
        let (bad, _, badError) = try await CarrierProcess.run(["profile", "--presence", "sleepy", "--data", data])
        #expect(bad == 2 && badError.contains("none, away or busy"))
    }

    @Test func idIsCreatedOnceAndKeptAcrossRuns() async throws {
        let data = temporaryDirectory("id")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (status, first, _) = try await CarrierProcess.run(["id", "--data", data, "--json"])
        #expect(status == 0)
        let identity = try #require(json(first.last))
        let userId = try #require(identity["userId"] as? String)
        #expect((identity["address"] as? String)?.count ?? 0 > 40)
        let (_, second, _) = try await CarrierProcess.run(["--json", "--data", data, "id"])
        #expect(json(second.last)?["userId"] as? String == userId)
        let mode = try FileManager.default.attributesOfItem(atPath: data + "/carrier.data")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func signThenVerify() async throws {
        let data = temporaryDirectory("sign")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (_, idLines, _) = try await CarrierProcess.run(["id", "--data", data, "--json"])
        let userId = try #require(json(idLines.last)?["userId"] as? String)
        let (signStatus, signLines, _) = try await CarrierProcess.run(["sign", "--data", data, "hello world"])
        #expect(signStatus == 0)
        let signature = try #require(signLines.last)
        #expect(signature.count == 128)
        let (valid, _, _) = try await CarrierProcess.run(["verify", userId, "hello world", signature])
        #expect(valid == 0)
        let (invalid, _, _) = try await CarrierProcess.run(["verify", userId, "hello world!", signature])
        #expect(invalid == 1)
        let (garbage, _, _) = try await CarrierProcess.run(["verify", userId, "hello world", "zz"])
        #expect(garbage == 1)
        // A "challenge" that is an Express request (a pull of this user's mail, signed
        // for the attacker's nonce and time) is not signed: that domain is Express's.
        let challenge =
            "carrier-express-1\nKEY\nGET\n/v1/messages/after/0\n1700000000000\n"
            + String(repeating: "ab", count: 16) + "\ne3b0"
        let (refused, refusedLines, refusal) = try await CarrierProcess.run(["sign", "--data", data, challenge])
        #expect(refused != 0 && refusedLines.isEmpty && refusal.contains("are Express requests and are not signed"))
    }

    @Test func importKeyReproducesTheVectorIdentity() async throws {
        let data = temporaryDirectory("import")
        defer { try? FileManager.default.removeItem(atPath: data) }
        // The first vector's key pair from Tests/CarrierNodeTests/Fixtures/identity-signatures.json.
        let secret = "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
        // From a file (where `ps` does not show it), no warning.
        let keyFile = data + "-key"
        try Data((secret + "\n").utf8).write(to: URL(fileURLWithPath: keyFile))
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let (status, lines, quiet) = try await CarrierProcess.run(
            ["id", "--data", data, "--import-key-file", keyFile, "--json"])
        #expect(status == 0 && !quiet.contains("warning"), "\(quiet)")
        let userId = try #require(json(lines.last)?["userId"] as? String)
        // From the environment, and on the command line with a warning: the same identity.
        let viaEnvironment = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/env"),
            arguments: [
                "CARRIER_SECRET_KEY=" + secret, ChildProcess.carrierExecutable.path, "id", "--data", data + "-env",
                "--json",
            ])
        #expect(await viaEnvironment.waitForExit(timeout: .seconds(60)) == 0)
        defer { try? FileManager.default.removeItem(atPath: data + "-env") }
        #expect(
            await eventually(within: .seconds(5)) { json(viaEnvironment.lines.last)?["userId"] as? String == userId })
        let (argv, argvLines, warned) = try await CarrierProcess.run(
            ["id", "--data", data + "-argv", "--import-key", secret, "--json"])
        defer { try? FileManager.default.removeItem(atPath: data + "-argv") }
        #expect(argv == 0 && json(argvLines.last)?["userId"] as? String == userId)
        #expect(warned.contains("--import-key on the command line can be read by any local user"))
        // base58 of 07a37cbc…1c7c, the vector's public key.
        let (verifyStatus, _, _) = try await CarrierProcess.run([
            "verify", userId, "x",
            "9234dcb9108c20402e5eda0b23b7aed97d8aa0964163ea12656abee1703d0c2084851154263230ccdee66c6a7639b43ab3d126be63df4e533be4a205f04bcd87",
        ])
        #expect(verifyStatus == 0)
        let (other, _, stderr) = try await CarrierProcess.run([
            "id", "--data", data, "--import-key", String(repeating: "ab", count: 32),
        ])
        #expect(other == 1)
        #expect(stderr.contains("already holds another identity"))
    }
}
