import COpenSSL

/// An OpenSSL BIO that keeps each write as its own datagram. A memory BIO
/// would run a handshake flight's records together; over ICE each write must
/// become one UDP datagram. OpenSSL calls it synchronously from inside
/// SSL_do_handshake/SSL_write/SSL_read on the caller's thread.
final class DatagramSink {
    var datagrams: [[UInt8]] = []
    let mtu: Int

    init(mtu: Int) { self.mtu = mtu }

    func drain() -> [[UInt8]] {
        defer { datagrams.removeAll() }
        return datagrams
    }

    // Created once and never changed; OpenSSL method tables are read-only after setup.
    nonisolated(unsafe) static let method: OpaquePointer? = {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "carrier-datagram") else {
            return nil
        }
        let write: @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32 = { bio, data, length in
            guard let bio, let data, length > 0, let context = BIO_get_data(bio) else { return 0 }
            let sink = Unmanaged<DatagramSink>.fromOpaque(context).takeUnretainedValue()
            sink.datagrams.append(Array(UnsafeRawBufferPointer(start: data, count: Int(length))))
            return length
        }
        let control: @convention(c) (OpaquePointer?, Int32, Int, UnsafeMutableRawPointer?) -> Int = {
            bio, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: return 1
            case BIO_CTRL_DGRAM_QUERY_MTU, BIO_CTRL_DGRAM_GET_FALLBACK_MTU:
                guard let bio, let context = BIO_get_data(bio) else { return 1200 }
                return Unmanaged<DatagramSink>.fromOpaque(context).takeUnretainedValue().mtu
            case BIO_CTRL_WPENDING, BIO_CTRL_PENDING: return 0
            default: return 0
            }
        }
        let create: @convention(c) (OpaquePointer?) -> Int32 = { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        BIO_meth_set_write(method, write)
        BIO_meth_set_ctrl(method, control)
        BIO_meth_set_create(method, create)
        return method
    }()

    /// A new BIO writing into this sink. The sink must outlive the BIO.
    func makeBIO() -> OpaquePointer? {
        guard let method = Self.method, let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passUnretained(self).toOpaque())
        return bio
    }
}
