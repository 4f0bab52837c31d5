import Foundation

/// A throwaway certificate for 127.0.0.1 and its key (PEM), made with the
/// openssl command for one test's HTTPS server, in `directory`.
public enum SelfSignedCertificate {
    /// The certificate and key texts.
    public static func make(in directory: String) async throws -> (certificate: String, key: String) {
        let openssl = try ChildProcess(
            executable: URL(fileURLWithPath: "/usr/bin/openssl"),
            arguments: [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                directory + "/key.pem", "-out", directory + "/cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1",
            ])
        guard await openssl.waitForExit(timeout: .seconds(30)) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl: \(openssl.stderr)"])
        }
        return (
            try String(contentsOfFile: directory + "/cert.pem", encoding: .utf8),
            try String(contentsOfFile: directory + "/key.pem", encoding: .utf8)
        )
    }
}
