import AsyncExtras
import Foundation
import Testing

@testable import CarrierNode

@Suite struct SocketWatchTests {
    /// A UDP socket of this process bound to 127.0.0.1 on a port the kernel picks.
    static func boundSocket() -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }

    @Test func findsTheProcesssUdpSocketByItsPort() {
        let (fd, port) = Self.boundSocket()
        defer { close(fd) }
        #expect(SocketWatch.udpSocket(boundTo: port) == fd)
        #expect(SocketWatch.udpSocket(boundTo: port &+ 1) == nil || SocketWatch.udpSocket(boundTo: port &+ 1) != fd)
    }
}
