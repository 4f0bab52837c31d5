import CarrierNode
import CarrierWire
import FileSafety
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Files with Carrier peers: Beagle's apps send a file as one message
/// (`BeagleFileMessage`, at most 5 MiB) and take files only that way, so a
/// friend that never said hello (`Carrier.speaksOurExtras`) gets them so,
/// and such messages that arrive are saved (`messageFilesDirectory`).
extension FriendFiles {
    /// Sends the file at `path` as a Beagle file message; its events say how it ended.
    func sendAsMessage(at path: String, to friend: UserId, name: String?) async throws(CarrierError)
        -> FileTransferKey
    {
        let (fd, size, sha256) = try await FileDigest.openHashed(path)
        defer { close(fd) }
        let limit = UInt64(BeagleFileMessage.maxMessage - BeagleFileMessage.maxMeta - 4)
        guard size <= limit else {
            throw .tooLong("a Carrier peer takes files of at most \(limit) bytes in a message; this is \(size)")
        }
        var data = [UInt8](repeating: 0, count: Int(size))
        guard pread(fd, &data, data.count, 0) == data.count else { throw .storage("cannot read \(path)") }
        let fileName = SafeFileName.truncated(name ?? String(path.split(separator: "/").last ?? "file"), toBytes: 255)
        guard let message = BeagleFileMessage(fileName: fileName, data: data).encode() else {
            throw .tooLong("\(path) does not fit a Carrier message")
        }
        let key = FileTransferKey(friend: friend, sha256: sha256, outgoing: true)
        let node = node
        Task { [weak self] in
            let state: ReceiptState
            do { state = try await node.deliverMessage(message, to: friend.description) } catch {
                state = .error("\(error)")
            }
            await self?.finish(key, state, bytes: size)
        }
        return key
    }

    private func finish(_ key: FileTransferKey, _ state: ReceiptState, bytes: UInt64) {
        switch state {
        case .delivered, .offline: emit(.finished(key, .completed(path: nil, bytes: bytes)), .message)
        case .error(let why): emit(.finished(key, .failed(why)), .message)
        }
    }

    /// A message that is a Beagle file: saved, under a name of our making, if there is a place for it.
    func takeFileMessage(_ data: [UInt8], from friend: UserId) {
        guard let directory = configuration.messageFilesDirectory, let file = BeagleFileMessage.decode(data) else {
            return
        }
        let key = FileTransferKey(friend: friend, sha256: Sha256.digest(file.data), outgoing: false)
        let size = UInt64(file.data.count)
        if case .failure(let failure) = PrivateFiles.makeDirectory(directory),
            !FileManager.default.fileExists(atPath: directory)
        {
            return emit(.finished(key, .failed("cannot keep the file: \(failure)")), .message)
        }
        if let free = FreeSpace.bytes(at: directory), free < size + Self.messageFileReserve {
            return emit(.finished(key, .failed("no room for \(size) bytes in \(directory)")), .message)
        }
        let name = SafeFileName.make(file.fileName)
        for attempt in 0..<100 {
            let path = directory + "/" + (attempt == 0 ? name : "\(attempt)-\(name)")
            switch PrivateFiles.write(file.data, to: path) {
            case .success: return emit(.finished(key, .completed(path: path, bytes: size)), .message)
            case .failure(let failure) where failure.code == EEXIST: continue  // taken: the next name
            case .failure(let failure): return emit(.finished(key, .failed("\(failure)")), .message)
            }
        }
        emit(.finished(key, .failed("no free name for \(name) in \(directory)")), .message)
    }

    /// What the disk keeps free when a file message is saved.
    static let messageFileReserve: UInt64 = 512 << 20
}
