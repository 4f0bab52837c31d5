import AsyncExtras
import Foundation
import Testing

@testable import CarrierNode

/// An actor on a `NodeThread`, as `Carrier` is: its loop's sleep and socket.
private actor OnNodeThread {
    let thread = NodeThread(name: "test-node")
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    private var watch: SocketWatch?

    deinit { thread.finish() }

    /// How long a sleep of `duration` took.
    func sleep(_ duration: Duration) async -> Duration {
        let started = ContinuousClock.now
        await thread.sleep(for: duration)
        return .now - started
    }

    func watch(port: UInt16) -> Bool {
        watch = SocketWatch(udpPort: port)
        thread.watch(watch)
        return watch != nil
    }

    func rearm() { thread.rearm() }
    func unwatch() { thread.watch(nil) }

    func onThread() -> Bool { thread.isCurrent }

    /// The name the kernel shows for the thread this runs on.
    func threadName() -> String? {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

@Suite struct NodeThreadTests {
    private static func send(to port: UInt16, from fd: Int32) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(fd, [1, 2, 3], 3, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// The actor's calls run on the node's thread, and a sleep ends at its time.
    @Test func theActorRunsOnItsThreadAndSleepsItsTime() async {
        let node = OnNodeThread()
        #expect(await node.onThread())
        #expect(!node.thread.isCurrent)
        let slept = await node.sleep(.milliseconds(30))
        #expect(slept >= .milliseconds(29) && slept < .seconds(2))
        // Named, so top, perf and gdb tell the node's thread from the pool's.
        #expect(await node.threadName() == "test-node")
    }

    /// `wake` from another thread ends the sleep at once, and a wake that
    /// comes before the sleep makes it return at once.
    @Test func aWakeEndsTheSleep() async {
        let node = OnNodeThread()
        async let slept = node.sleep(.seconds(30))
        let deadline = ContinuousClock.now + .seconds(10)
        while !node.thread.isAsleep, .now < deadline { await Task.yield() }
        node.thread.wake()
        #expect(await slept < .seconds(10))
        node.thread.wake()
        #expect(await node.sleep(.seconds(30)) < .seconds(10))
    }

    /// A datagram on the watched socket ends the sleep once; after `rearm`
    /// (toxcore read it) the next one does again; unwatched, none does.
    @Test func aDatagramEndsTheSleepOncePerRearm() async throws {
        let (fd, port) = SocketWatchTests.boundSocket()
        defer { close(fd) }
        let sender = SocketWatchTests.boundSocket()
        defer { close(sender.fd) }
        let node = OnNodeThread()
        #expect(await node.watch(port: port))
        Self.send(to: port, from: sender.fd)
        #expect(await node.sleep(.seconds(30)) < .seconds(10))
        // Not read yet, and not rearmed: the datagram waiting does not end the next sleep.
        #expect(await node.sleep(.milliseconds(50)) >= .milliseconds(49))
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(recv(fd, &buffer, buffer.count, 0) == 3)
        await node.rearm()
        Self.send(to: port, from: sender.fd)
        #expect(await node.sleep(.seconds(30)) < .seconds(10))
        #expect(recv(fd, &buffer, buffer.count, 0) == 3)
        await node.unwatch()
        await node.rearm()
        Self.send(to: port, from: sender.fd)
        #expect(await node.sleep(.milliseconds(50)) >= .milliseconds(49))
    }
}
