import COpenSSL
import CarrierNode
import Foundation

/// Issues time-limited TURN credentials in coturn's REST form
/// (`--use-auth-secret`): username `expiry:userId`, password
/// base64(HMAC-SHA1(secret, username)). coturn refuses them after `expiry`.
public struct TurnIssuer: Sendable {
    /// The TURN server's URLs, handed out as they are.
    public var urls: [String]
    /// The secret shared with coturn (`--static-auth-secret`); never logged.
    public var secret: String
    /// How long credentials stay valid.
    public var lifetimeSeconds: Int64
    /// STUN servers handed out beside the TURN server (none: not said).
    public var stunUrls: [String]

    /// An issuer for these URLs and this secret.
    public init(urls: [String], secret: String, lifetimeSeconds: Int64 = 24 * 3600, stunUrls: [String] = []) {
        self.urls = urls
        self.secret = secret
        self.lifetimeSeconds = lifetimeSeconds
        self.stunUrls = stunUrls
    }

    /// Credentials for `user`, valid for `lifetimeSeconds` from `now` (Unix seconds).
    public func credentials(for user: UserId, now: Int64) -> TurnServerInfo {
        let expires = now + lifetimeSeconds
        let username = "\(expires):\(user)"
        return TurnServerInfo(
            urls: urls, username: username, credential: Self.password(secret: secret, username: username),
            expires: expires, stunUrls: stunUrls.isEmpty ? nil : stunUrls)
    }

    /// coturn's password for a REST username: base64(HMAC-SHA1(secret, username)).
    public static func password(secret: String, username: String) -> String {
        var digest = [UInt8](repeating: 0, count: 20)
        var length: UInt32 = 0
        let key = Array(secret.utf8)
        let message = Array(username.utf8)
        _ = HMAC(EVP_sha1(), key, Int32(key.count), message, message.count, &digest, &length)
        return Data(digest.prefix(Int(length))).base64EncodedString()
    }
}
