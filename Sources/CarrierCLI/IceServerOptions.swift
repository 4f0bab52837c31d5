import CarrierNode
import RtcPeer

/// The STUN and TURN servers a command that connects gathers with: the
/// config file's `iceServers` first, then `--stun URL` and `--turn URL`
/// (each repeatable; `--turn-user` and `--turn-pass` are the credentials of
/// every `--turn`). None by default: nothing is asked of a public server
/// unless the user names one (docs/cli.md says how).
enum IceServerOptions {
    static let valued: Set<String> = Set(["--stun", "--turn", "--turn-user"]).union(SecretOption.valued("--turn-pass"))

    static let help = """
          --stun URL             a STUN server, stun:HOST[:PORT] (repeatable; none by default)
          --turn URL             a TURN server, turn:HOST[:PORT][?transport=tcp] or turns:HOST[:PORT]
                                 (TLS), HOST a name or an IP address (repeatable), with
          --turn-user U --turn-pass-file FILE
                                 the TURN servers' credentials: the password on FILE's
                                 first line (- reads standard input), or in CARRIER_TURN_PASS
                                 (--turn-pass P works too, seen by every local user in ps)
        """

    static func servers(_ arguments: Arguments, _ global: GlobalOptions) throws -> [PeerConfiguration.IceServer] {
        let password =
            arguments.all("--turn").isEmpty
            ? nil
            : try SecretOption.value(
                arguments, option: "--turn-pass", environment: "CARRIER_TURN_PASS", output: global.output)
        for url in arguments.all("--stun") where !url.lowercased().hasPrefix("stun:") {
            throw UsageError("--stun takes a stun: URL, not \(url)")
        }
        for url in arguments.all("--turn") where !url.lowercased().hasPrefix("turn") {
            throw UsageError("--turn takes a turn: or turns: URL, not \(url)")
        }
        let user = arguments.value("--turn-user")
        let given =
            arguments.all("--stun").map { PeerConfiguration.IceServer(url: $0) }
            + arguments.all("--turn").map { PeerConfiguration.IceServer(url: $0, username: user, credential: password) }
        for server in given {
            do throws(PeerError) { try server.check() } catch {
                let hint = server.url.lowercased().hasPrefix("turn") ? " (give --turn-user and --turn-pass-file)" : ""
                throw UsageError("\(error)" + (error.description.contains("credential") ? hint : ""))
            }
        }
        return global.iceServers + given
    }
}

extension NetworkConfig.IceServer {
    /// As the peer connection takes them, one per URL.
    var peerServers: [PeerConfiguration.IceServer] {
        urls.map { PeerConfiguration.IceServer(url: $0, username: username, credential: credential) }
    }
}
