import AsyncExtras
import CarrierLog
import CarrierNode
import RtcCalls
import RtcPeer

/// Call signals over the Carrier node, as the reference peers carry them
/// (carrier wire notes §7.1): each signal is an invite to `friend:carrier`
/// with the JSON as its data, and every signal received is answered with a
/// reply (status 0, data "data"), without which the sender would wait out
/// the invite timeout. Invites only come from friends (the node drops the
/// rest), and a signal must fit the 8 KB invite limit. When the node knows
/// Express nodes, every call also gets the TURN server they hand out, with
/// fresh time-limited credentials (`Carrier.turnServerInfo`).
public final class CarrierSignalingProvider: SignalingProvider, Sendable {
    /// The extension calls use; sessions use their own (`session`) so that a
    /// node can take sessions without answering calls, and the other way round.
    public static let extensionName = "carrier"
    /// The node the signals travel over.
    public let carrier: Carrier
    /// The invite extension the signals use (`carrier`, or `session`).
    public let extensionName: String
    private let stream: AsyncStream<SignalingInput>
    private let continuation: AsyncStream<SignalingInput>.Continuation
    private let listener: Task<Void, Never>
    private let extraServers: [PeerConfiguration.IceServer]

    /// Registers the extension (`carrier` for calls) on a started node.
    public init(
        carrier: Carrier, extensionName: String = CarrierSignalingProvider.extensionName,
        iceServers: [PeerConfiguration.IceServer] = []
    ) async throws {
        self.carrier = carrier
        self.extensionName = extensionName
        extraServers = iceServers
        // Fetched now so that the first call does not wait for it.
        if await carrier.hasExpress { _ = await Self.turn(carrier) }
        let invites = try await carrier.registerExtension(extensionName)
        let (stream, continuation) = AsyncStream<SignalingInput>.makeStream(bufferingPolicy: .bufferingNewest(1024))
        self.stream = stream
        self.continuation = continuation
        listener = Task {
            for await event in invites {
                guard case .inviteRequest(let invite) = event else { continue }
                try? await carrier.replyInvite(invite, status: 0, data: Array("data".utf8))
                let from = invite.from.description
                do throws(SignalError) {
                    continuation.yield(.signal(try RtcSignal.decode(invite.data), from: from))
                } catch {
                    continuation.yield(.undecodable(error, from: from))
                }
            }
            continuation.finish()
        }
    }

    deinit { listener.cancel() }

    /// Sends a signal as an invite to `peer:extension`; a reply that is not status 0 comes back as `.undelivered`.
    public func send(_ signal: RtcSignal, to peer: String) async throws(SignalError) {
        let data = signal.encoded()
        guard data.count <= Carrier.maxInviteSize else { throw .tooLarge(data.count) }
        let continuation = continuation
        do {
            try await carrier.postInvite(data, to: peer + ":" + extensionName) { reply in
                if reply.status != 0 {
                    continuation.yield(.undelivered(signal, to: peer, reason: reply.reason ?? "status \(reply.status)"))
                }
            }
        } catch {
            throw .notDelivered(error.description)
        }
    }

    /// Friends' signals (and what did not decode), in the order they came.
    public func inputs() async -> AsyncStream<SignalingInput> { stream }

    private static let log = Logger("calls")

    /// TURN from Express; a call goes on without it (said in the log, once
    /// per process and reason: every call asks).
    private static func turn(_ carrier: Carrier) async -> TurnServerInfo? {
        do { return try await carrier.turnServerInfo() } catch {
            let first = said.withLock { $0.insert(error.description).inserted }
            guard first else { return nil }
            if case .unavailable = error {
                log.info("calls go without TURN: \(error)")
            } else {
                log.warning("calls go without TURN for now: \(error)")
            }
            return nil
        }
    }

    private static let said = Locked<Set<String>>([])

    /// The servers given at init; the TURN server the node's Express nodes
    /// hand out, with fresh credentials, and the STUN servers they name; and
    /// on the Carrier network, TURN on a bootstrap node with credentials
    /// derived the Carrier way (`Carrier.carrierTurnServer`).
    public func iceServers() async -> [PeerConfiguration.IceServer] {
        var servers = extraServers
        if await carrier.hasExpress, let turn = await Self.turn(carrier) { servers += Self.servers(turn) }
        if let turn = await carrier.carrierTurnServer() { servers += Self.servers(turn) }
        return servers
    }

    private static func servers(_ turn: TurnServerInfo) -> [PeerConfiguration.IceServer] {
        (turn.stunUrls ?? []).map { PeerConfiguration.IceServer(url: $0) }
            + turn.urls.map {
                PeerConfiguration.IceServer(url: $0, username: turn.username, credential: turn.credential)
            }
    }

    /// Only friends may call (the node delivers only their invites; this also guards `makeCall`).
    public func isFriend(_ peer: String) async -> Bool {
        guard let id = UserId(peer) else { return false }
        return await carrier.isFriend(id)
    }
}
