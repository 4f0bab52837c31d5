import COpenSSL

/// Keeps OpenSSL usable until the process is gone. By default OpenSSL frees
/// its global state in an `atexit` handler; a thread still hashing or
/// signing when the process exits (an Express pull signing its request, a
/// DTLS handshake) then takes a freed lock and crashes
/// (`pthread_rwlock_rdlock` at 0x18: `carrier friend add` died so, exiting
/// while its node pulled from a second Express node). The memory is the
/// process's anyway; the kernel takes it back.
public enum OpenSSLLifetime {
    /// Turns OpenSSL's exit-time cleanup off; call before any thread uses OpenSSL (idempotent).
    public static func keepThroughExit() { _ = once }

    private static let once: Void = {
        _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }()
}
