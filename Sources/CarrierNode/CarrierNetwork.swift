/// The public Carrier network, as the Carrier native SDK's default
/// configuration (`config/carrier.conf`) lists it: what `--network carrier`
/// joins. Joining it is the user's choice; no test, demo or CI run uses it.
public enum CarrierNetwork {
    /// The names `--network` takes.
    public static let names = ["carrier"]

    /// The public bootstrap nodes (each a DHT node, a TCP relay on the same
    /// port, and a TURN server on 3478 with Carrier's credentials).
    public static let bootstrapNodes: [BootstrapNode] = [
        ("13.58.208.50", "89vny8MrKdDKs7Uta9RdVmspPjnRMdwMmaiEW27pZ7gh"),
        ("18.216.102.47", "G5z8MqiNDFTadFUPfMdYsYtkUDbX5mNCMVHMZtsCnFeb"),
        ("18.216.6.197", "H8sqhRrQuJZ6iLtP2wanxt4LzdNrN2NNFnpPdq1uJ9n2"),
        ("54.193.141.205", "7TfZWZNV8vnBxxWzJXuvKgX2QyKkLpg2oXx3LQ5tg8LW"),
        ("52.74.215.181", "Xv6d34WaUw9bPn7YihzVAFw7D2igbQJZ3jwmzzfYVFV"),
        ("52.63.19.190", "EeNenbyS4sx3qtu82esT1V1NMe9dZib5LyQmYGM6fboK"),
        ("52.57.248.163", "CfJLve8FNQPQJ9xYQ8oEVkPxeAPCN7iSdhnYFkWmWgLn"),
        ("35.179.41.220", "6u2vKadPa9wqDf531QaZy7FJN3c7Wzntm7dKXxXqvyNB"),
    ].compactMap { host, key in
        BootstrapNode.parseKey(key).map { BootstrapNode(host: host, port: 33445, publicKey: $0) }
    }

    /// The public Express node (Carrier's API, HTTPS).
    public static let expressNodes: [ExpressNode] = [
        ("ece00.trinity-tech.io", "FyTt6cgnoN1eAMfmTRJCaX2UoN6ojAgCimQEbv1bruy9")
    ].compactMap { host, key in
        BootstrapNode.parseKey(key).map { ExpressNode(host: host, port: 443, publicKey: $0, api: .carrier) }
    }

    /// The options for a node on the named network: its bootstrap nodes and
    /// Express node, the Carrier framing and TURN from the bootstrap nodes.
    /// False for a name not in `names`.
    public static func apply(_ name: String, to options: inout CarrierOptions) -> Bool {
        guard name == "carrier" else { return false }
        options.bootstrapNodes += bootstrapNodes
        options.expressNodes += expressNodes
        options.carrierFraming = true
        options.turnFromBootstrap = true
        return true
    }
}
