import CarrierNode
import CarrierWire
import FileSafety
import Foundation

struct IdCommand: Command {
    static let name = "id"
    static let daemonUse = DaemonUse.routed
    static let summary = "print this node's user id and address (creating the identity if needed)"
    static let help = """
        Usage: carrier id [--import-key-file FILE|-] [--export-key] [--nospam HEX]
                          [--import-carrier-data FILE] [--export-carrier-data FILE]

        Prints the user id (base58 of the 32-byte public key, what friends know you by)
        and the address (what others pass to `carrier friend add`). Creates an identity
        in the data directory on first use. --json prints {"userId":…,"address":…,"nospam":…}.

          --import-key-file FILE
                             create the identity from a 32-byte secret key (64 hex digits
                             on FILE's first line; - reads standard input), in a data
                             directory that holds no other identity. CARRIER_SECRET_KEY
                             in the environment does the same; --import-key HEX too, but
                             any local user sees the key in `ps` (a warning says so)
          --export-key       also print the secret key (64 hex digits; "secretKey" in JSON),
                             to back the identity up or move it: keep it secret
          --nospam HEX       set a new nospam (8 hex digits): the address changes, friend
                             requests to the old one stop arriving, friends stay
          --import-carrier-data FILE
                             create the identity from a Carrier app's carrier.data (its
                             keys, friends, profile and friend labels), in a data
                             directory that holds no identity yet
          --export-carrier-data FILE
                             write the identity as a Carrier app keeps it (carrier.data,
                             mode 0600, never over an existing file): it holds the
                             secret key
        """
    static let valued: Set<String> = SecretOption.valued("--import-key").union([
        "--nospam", "--import-carrier-data", "--export-carrier-data",
    ])
    static let flags: Set<String> = ["--export-key"]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        _ = try arguments.positionals(
            0...0, usage: "carrier id [--import-key-file FILE|-] [--export-key] [--nospam HEX]")
        var options = global.nodeOptions()
        if let hex = try SecretOption.value(
            arguments, option: "--import-key", environment: "CARRIER_SECRET_KEY", output: global.output)
        {
            guard let key = Hex.decode(hex), key.count == 32 else {
                throw UsageError("--import-key takes 64 hex digits")
            }
            options.secretKey = key
        }
        if let path = arguments.value("--import-carrier-data") {
            guard options.secretKey == nil else { throw UsageError("import a key or a carrier.data, not both") }
            options.carrierData = try readCarrierData(path)
        }
        if options.secretKey != nil || options.carrierData != nil, global.daemon != nil {
            throw UsageError("a daemon runs on \(global.dataDirectory) with its identity: stop it to import one")
        }
        return try await global.withNode(options) { node in
            try await describe(node, arguments, global.output)
        }
    }

    private static func describe(_ node: Carrier, _ arguments: Arguments, _ output: Output) async throws -> Int32 {
        if let text = arguments.value("--nospam") {
            guard text.count == 8, let bytes = Hex.decode(text) else { throw UsageError("--nospam takes 8 hex digits") }
            try await node.setNospam(bytes.reduce(0) { $0 << 8 | UInt32($1) })
        }
        let address = await node.address()
        let nospam = String(format: "%08x", await node.nospam())
        var text = "userId:  \(node.userId)\naddress: \(address)\nnospam:  \(nospam)"
        var json: [String: any Sendable] = [
            "userId": node.userId.description, "address": address.description, "nospam": nospam,
        ]
        if arguments.flag("--export-key") {
            let key = Hex.encode(await node.exportSecretKey())
            text += "\nsecretKey: \(key)"
            json["secretKey"] = key
            output.log("warning: the secret key is the identity; whoever has it is this node")
        }
        if let path = arguments.value("--export-carrier-data") {
            if case .failure(let failure) = PrivateFiles.write(await node.exportCarrierData(), to: path) {
                throw UsageError("\(failure)")
            }
            text += "\ncarrier.data written to \(path)"
            json["carrierData"] = path
            output.log("warning: \(path) holds the secret key; whoever has it is this node")
        }
        output.result(text, json)
        return 0
    }

    private static func readCarrierData(_ path: String) throws -> CarrierDataFile {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw UsageError("cannot read \(path)")
        }
        guard data.count <= CarrierDataFile.maxSize else { throw UsageError("\(path) is too large for a carrier.data") }
        do { return try CarrierDataFile.decode(Array(data)) } catch {
            throw UsageError("\(path): \(error)")
        }
    }
}

struct SignCommand: Command {
    static let name = "sign"
    static let daemonUse = DaemonUse.routed
    static let summary = "sign a message with this node's identity key"
    static let help = """
        Usage: carrier sign MESSAGE

        Prints the 64-byte identity signature of MESSAGE (its UTF-8 bytes) in hex.
        Anyone can check it with `carrier verify USERID MESSAGE SIGNATURE`.
        """

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let message = try arguments.positionals(1...1, usage: "carrier sign MESSAGE")[0]
        return try await global.withNode { node in
            let hex = Hex.encode(try await node.sign(Array(message.utf8)))
            global.output.result(hex, ["userId": node.userId.description, "signature": hex])
            return 0
        }
    }
}

struct VerifyCommand: Command {
    static let name = "verify"
    static let summary = "check a signature against a user id (exit 0 valid, 1 not)"
    static let help = """
        Usage: carrier verify USERID MESSAGE SIGNATURE

        Exits 0 if SIGNATURE (hex) is USERID's signature of MESSAGE, 1 if not.
        Needs no identity and no network.
        """

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        let values = try arguments.positionals(3...3, usage: "carrier verify USERID MESSAGE SIGNATURE")
        guard let userId = UserId(values[0]) else { throw CarrierError.invalidUserId(values[0]) }
        let signature = Hex.decode(values[2]) ?? []
        let valid = Carrier.verify(message: Array(values[1].utf8), signature: signature, userId: userId)
        global.output.result(valid ? "valid" : "invalid", ["valid": valid])
        return valid ? 0 : 1
    }
}
