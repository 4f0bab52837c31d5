import CarrierNode
import ExpressServer
import Foundation

struct ExpressCommand: Command {
    static let name = "express"
    static let summary = "run an Express node: offline messages for friends, and TURN credentials"
    static let help = """
        Usage: carrier express [--host 127.0.0.1] [--port N] [--db FILE|postgresql://…]
                               [--turn-secret FILE --turn-url URL [--turn-ttl SECONDS]]
                               [--stun-url URL] [--tls-cert FILE --tls-key FILE]

        Runs an Express node until Ctrl-C and prints one line, HOST:PORT:KEY, to
        pass to other commands as --express. Nodes store sealed messages for
        friends who are offline here (only the recipient can open them; this
        node learns sender, recipient, size and time) and hand them over when
        the recipient pulls. Every request is signed by its user's identity key
        and every answer by this node's key (docs/express.md). Carrier's own
        Express API is served beside it, for Carrier apps (docs/express.md).

          --host HOST          IPv4 address to listen on (default 127.0.0.1)
          --port N             TCP port (default: a free one)
          --db FILE            SQLite database: messages and this node's key survive
                               restarts (default: in memory, a new key each start)
          --db postgresql://USER@HOST:PORT/DB
                               PostgreSQL instead: every node given the same database
                               acts as one (same key, one mailbox per user, shared
                               quotas and replay protection; docs/express.md); the
                               password from PGPASSWORD or ~/.pgpass, not the URL
          --db-connections N   PostgreSQL connections (and request threads) of this
                               node (default 8)
          --quota N            messages waiting per recipient (default 1000)
          --sender-quota N     messages one sender keeps waiting here, over every
                               recipient (default 2000; 128 MiB)
          --max-store-mb N     what this node keeps in all; past it deposits get 507
                               (default 2048)
          --rate-limit N       deposits a sender makes a minute (default 300; an address
                               5 times as many; friend requests 1 a minute, 10 at once;
                               TURN credentials 6 a minute per user, 60 per address);
                               0: no rate limits (benchmarks)
          --turn-users WHO     who gets TURN credentials: anyone (the default; rate-
                               limited per user and per address), mailbox (users whose
                               mailbox is on this node), or FILE (the user ids in FILE,
                               one a line)
          --max-age SECONDS    a message not pulled by then is deleted (default 14 days)
          --turn-secret FILE   coturn's static-auth-secret (first line of FILE): this
                               node then issues time-limited TURN credentials
          --turn-url URL       the TURN server to hand out, e.g. turn:127.0.0.1:3478
                               (repeatable)
          --turn-ttl SECONDS   how long a TURN credential lasts (default 86400)
          --stun-url URL       a STUN server to hand out with the TURN credentials,
                               e.g. stun:127.0.0.1:3478 (repeatable)
          --tls-cert FILE      serve HTTPS with this certificate (PEM), as Carrier's
          --tls-key FILE       clients need; the key file must be private (mode 0600)
        """
    static let valued: Set<String> = [
        "--host", "--port", "--db", "--db-connections", "--quota", "--max-age", "--turn-secret", "--turn-url",
        "--turn-ttl", "--stun-url", "--sender-quota", "--max-store-mb", "--turn-users", "--rate-limit", "--tls-cert",
        "--tls-key",
    ]

    static func run(_ arguments: Arguments, _ global: GlobalOptions) async throws -> Int32 {
        _ = try arguments.positionals(0...0, usage: "carrier express [--host H] [--port N] [--db FILE|URL]")
        let host = arguments.value("--host") ?? "127.0.0.1"
        let port = try arguments.port("--port") ?? 0
        var configuration = ExpressService.Configuration(
            database: arguments.value("--db").map(ExpressDatabase.init(parsing:)) ?? .memory)
        if configuration.database.holdsPassword {
            global.output.log(
                "warning: the password in --db can be read by any local user (ps); leave it out of the URL and "
                    + "give it in PGPASSWORD, ~/.pgpass or a PGSERVICEFILE service (libpq reads them)")
        }
        if let value = try arguments.integer("--db-connections", in: 1...64) {
            guard case .postgres = configuration.database else {
                throw UsageError("--db-connections goes with --db postgresql://…")
            }
            configuration.databaseConnections = value
        }
        if let quota = arguments.value("--quota") {
            guard let value = Int(quota), value > 0 else { throw UsageError("--quota takes a positive number") }
            configuration.messagesPerRecipient = value
        }
        if let value = try arguments.integer("--sender-quota", in: 1...10_000_000) {
            configuration.recordsPerSender = value
        }
        if let value = try arguments.integer("--max-store-mb", in: 1...(1 << 30)) {
            configuration.bytesPerNode = Int64(value) << 20
        }
        if let rate = try arguments.integer("--rate-limit", in: 0...1_000_000) {
            configuration.rates.enabled = rate > 0
            configuration.rates.depositsPerMinute = Double(rate)
            configuration.rates.depositBurst = Double(rate)
            configuration.rates.addressDepositsPerMinute = Double(rate) * 5
            configuration.rates.addressDepositBurst = Double(rate) * 5
        }
        if let who = arguments.value("--turn-users") {
            configuration.turnPolicy = try Self.turnPolicy(who)
        }
        if arguments.value("--max-age") != nil {
            configuration.maxAgeSeconds = Int64(try arguments.seconds("--max-age", default: 0).inSeconds)
        }
        let urls = arguments.all("--turn-url")
        switch (arguments.value("--turn-secret"), urls.isEmpty) {
        case (let path?, false):
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let secret = text.split(whereSeparator: \.isNewline).first.map(String.init), !secret.isEmpty
            else { throw UsageError("cannot read a secret from the first line of \(path)") }
            let ttl = Int64(try arguments.seconds("--turn-ttl", default: 86_400).inSeconds)
            configuration.turn = TurnIssuer(
                urls: urls, secret: secret, lifetimeSeconds: ttl, stunUrls: arguments.all("--stun-url"))
        case (nil, true):
            guard arguments.all("--stun-url").isEmpty else {
                throw UsageError(
                    "--stun-url is handed out with TURN credentials: give --turn-secret and --turn-url too")
            }
        default:
            throw UsageError("--turn-secret and --turn-url go together")
        }
        for url in arguments.all("--stun-url") where !url.lowercased().hasPrefix("stun:") {
            throw UsageError("--stun-url takes a stun: URL, not \(url)")
        }
        let tls = try Self.tls(arguments)
        let server: ExpressEndpoint
        do { server = try ExpressEndpoint(host: host, port: port, configuration: configuration, tls: tls) } catch {
            throw CarrierError.invalidArgument("cannot start the Express node: \(error)")
        }
        let entry = server.entry.description
        global.output.result(entry, ["express": entry])
        global.output.log(
            "Express node on \(tls == nil ? "http" : "https")://\(host):\(server.server.port), store \(configuration.database)\(configuration.turn == nil ? "" : ", issuing TURN credentials"); Ctrl-C to stop"
        )
        await Termination.wait()
        server.stop()
        return 0
    }

    /// `--tls-cert` and `--tls-key`: both or neither; the key not readable by others.
    static func tls(_ arguments: Arguments) throws -> HttpServer.Tls? {
        switch (arguments.value("--tls-cert"), arguments.value("--tls-key")) {
        case (nil, nil): return nil
        case (let certificate?, let key?):
            var status = stat()
            guard stat(key, &status) == 0 else { throw UsageError("cannot read --tls-key \(key)") }
            guard status.st_mode & 0o077 == 0 else {
                throw UsageError("--tls-key \(key) may be read by others: chmod 600 it")
            }
            guard let certificateText = try? String(contentsOfFile: certificate, encoding: .utf8),
                let keyText = try? String(contentsOfFile: key, encoding: .utf8)
            else { throw UsageError("cannot read --tls-cert \(certificate) or --tls-key \(key)") }
            return HttpServer.Tls(certificate: certificateText, key: keyText)
        default:
            throw UsageError("--tls-cert and --tls-key go together")
        }
    }

    /// `--turn-users`: anyone, mailbox, or a file of user ids.
    static func turnPolicy(_ who: String) throws -> TurnPolicy {
        switch who {
        case "anyone": return .anyone
        case "mailbox": return .mailboxUsers
        default:
            guard let text = try? String(contentsOfFile: who, encoding: .utf8) else {
                throw UsageError("--turn-users takes anyone, mailbox or a readable file of user ids, not \(who)")
            }
            var users = Set<UserId>()
            for line in text.split(whereSeparator: \.isNewline) {
                let entry = line.trimmingCharacters(in: .whitespaces)
                guard !entry.isEmpty, !entry.hasPrefix("#") else { continue }
                guard let user = UserId(entry) else { throw UsageError("\(who): \(entry) is not a user id") }
                users.insert(user)
            }
            return .allowList(users)
        }
    }
}
