import AsyncExtras
import CarrierNode
import Foundation

/// `express-load`: N senders depositing and M recipients pulling through one
/// or more Express nodes at once, for `make bench` (scripts/bench_express.py).
/// Every request is signed as a client signs it; the senders' requests are
/// signed before the clock starts, so what is timed is the nodes and their
/// store, not this process's signing. Prints one JSON line: deposits per
/// second, deposit latency p50/p99, and what was lost or handed out twice.
let usage = """
    Usage: express-load --node HOST:PORT:KEY [--node …] [--senders 8] [--recipients 16]
                        [--deposits 10000] [--size 1024]

    Senders go to the nodes in turn (sender i to node i mod nodes); each
    recipient has a puller on every node, pulling and deleting as it goes.
    Bodies are `size` bytes (the node does not open them): a 16-byte id first,
    which is how lost and doubled records are counted.
    """

struct Options {
    var nodes: [ExpressNode] = []
    var senders = 8
    var recipients = 16
    var deposits = 10_000
    var size = 1024

    init(_ arguments: [String]) throws {
        var index = 0
        func next() throws -> String {
            index += 1
            guard index < arguments.count else { throw Failure("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--node": nodes.append(try ExpressNode(parsing: try next()))
            case "--senders": senders = try Self.positive(try next(), "--senders")
            case "--recipients": recipients = try Self.positive(try next(), "--recipients")
            case "--deposits": deposits = try Self.positive(try next(), "--deposits")
            case "--size": size = max(16, try Self.positive(try next(), "--size"))
            case "--help", "-h":
                print(usage)
                exit(0)
            default: throw Failure("unknown argument \(arguments[index])\n\(usage)")
            }
            index += 1
        }
        guard !nodes.isEmpty else { throw Failure("give at least one --node\n\(usage)") }
    }

    static func positive(_ text: String, _ name: String) throws -> Int {
        guard let value = Int(text), value > 0 else { throw Failure("\(name) takes a positive number") }
        return value
    }
}

struct Failure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A user of the load: a key pair.
struct User: Sendable {
    let secretKey: [UInt8]
    let id: UserId

    init() throws {
        let secret = (0..<32).map { _ in UInt8.random(in: 0...255) }
        guard let key = IdentitySignature.publicKey(secretKey: secret), let id = UserId(publicKey: key) else {
            throw Failure("cannot make a key pair")
        }
        secretKey = secret
        self.id = id
    }

    func request(_ method: String, _ path: String, body: [UInt8], to node: ExpressNode) -> [String: String] {
        var headers =
            ExpressProtocol.signedHeaders(
                serverKey: node.publicKey, method: method, path: path, body: body, userId: id, secretKey: secretKey)
            ?? [:]
        headers["Content-Type"] = "application/octet-stream"
        return headers
    }
}

struct Deposit {
    var node: ExpressNode
    var path: String
    var headers: [String: String]
    var body: [UInt8]
}

/// What the workers found, gathered under one lock.
struct Tally {
    var latencies: [Double] = []
    var statuses: [Int: Int] = [:]
    var stored: Set<[UInt8]> = []
    var received: [[UInt8]] = []
    var errors: [String] = []
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]
}

func run() throws {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    let senders = try (0..<options.senders).map { _ in try User() }
    let recipients = try (0..<options.recipients).map { _ in try User() }

    // Each recipient lets every sender leave it messages (ExpressContact), on every node.
    for recipient in recipients {
        for node in options.nodes {
            let body = ExpressContact.registration(
                secretKey: recipient.secretKey, friends: senders.map(\.id), serverKey: node.publicKey)
            let answer = try HttpConnection(host: node.host, port: node.port).send(
                "PUT", "/v1/contacts", headers: recipient.request("PUT", "/v1/contacts", body: body, to: node),
                body: body)
            guard answer.status == 200 else { throw Failure("registering contacts answered \(answer.status)") }
        }
    }

    // Sign everything before the clock starts.
    var plans: [[Deposit]] = Array(repeating: [], count: options.senders)
    for index in 0..<options.deposits {
        let sender = index % options.senders
        let node = options.nodes[sender % options.nodes.count]
        let recipient = recipients[index % options.recipients]
        let id = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let body = id + [UInt8](repeating: UInt8(index & 0xff), count: options.size - 16)
        let path = "/v1/messages/\(recipient.id)/\(Hex.encode(id))"
        var headers = senders[sender].request("POST", path, body: body, to: node)
        if let token = ExpressContact.token(
            secretKey: senders[sender].secretKey, peer: recipient.id, serverKey: node.publicKey)
        {
            headers[ExpressProtocol.Header.contact] = Hex.encode(token)
        }
        plans[sender].append(Deposit(node: node, path: path, headers: headers, body: body))
    }

    let tally = Locked(Tally())
    let sendersLeft = Locked(options.senders)
    let started = Date()
    let finished = Locked<Date?>(nil)
    let group = DispatchGroup()
    let plansToRun = plans

    for plan in plansToRun {
        group.enter()
        Thread.detachNewThread {
            defer { group.leave() }
            guard let first = plan.first else { return }
            let connection = HttpConnection(host: first.node.host, port: first.node.port)
            var latencies: [Double] = []
            var statuses: [Int: Int] = [:]
            var stored: [[UInt8]] = []
            for deposit in plan {
                let begin = DispatchTime.now().uptimeNanoseconds
                do {
                    let answer = try connection.send("POST", deposit.path, headers: deposit.headers, body: deposit.body)
                    statuses[answer.status, default: 0] += 1
                    if answer.status == 201 { stored.append(Array(deposit.body.prefix(16))) }
                } catch {
                    statuses[0, default: 0] += 1
                }
                latencies.append(Double(DispatchTime.now().uptimeNanoseconds - begin) / 1e6)
            }
            tally.withLock {
                $0.latencies += latencies
                $0.statuses.merge(statuses, uniquingKeysWith: +)
                $0.stored.formUnion(stored)
            }
            let last = sendersLeft.withLock {
                $0 -= 1
                return $0 == 0
            }
            if last { finished.withLock { $0 = Date() } }
        }
    }

    // Pullers: one per recipient per node, until the senders are done and nothing is left.
    for recipient in recipients {
        for node in options.nodes {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let connection = HttpConnection(host: node.host, port: node.port)
                var received: [[UInt8]] = []
                var idleAfterSenders = 0
                while idleAfterSenders < 2 {
                    let sendersDone = sendersLeft.withLock { $0 == 0 }
                    let path = "/v1/messages/after/0"
                    do {
                        let answer = try connection.send(
                            "GET", path, headers: recipient.request("GET", path, body: [], to: node), body: [])
                        guard answer.status == 200, let records = ExpressProtocol.Record.decodeAll(answer.body) else {
                            throw Failure("pull answered \(answer.status)")
                        }
                        received += records.map { Array($0.sealed.prefix(16)) }
                        if let last = records.last?.seq {
                            let delete = "/v1/messages/through/\(last)"
                            _ = try connection.send(
                                "DELETE", delete, headers: recipient.request("DELETE", delete, body: [], to: node),
                                body: [])
                            continue
                        }
                    } catch {
                        tally.withLock { $0.errors.append("\(error)") }
                        return
                    }
                    if sendersDone { idleAfterSenders += 1 }
                    // Nothing waiting: pull again shortly, as a client's next pull would.
                    usleep(200_000)
                }
                tally.withLock { $0.received += received }
            }
        }
    }
    group.wait()

    let result = tally.withLock { $0 }
    let elapsed = (finished.withLock { $0 } ?? Date()).timeIntervalSince(started)
    let sorted = result.latencies.sorted()
    let unique = Set(result.received)
    let summary: [String: Any] = [
        "nodes": options.nodes.count, "senders": options.senders, "recipients": options.recipients,
        "deposits": options.deposits, "size": options.size,
        "stored": result.stored.count,
        "statuses": Dictionary(uniqueKeysWithValues: result.statuses.map { (String($0.key), $0.value) }),
        "depositsPerSecond": Double(result.stored.count) / max(elapsed, 1e-9),
        "p50Ms": percentile(sorted, 0.5), "p99Ms": percentile(sorted, 0.99),
        "received": result.received.count,
        "lost": result.stored.subtracting(unique).count,
        "doubled": result.received.count - unique.count,
        "errors": Array(result.errors.prefix(5)),
    ]
    let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}

do { try run() } catch {
    FileHandle.standardError.write(Data("express-load: \(error)\n".utf8))
    exit(1)
}
