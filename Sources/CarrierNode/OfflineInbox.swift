import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Offline messages pulled from Express, kept on disk until the application
/// has them, and the ids already taken, so that each message is handed over
/// once: pulled records are written here (fsynced) before they are deleted
/// on the Express node, and a record pulled again after a crash is known by
/// its id. Folder `offline-inbox/` in the data directory: one file per
/// message (`<order>-<id>.msg`: sender key, then the sealed bytes as stored),
/// and `seen` (one hex id per line, the newest `maxSeen`). Without a data
/// directory everything stays in memory.
struct OfflineInbox {
    struct Entry {
        var file: String
        var sender: UserId
        var sealed: [UInt8]
    }

    static let maxSeen = 10_000
    let directory: String?
    private(set) var entries: [Entry] = []
    private var seen: [String] = []
    private var seenSet: Set<String> = []
    private var nextOrder: UInt64 = 0

    init(dataDirectory: String?) {
        directory = dataDirectory.map { $0 + "/offline-inbox" }
        load()
    }

    func hasSeen(_ id: [UInt8]) -> Bool { seenSet.contains(Hex.encode(id)) }

    /// Keeps a message until it is delivered; false if its id was taken before.
    mutating func add(sender: UserId, sealed: [UInt8], id: [UInt8]) throws(CarrierError) -> Bool {
        let idText = Hex.encode(id)
        guard !seenSet.contains(idText) else { return false }
        nextOrder += 1
        let file = String(format: "%016llu", nextOrder) + "-" + idText + ".msg"
        if let directory {
            try DurableFile.write(directory + "/" + file, sender.publicKey + sealed, in: directory)
        }
        entries.append(Entry(file: file, sender: sender, sealed: sealed))
        remember(idText)
        try saveSeen()
        return true
    }

    /// Forgets a delivered message (its id stays seen).
    mutating func remove(_ entry: Entry) {
        entries.removeAll { $0.file == entry.file }
        if let directory { unlink(directory + "/" + entry.file) }
    }

    private mutating func remember(_ idText: String) {
        guard seenSet.insert(idText).inserted else { return }
        seen.append(idText)
        if seen.count > Self.maxSeen {
            let dropped = seen.prefix(seen.count - Self.maxSeen)
            for old in dropped { seenSet.remove(old) }
            seen.removeFirst(dropped.count)
        }
    }

    private func saveSeen() throws(CarrierError) {
        guard let directory else { return }
        try DurableFile.write(directory + "/seen", Array(seen.joined(separator: "\n").utf8), in: directory)
    }

    private mutating func load() {
        guard let directory else { return }
        mkdir(directory, 0o700)
        if let text = try? String(contentsOfFile: directory + "/seen", encoding: .utf8) {
            for line in text.split(separator: "\n") where line.count == 32 { remember(String(line)) }
        }
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { $0.hasSuffix(".msg") }.sorted()
        for file in files {
            guard let data = FileManager.default.contents(atPath: directory + "/" + file), data.count > 32,
                let sender = UserId(publicKey: data.prefix(32))
            else {
                unlink(directory + "/" + file)
                continue
            }
            entries.append(Entry(file: file, sender: sender, sealed: Array(data.dropFirst(32))))
            // A message kept here is taken, even if `seen` was not written after it.
            let parts = file.split(separator: "-")
            if parts.count == 2 { remember(String(parts[1].prefix(32))) }
            if let order = UInt64(parts[0]) { nextOrder = max(nextOrder, order) }
        }
    }
}
