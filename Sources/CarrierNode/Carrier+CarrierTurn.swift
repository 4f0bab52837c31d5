import CarrierWire
import Foundation

extension Carrier {
    /// TURN on a bootstrap node, with credentials derived as Carrier derives
    /// them (`CarrierTurnCredentials`, wire notes §4); nil unless
    /// `options.turnFromBootstrap` and a bootstrap node has an IPv4 address.
    /// Carrier picks one of the relays toxcore is connected to; toxcore's
    /// API here names none, so one of the configured nodes is taken at random.
    /// The credentials do not expire (the server checks only the HMAC); a
    /// fresh nonce is drawn for every call.
    public func carrierTurnServer() -> TurnServerInfo? {
        guard options.turnFromBootstrap else { return nil }
        let candidates = options.bootstrapNodes.filter { node in
            var address = in_addr()
            return inet_pton(AF_INET, node.host, &address) == 1
        }
        guard let relay = candidates.randomElement() else { return nil }
        let nonce = carrierTurnNonceForTests ?? CarrierTurnCredentials.randomNonce()
        guard
            let credentials = CarrierTurnCredentials.derive(
                secretKey: exportSecretKey(), relayPublicKey: relay.publicKey, server: relay.host, nonce: nonce)
        else { return nil }
        let address = "\(relay.host):\(carrierTurnPortForTests ?? options.carrierTurnPort)"
        return TurnServerInfo(
            urls: ["turn:\(address)"], username: credentials.username, credential: credentials.password,
            expires: Int64(Date().timeIntervalSince1970) + 86_400, stunUrls: ["stun:\(address)"])
    }
}

extension Carrier {
    /// Tests: a fixed nonce, and the TURN port of a test's coturn.
    func setCarrierTurnForTests(nonce: [UInt8], port: UInt16) {
        carrierTurnNonceForTests = nonce
        carrierTurnPortForTests = port
    }
}
