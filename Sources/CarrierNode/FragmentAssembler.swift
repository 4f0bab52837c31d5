/// Reassembles fragmented payloads (bulk messages, invites and replies) with
/// bounded memory: a cap on the claimed total, on concurrent transfers per
/// peer and on buffered bytes overall, and a timeout for incomplete ones.
/// Pure logic: time is passed in, so every path is testable without a network.
struct FragmentAssembler<Peer: Hashable> {
    struct Limits {
        /// The largest payload a transfer may claim.
        var maxTotal: Int
        /// Incomplete transfers one peer may have open at once.
        var maxTransfersPerPeer: Int = 8
        /// Bytes buffered across all incomplete transfers.
        var maxBufferedBytes: Int = 64 << 20
        /// An incomplete transfer with no new fragment for this long is dropped.
        var timeout: Duration = .seconds(60)
    }

    enum Outcome: Equatable {
        case incomplete
        case complete([UInt8])
        case rejected(AssemblyError)
        /// A later fragment of a transfer already rejected: dropped without another report.
        case discarded
    }

    struct Key: Hashable {
        var peer: Peer
        var transferId: UInt64
    }

    private struct Transfer {
        var total: Int
        var data: [UInt8]
        var lastSeen: ContinuousClock.Instant
    }

    let limits: Limits
    private var transfers: [Key: Transfer] = [:]
    private var bufferedBytes = 0
    /// The most recently rejected transfers (bounded), to discard their remaining fragments.
    private var failed: [Key] = []
    static var failedMemory: Int { 64 }

    init(limits: Limits) { self.limits = limits }

    var isEmpty: Bool { transfers.isEmpty }
    var count: Int { transfers.count }

    mutating func add(_ fragment: WirePacket.Fragment, from peer: Peer, now: ContinuousClock.Instant) -> Outcome {
        let key = Key(peer: peer, transferId: fragment.transferId)
        let total = Int(fragment.total)
        if failed.contains(key) { return .discarded }
        guard var transfer = transfers[key] else {
            let outcome = start(fragment, key: key, now: now)
            if case .rejected = outcome { rememberFailure(key) }
            return outcome
        }
        guard total == transfer.total else { return fail(key, .inconsistentTotal) }
        guard Int(fragment.offset) == transfer.data.count else { return fail(key, .missingFragment) }
        guard !fragment.data.isEmpty, transfer.data.count + fragment.data.count <= total else {
            return fail(key, .overflow)
        }
        transfers[key] = nil  // keep the buffer uniquely referenced while appending
        transfer.data.append(contentsOf: fragment.data)
        transfer.lastSeen = now
        bufferedBytes += fragment.data.count
        return finishOrKeep(transfer, key: key)
    }

    /// Drops transfers that saw no fragment within the timeout; returns their keys.
    mutating func expire(now: ContinuousClock.Instant) -> [Key] {
        let expired = transfers.filter { now - $0.value.lastSeen > limits.timeout }.map(\.key)
        for key in expired {
            remove(key)
            rememberFailure(key)
        }
        return expired
    }

    /// Forgets everything from a peer (it went offline or was removed).
    mutating func removeAll(from peer: Peer) {
        for key in transfers.keys where key.peer == peer { remove(key) }
    }

    private mutating func start(_ fragment: WirePacket.Fragment, key: Key, now: ContinuousClock.Instant) -> Outcome {
        let total = Int(fragment.total)
        guard fragment.offset == 0 else { return .rejected(.missingFragment) }
        guard total >= 1, total <= limits.maxTotal else { return .rejected(.oversizeClaim(total)) }
        guard !fragment.data.isEmpty, fragment.data.count <= total else { return .rejected(.overflow) }
        if fragment.data.count == total { return .complete(fragment.data) }
        guard transfers.keys.filter({ $0.peer == key.peer }).count < limits.maxTransfersPerPeer else {
            return .rejected(.tooManyTransfers)
        }
        guard bufferedBytes + fragment.data.count <= limits.maxBufferedBytes else { return .rejected(.bufferFull) }
        var data = fragment.data
        // Reserve what was claimed, bounded by the limit checked above.
        data.reserveCapacity(total)
        bufferedBytes += data.count
        return finishOrKeep(Transfer(total: total, data: data, lastSeen: now), key: key)
    }

    private mutating func finishOrKeep(_ transfer: Transfer, key: Key) -> Outcome {
        if transfer.data.count == transfer.total {
            bufferedBytes -= transfer.data.count
            return .complete(transfer.data)
        }
        transfers[key] = transfer
        return .incomplete
    }

    private mutating func fail(_ key: Key, _ error: AssemblyError) -> Outcome {
        remove(key)
        rememberFailure(key)
        return .rejected(error)
    }

    private mutating func rememberFailure(_ key: Key) {
        failed.append(key)
        if failed.count > Self.failedMemory { failed.removeFirst() }
    }

    private mutating func remove(_ key: Key) {
        if let transfer = transfers.removeValue(forKey: key) { bufferedBytes -= transfer.data.count }
    }
}

/// Why a fragmented payload was dropped.
enum AssemblyError: Error, Equatable, Sendable {
    /// A fragment arrived out of sequence: one before it was lost.
    case missingFragment
    /// The claimed total is zero or above the limit for this kind of payload.
    case oversizeClaim(Int)
    /// A fragment would run past the claimed total, or carried no data.
    case overflow
    /// Fragments of one transfer disagree on the total.
    case inconsistentTotal
    case tooManyTransfers
    case bufferFull
}
