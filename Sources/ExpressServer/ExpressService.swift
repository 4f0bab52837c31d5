import CarrierNode
import CarrierWire
import Foundation

/// An HTTP request as the service sees it: headers by lower-case name.
public struct HttpRequest: Sendable {
    /// The HTTP method (GET, POST, …).
    public var method: String
    /// The URL path, without the query.
    public var path: String
    /// Headers by lower-case name.
    public var headers: [String: String]
    /// The body, up to the size limit.
    public var body: [UInt8]
    /// The body passed the size limit; what came was dropped.
    public var bodyTooLarge = false
    /// The client's IP address, for limits per address (nil: not known).
    public var peerAddress: String?
    /// Query arguments the service reads (Carrier's `until`).
    public var query: [String: String] = [:]

    /// A request as the HTTP server parsed it.
    public init(
        method: String, path: String, headers: [String: String], body: [UInt8], bodyTooLarge: Bool = false,
        peerAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.bodyTooLarge = bodyTooLarge
        self.peerAddress = peerAddress
    }
}

/// What the service answers.
public struct HttpResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// Headers to send.
    public var headers: [String: String]
    /// The body to send.
    public var body: [UInt8]

    init(_ status: Int, _ text: String, headers: [String: String] = [:]) {
        self.init(status: status, headers: headers, body: Array(text.utf8))
    }

    init(status: Int, headers: [String: String] = [:], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body as UTF-8 text (for tests and logs).
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// The Express offline-delivery service without its sockets: takes a request
/// and the time, returns the signed answer (`ExpressProtocol` has the rules,
/// docs/express.md the routes). Thread-safe: libmicrohttpd calls from a pool
/// of threads, and the store serialises or pools as it needs.
public final class ExpressService: @unchecked Sendable {
    /// Where the store lives and what each recipient may keep there.
    public struct Configuration: Sendable {
        /// The store: in memory, a SQLite file, or a PostgreSQL database.
        public var database: ExpressDatabase
        /// Records kept per recipient at most.
        public var messagesPerRecipient = 1000
        /// Bytes kept per recipient at most.
        public var bytesPerRecipient = 64 << 20
        /// Records older than this are purged.
        public var maxAgeSeconds: Int64 = 14 * 24 * 3600
        /// A pull returns at most this many records and about this many bytes.
        public var pullMaxRecords = 100
        /// …and at most about this many bytes.
        public var pullMaxBytes = 8 << 20
        /// A pulled record is not handed out again for this long unless it is
        /// deleted: two nodes pulling at once hand out different records.
        public var pullLeaseSeconds: Int64 = 30
        /// PostgreSQL connections this node opens at most (one per request in progress).
        public var databaseConnections = 8
        /// TURN credentials handed to callers, if a TURN server goes with this node.
        public var turn: TurnIssuer?
        /// Who may have TURN credentials.
        public var turnPolicy = TurnPolicy.anyone
        /// Friend requests waiting for one recipient at most.
        public var requestsPerRecipient = 100
        /// A friend request's sealed body at most (a request's hello is 1 KB at most).
        public var maxRequestSize = 4096
        /// Records one sender keeps waiting on this node at most, and their bytes.
        public var recordsPerSender = 2000
        /// (See `recordsPerSender`.)
        public var bytesPerSender = 128 << 20
        /// Bytes this node keeps in all at most; deposits past it get 507.
        public var bytesPerNode: Int64 = 2 << 30
        /// Requests a minute: deposits and friend requests per sender and per
        /// address, TURN credentials per user and per address (token buckets:
        /// each may spend its burst at once).
        public var rates = Rates()

        /// Requests a minute, and the bursts allowed (`RateLimiter`).
        public struct Rates: Sendable {
            /// Off: no rate limits at all (benchmarks, load tests; quotas still hold).
            public var enabled = true
            /// Deposits (messages and friend requests) a sender makes a minute, and at once.
            public var depositsPerMinute = 300.0
            /// (See the line above: at once.)
            public var depositBurst = 300.0
            /// Friend requests a sender leaves a minute, and at once.
            public var requestsPerMinute = 1.0
            /// (See the line above: at once.)
            public var requestBurst = 10.0
            /// Deposits from one address a minute, and at once.
            public var addressDepositsPerMinute = 1500.0
            /// (See the line above: at once.)
            public var addressDepositBurst = 1500.0
            /// TURN credentials a user gets a minute, and at once.
            public var turnPerMinute = 6.0
            /// (See the line above: at once.)
            public var turnBurst = 10.0
            /// TURN credentials one address gets a minute, and at once.
            public var addressTurnPerMinute = 60.0
            /// (See the line above: at once.)
            public var addressTurnBurst = 60.0

            /// The defaults.
            public init() {}
        }

        /// The defaults, stored in `database`.
        public init(database: ExpressDatabase) { self.database = database }

        /// The defaults, stored in the SQLite file `databasePath` (nil: in memory).
        public init(databasePath: String? = nil) {
            self.init(database: databasePath.map { .sqlite(path: $0) } ?? .memory)
        }
    }

    /// The node's key, which signs its answers and which clients pin (`--express HOST:PORT:KEY`).
    public let publicKey: [UInt8]
    private let signer: IdentitySigner
    /// The node's X25519 secret: Carrier's API seals with keys shared with it.
    let carrierSecretKey: [UInt8]
    let configuration: Configuration
    let store: any ExpressStore
    private let purgeLock = NSLock()
    private let now: @Sendable () -> Date
    private var lastPurge: Int64 = 0
    let limiters: Limiters

    /// Opens (or makes, or migrates) the store and the node's key; `now` is the clock, injectable for tests.
    public init(configuration: Configuration, now: @escaping @Sendable () -> Date = { Date() }) throws {
        self.configuration = configuration
        self.now = now
        limiters = Limiters(configuration.rates)
        let limits = StoreLimits(
            messagesPerRecipient: configuration.messagesPerRecipient,
            bytesPerRecipient: configuration.bytesPerRecipient,
            requestsPerRecipient: configuration.requestsPerRecipient, recordsPerSender: configuration.recordsPerSender,
            bytesPerSender: configuration.bytesPerSender, bytesPerNode: configuration.bytesPerNode,
            maxAgeSeconds: configuration.maxAgeSeconds, pullLeaseMilliseconds: configuration.pullLeaseSeconds * 1000)
        let secretKey: [UInt8]
        do {
            switch configuration.database {
            case .memory: store = try SQLiteExpressStore(path: nil, limits: limits)
            case .sqlite(let path): store = try SQLiteExpressStore(path: path, limits: limits)
            case .postgres(let url):
                store = try PostgresExpressStore(
                    url: url, connections: configuration.databaseConnections, limits: limits)
            }
            secretKey = try store.identitySecret {
                (0..<32).map { _ in UInt8.random(in: 0...255) }
            }
        } catch {
            throw CarrierError.storage("Express database \(configuration.database): \(error)")
        }
        guard let key = IdentitySignature.publicKey(secretKey: secretKey),
            let signer = try? IdentitySigner(secretKey: secretKey)
        else {
            throw CarrierError.storage("Express database holds an unusable identity key")
        }
        publicKey = key
        self.signer = signer
        carrierSecretKey = secretKey
    }

    /// The store's schema version (docs/express.md, "Upgrades").
    public func schemaVersion() throws -> Int { try store.schemaVersion() }

    /// Lets go of the store (PostgreSQL connections); requests after it fail with 500.
    public func close() { store.close() }

    /// Answers one request; the answer is signed for the request's nonce.
    public func handle(_ request: HttpRequest) -> HttpResponse {
        var response = route(request)
        let nonce = request.headers[ExpressProtocol.Header.nonce.lowercased()] ?? ""
        let message = ExpressProtocol.responseToSign(
            nonce: nonce, status: response.status, body: response.body,
            more: response.headers[ExpressProtocol.Header.more] ?? "")
        if let signature = try? signer.sign(message: message) {
            response.headers[ExpressProtocol.Header.signature] = Hex.encode(signature)
        }
        return response
    }

    private func route(_ request: HttpRequest) -> HttpResponse {
        let milliseconds = Int64(now().timeIntervalSince1970 * 1000)
        let purgeDue = purgeLock.withLock {
            guard milliseconds - lastPurge > 60_000 else { return false }
            lastPurge = milliseconds
            return true
        }
        if purgeDue { try? store.purge(now: milliseconds) }
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 2, parts[0].isEmpty else { return HttpResponse(404, "no such resource") }
        // Anything not under /v1 is Carrier's API (CarrierExpressApi.swift).
        guard parts[1] == "v1" else { return carrierRoute(request, route: Array(parts.dropFirst()), now: milliseconds) }
        guard parts.count >= 3 else { return HttpResponse(404, "no such resource") }
        let route = Array(parts[2...])
        switch (request.method, route.count > 0 ? route[0] : "") {
        case ("GET", "info") where route.count == 1:
            return json(["key": Base58.encode(publicKey), "version": ExpressProtocol.version])
        case ("POST", "messages") where route.count == 3, ("POST", "requests") where route.count == 3:
            let kind = route[0] == "requests" ? DepositKind.request : .message
            if kind == .request, request.body.count > configuration.maxRequestSize {
                return HttpResponse(413, "a friend request is larger than \(configuration.maxRequestSize) bytes")
            }
            guard limiters.allowDeposit(from: request.peerAddress, now: milliseconds) else {
                return HttpResponse(429, "too many deposits from your address; try again in a minute")
            }
            return authenticated(request, now: milliseconds) { sender in
                guard limiters.allowDeposit(by: sender, kind: kind, now: milliseconds) else {
                    return HttpResponse(
                        429, "too many \(kind == .request ? "friend requests" : "deposits") from you; try again later")
                }
                return deposit(request, route: route, sender: sender, kind: kind, now: milliseconds)
            }
        case ("PUT", "contacts") where route.count == 1:
            return authenticated(request, now: milliseconds) { user in
                let size = ExpressContact.size
                guard request.body.count % size == 0, request.body.count <= ExpressContact.maxContacts * size else {
                    return HttpResponse(
                        400, "contacts are \(size) bytes each, at most \(ExpressContact.maxContacts) of them")
                }
                let contacts = stride(from: 0, to: request.body.count, by: size).map {
                    Array(request.body[$0..<$0 + size])
                }
                guard (try? store.setContacts(for: user, contacts)) != nil else {
                    return HttpResponse(500, "the store failed")
                }
                return json(["contacts": contacts.count])
            }
        case ("GET", "messages") where route.count == 3 && route[1] == "after":
            return authenticated(request, now: milliseconds) { user in
                guard let seq = UInt64(route[2]) else { return HttpResponse(400, "after: not a number") }
                guard
                    let batch = try? store.pull(
                        for: user, after: seq, maxCount: configuration.pullMaxRecords,
                        maxBytes: configuration.pullMaxBytes, now: milliseconds, api: .ours)
                else { return HttpResponse(500, "the store failed") }
                var body: [UInt8] = []
                for record in batch.records { record.encode(into: &body) }
                return HttpResponse(
                    status: 200, headers: [ExpressProtocol.Header.more: batch.more ? "1" : "0"], body: body)
            }
        case ("DELETE", "messages") where route.count == 3 && route[1] == "through":
            return authenticated(request, now: milliseconds) { user in
                guard let seq = UInt64(route[2]) else { return HttpResponse(400, "through: not a number") }
                guard let count = try? store.delete(for: user, through: seq, api: .ours) else {
                    return HttpResponse(500, "the store failed")
                }
                return json(["deleted": count])
            }
        case ("POST", "turn") where route.count == 1:
            guard let turn = configuration.turn else {
                return HttpResponse(404, "this Express node issues no TURN credentials")
            }
            guard limiters.allowTurn(from: request.peerAddress, now: milliseconds) else {
                return HttpResponse(429, "too many TURN requests from your address; try again in a minute")
            }
            return authenticated(request, now: milliseconds) { user in
                guard limiters.allowTurn(by: user, now: milliseconds) else {
                    return HttpResponse(429, "too many TURN requests from you; try again in a minute")
                }
                if let refusal = turnRefusal(for: user) { return refusal }
                let info = turn.credentials(for: user, now: Int64(milliseconds / 1000))
                guard let data = try? JSONEncoder().encode(info) else { return HttpResponse(500, "encoding failed") }
                return HttpResponse(status: 200, headers: ["Content-Type": "application/json"], body: Array(data))
            }
        case (_, "info"), (_, "messages"), (_, "requests"), (_, "contacts"), (_, "turn"):
            return HttpResponse(405, "method \(request.method) not allowed here")
        default:
            return HttpResponse(404, "no such resource")
        }
    }

    private func deposit(_ request: HttpRequest, route: [String], sender: UserId, kind: DepositKind, now: Int64)
        -> HttpResponse
    {
        guard let recipient = UserId(route[1]) else { return HttpResponse(400, "the recipient is not a user id") }
        guard let id = Hex.decode(route[2]), id.count == 16 else {
            return HttpResponse(400, "the message id is not 32 hex digits")
        }
        guard !request.body.isEmpty else { return HttpResponse(400, "an empty message") }
        // A message needs the recipient's word that the sender is a friend (ExpressContact).
        if kind == .message {
            let header = request.headers[ExpressProtocol.Header.contact.lowercased()]
            guard let token = header.flatMap(Hex.decode), token.count == ExpressContact.size else {
                return HttpResponse(403, "a message needs the sender's contact token (X-Carrier-Contact)")
            }
            switch try? store.hasContact(ExpressContact.registered(token: token, sender: sender), for: recipient) {
            case true?: break
            case false?: return HttpResponse(403, "the recipient has not registered you as a contact on this node")
            case nil: return HttpResponse(500, "the store failed")
            }
        }
        switch try? store.deposit(
            recipient: recipient, sender: sender, messageId: id, body: request.body, kind: kind, now: now)
        {
        case .stored(let seq)?: return json(["seq": Int(seq)], status: 201)
        case .duplicate?: return json(["duplicate": true], status: 200)
        case .overQuota(let why)?: return HttpResponse(429, why)
        case .full(let why)?: return HttpResponse(507, why)
        case nil: return HttpResponse(500, "the store failed")
        }
    }

    /// Why `user` may not have TURN credentials under the node's policy, or nil.
    private func turnRefusal(for user: UserId) -> HttpResponse? {
        switch configuration.turnPolicy {
        case .anyone: return nil
        case .allowList(let users):
            return users.contains(user) ? nil : HttpResponse(403, "TURN credentials are for listed users only")
        case .mailboxUsers:
            switch try? store.hasMailbox(user) {
            case true?: return nil
            case false?: return HttpResponse(403, "TURN credentials are for users whose mailbox is on this node")
            case nil: return HttpResponse(500, "the store failed")
            }
        }
    }

    /// Checks the request's signature, time and nonce before running `body` for its user.
    private func authenticated(_ request: HttpRequest, now: Int64, _ body: (UserId) -> HttpResponse) -> HttpResponse {
        // A body past the limit is refused before anything else is looked at.
        if request.bodyTooLarge || request.body.count > ExpressProtocol.maxBodySize {
            return HttpResponse(413, "the body is larger than \(ExpressProtocol.maxBodySize) bytes")
        }
        let header = { (name: String) in request.headers[name.lowercased()] }
        guard let userText = header(ExpressProtocol.Header.user), let user = UserId(userText),
            let timeText = header(ExpressProtocol.Header.time), let time = Int64(timeText),
            let nonce = header(ExpressProtocol.Header.nonce), nonce.count == ExpressProtocol.nonceLength,
            Hex.decode(nonce) != nil,
            let signatureText = header(ExpressProtocol.Header.signature), let signature = Hex.decode(signatureText)
        else {
            return HttpResponse(
                400, "missing or malformed authentication headers (X-Carrier-User, -Time, -Nonce, -Signature)")
        }
        let skew = Int64(ExpressProtocol.maxClockSkew.components.seconds) * 1000
        guard abs(now - time) <= skew else {
            return HttpResponse(401, "the request's time is outside the allowed window")
        }
        let message = ExpressProtocol.requestToSign(
            serverKey: publicKey, method: request.method, path: request.path, time: time, nonce: nonce,
            body: request.body)
        guard IdentitySignature.verify(message: message, signature: signature, userId: user) else {
            return HttpResponse(401, "the signature does not match the user")
        }
        // Remembered until it could no longer pass the time check.
        do {
            guard try store.rememberNonce(user: user, nonce: nonce, expires: time + skew) else {
                return HttpResponse(401, "replayed request")
            }
        } catch {
            return HttpResponse(500, "the store failed")
        }
        return body(user)
    }

    private func json(_ object: [String: any Sendable], status: Int = 200) -> HttpResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return HttpResponse(status: status, headers: ["Content-Type": "application/json"], body: Array(data))
    }
}

/// Who may have TURN credentials from an Express node.
public enum TurnPolicy: Sendable, Equatable {
    /// Any user that signs its request (rate-limited).
    case anyone
    /// The listed users only.
    case allowList(Set<UserId>)
    /// Users whose mailbox is on this node: they registered their contacts here.
    case mailboxUsers
}

/// The service's rate limits, shared by libmicrohttpd's threads.
final class Limiters: @unchecked Sendable {
    private let lock = NSLock()
    private let enabled: Bool
    private var deposits: RateLimiter
    private var requests: RateLimiter
    private var addressDeposits: RateLimiter
    private var turn: RateLimiter
    private var addressTurn: RateLimiter

    init(_ rates: ExpressService.Configuration.Rates) {
        enabled = rates.enabled
        deposits = RateLimiter(perMinute: rates.depositsPerMinute, burst: rates.depositBurst)
        requests = RateLimiter(perMinute: rates.requestsPerMinute, burst: rates.requestBurst)
        addressDeposits = RateLimiter(perMinute: rates.addressDepositsPerMinute, burst: rates.addressDepositBurst)
        turn = RateLimiter(perMinute: rates.turnPerMinute, burst: rates.turnBurst)
        addressTurn = RateLimiter(perMinute: rates.addressTurnPerMinute, burst: rates.addressTurnBurst)
    }

    func allowDeposit(from address: String?, now: Int64) -> Bool {
        guard enabled, let address else { return true }
        return lock.withLock { addressDeposits.allow(address, now: now) }
    }

    func allowDeposit(by sender: UserId, kind: DepositKind, now: Int64) -> Bool {
        guard enabled else { return true }
        return lock.withLock {
            guard deposits.allow(sender.description, now: now) else { return false }
            return kind == .message || requests.allow(sender.description, now: now)
        }
    }

    func allowTurn(from address: String?, now: Int64) -> Bool {
        guard enabled, let address else { return true }
        return lock.withLock { addressTurn.allow(address, now: now) }
    }

    func allowTurn(by user: UserId, now: Int64) -> Bool {
        guard enabled else { return true }
        return lock.withLock { turn.allow(user.description, now: now) }
    }
}
