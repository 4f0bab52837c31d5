import CarrierWire
import Foundation

/// An Express node: where it listens and its key (`host:port:key`, as
/// `carrier express` prints it). The key authenticates its answers.
public struct ExpressNode: Equatable, Sendable, Codable, CustomStringConvertible {
    /// An IP address or host name.
    public var host: String
    /// Its HTTP port.
    public var port: UInt16
    /// Its key (32 bytes), which signs its answers.
    public var publicKey: [UInt8]
    /// The HTTP API it speaks: ours (`/v1`, signed requests and answers) or
    /// Carrier's own (HTTPS, sealed bodies; `CarrierExpressClient`).
    public var api: Api = .ours

    /// The two Express APIs.
    public enum Api: String, Sendable, Codable {
        case ours, carrier
    }

    /// An Express node by address and key.
    public init(host: String, port: UInt16, publicKey: [UInt8], api: Api = .ours) {
        self.host = host
        self.port = port
        self.publicKey = publicKey
        self.api = api
    }

    /// `host:port:key`, the key in base58 or 64 hex digits.
    public init(parsing text: String) throws(CarrierError) {
        let entry: BootstrapNode
        do { entry = try BootstrapNode(parsing: text) } catch {
            throw .invalidArgument("Express node \"\(text)\" is not host:port:key")
        }
        self.init(host: entry.host, port: entry.port, publicKey: entry.publicKey)
    }

    /// `host:port:key`, the key in base58.
    public var description: String { "\(host):\(port):\(Base58.encode(publicKey))" }

    private enum ApiKey: String, CodingKey { case api }

    /// Decodes `{"host","port","publicKey","api"?}` (`api`: "ours", the default, or "carrier").
    public init(from decoder: any Decoder) throws {
        let entry = try BootstrapNode(from: decoder)
        let api = try decoder.container(keyedBy: ApiKey.self).decodeIfPresent(Api.self, forKey: .api) ?? .ours
        self.init(host: entry.host, port: entry.port, publicKey: entry.publicKey, api: api)
    }

    /// Encodes `{"host","port","publicKey"}`, and `"api"` for a Carrier one.
    public func encode(to encoder: any Encoder) throws {
        try BootstrapNode(host: host, port: port, publicKey: publicKey).encode(to: encoder)
        if api == .carrier {
            var container = encoder.container(keyedBy: ApiKey.self)
            try container.encode(api, forKey: .api)
        }
    }

    /// Carrier's API is HTTPS only.
    var baseURL: String {
        "\(api == .carrier ? "https" : "http")://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }
}

/// TURN server credentials (coturn's REST form), from an Express node.
public struct TurnServerInfo: Equatable, Sendable, Codable {
    /// The TURN server's URLs.
    public var urls: [String]
    /// `expiry:userId`.
    public var username: String
    /// The password for `username`; never logged.
    public var credential: String
    /// Unix time (s) after which coturn refuses the credential.
    public var expires: Int64
    /// STUN servers to use beside it (`stun:` URLs; absent from older nodes).
    public var stunUrls: [String]?

    /// Credentials as an Express node hands them out.
    public init(urls: [String], username: String, credential: String, expires: Int64, stunUrls: [String]? = nil) {
        self.urls = urls
        self.username = username
        self.credential = credential
        self.expires = expires
        self.stunUrls = stunUrls
    }
}

/// The node's side of the Express protocol (`ExpressProtocol`): signed
/// requests to the configured nodes, tried in order, and answers checked
/// against each node's key. Runs off the node's actor.
struct ExpressClient: Sendable {
    let nodes: [ExpressNode]
    let userId: UserId
    let secretKey: [UInt8]
    var http = HttpClient()

    struct Failure: Error, CustomStringConvertible {
        var status: Int?
        var description: String
    }

    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    /// Stores a sealed message for `recipient`, with our contact token for
    /// each node (`ExpressContact`: the recipient registered it if we are friends).
    func deposit(_ sealed: [UInt8], to recipient: UserId, id: [UInt8]) async throws(Failure) {
        _ = try await request(
            "POST", "/v1/messages/\(recipient)/\(Hex.encode(id))", body: sealed, accept: [200, 201]
        ) { node in
            ExpressContact.token(secretKey: secretKey, peer: recipient, serverKey: node.publicKey).map {
                [ExpressProtocol.Header.contact: Hex.encode($0)]
            } ?? [:]
        }
    }

    /// Stores a sealed friend request for `recipient` (no token: anyone may, small and rate-limited).
    func depositRequest(_ sealed: [UInt8], to recipient: UserId, id: [UInt8]) async throws(Failure) {
        _ = try await request("POST", "/v1/requests/\(recipient)/\(Hex.encode(id))", body: sealed, accept: [200, 201])
    }

    /// Registers who may leave us messages on `node`: a hash per friend (`ExpressContact.registration`).
    func registerContacts(_ body: [UInt8], on node: ExpressNode) async throws(Failure) {
        _ = try await request("PUT", "/v1/contacts", body: body, accept: [200], on: [node])
    }

    /// Records after `seq`, in order, from the first node that answers; and whether more wait.
    func pull(after seq: UInt64, from node: ExpressNode) async throws(Failure) -> (
        records: [ExpressProtocol.Record], more: Bool
    ) {
        let answer = try await request("GET", "/v1/messages/after/\(seq)", body: [], accept: [200], on: [node])
        guard let records = ExpressProtocol.Record.decodeAll(answer.body) else {
            throw Failure(description: "\(node) sent a malformed list of messages")
        }
        return (records, answer.headers[ExpressProtocol.Header.more.lowercased()] == "1")
    }

    /// Deletes this user's records up to and with `seq` on `node`.
    func delete(through seq: UInt64, on node: ExpressNode) async throws(Failure) {
        _ = try await request("DELETE", "/v1/messages/through/\(seq)", body: [], accept: [200], on: [node])
    }

    func turnServer() async throws(Failure) -> TurnServerInfo {
        let answer = try await request("POST", "/v1/turn", body: [], accept: [200])
        guard let info = try? JSONDecoder().decode(TurnServerInfo.self, from: Data(answer.body)) else {
            throw Failure(description: "the Express node's TURN answer is not valid")
        }
        return info
    }

    /// Sends a signed request to each node in turn until one answers with an
    /// accepted status; a node that answers with another status is the answer
    /// (it refused), one that cannot be reached is skipped.
    func request(
        _ method: String, _ path: String, body: [UInt8], accept: Set<Int>, on chosen: [ExpressNode]? = nil,
        extraHeaders: (ExpressNode) -> [String: String] = { _ in [:] }
    ) async throws(Failure) -> Answer {
        var lastError = Failure(description: "no Express node is configured")
        for node in chosen ?? nodes {
            let nonce = ExpressProtocol.newNonce()
            guard
                var headers = ExpressProtocol.signedHeaders(
                    serverKey: node.publicKey, method: method, path: path, body: body, userId: userId,
                    secretKey: secretKey, nonce: nonce)
            else { throw Failure(description: "cannot sign the request") }
            headers["Content-Type"] = "application/octet-stream"
            headers.merge(extraHeaders(node)) { mine, _ in mine }
            let response: HttpClient.Response
            do {
                response = try await http.send(method: method, url: node.baseURL + path, headers: headers, body: body)
            } catch {
                lastError = Failure(description: "Express node \(node.host):\(node.port) unreachable: \(error)")
                continue
            }
            // The answer must come from the node we know: signed with its key, for our nonce.
            let signed = ExpressProtocol.responseToSign(
                nonce: nonce, status: response.status, body: response.body,
                more: response.headers[ExpressProtocol.Header.more.lowercased()] ?? "")
            guard let text = response.headers[ExpressProtocol.Header.signature.lowercased()],
                let answerSignature = Hex.decode(text),
                IdentitySignature.verify(message: signed, signature: answerSignature, publicKey: node.publicKey)
            else {
                lastError = Failure(
                    status: response.status,
                    description: "the answer from \(node.host):\(node.port) is not signed by the Express node's key")
                continue
            }
            guard accept.contains(response.status) else {
                let reason = String(decoding: response.body.prefix(300), as: UTF8.self)
                throw Failure(status: response.status, description: "Express refused (\(response.status)): \(reason)")
            }
            return Answer(status: response.status, headers: response.headers, body: response.body)
        }
        throw lastError
    }
}
