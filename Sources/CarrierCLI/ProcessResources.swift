import CShim
import Foundation

/// What this process holds now, for the daemon's `status` (a bot that runs
/// for weeks is watched by these): threads, open descriptors, resident
/// memory, and the heap in use (glibc's count of allocated blocks, mapped
/// ones included, which unlike the resident size does not move with the
/// allocator's pools).
enum ProcessResources {
    static func snapshot() -> [String: any Sendable] {
        var object: [String: any Sendable] = [
            "fds": (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1,
            "heapKB": Int(cshim_heap_bytes_in_use()) / 1024,
        ]
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) {
            for line in status.split(separator: "\n") {
                let parts = line.split(separator: ":", maxSplits: 1)
                guard parts.count == 2 else { continue }
                let value = Int(parts[1].split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
                switch parts[0] {
                case "Threads": object["threads"] = value
                case "VmRSS": object["rssKB"] = value
                default: break
                }
            }
        }
        return object
    }
}
