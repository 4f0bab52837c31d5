// An identity: made on first start and kept in its data directory, its user
// id and address, a signature anyone can check with the user id alone, and
// the secret key exported and restored into another directory (the same
// identity again). No network needed.
//
//   swift run identity [DATA_DIR]
import CarrierNode
import Foundation

func say(_ text: String) { FileHandle.standardOutput.write(Data((text + "\n").utf8)) }

let root = NSTemporaryDirectory() + "identity-\(getpid())"
defer { try? FileManager.default.removeItem(atPath: root) }
let directory = CommandLine.arguments.dropFirst().first ?? root + "/me"

// The identity lives in the data directory: the same directory, the same user id.
let node = try Carrier(options: CarrierOptions(dataDirectory: directory))
say("user id  \(node.userId)")
say("address  \(await node.address())  (user id + nospam + checksum: what friends add)")

// A signature over any bytes; checking it needs only the signer's user id.
let message = Array("I am who the user id says".utf8)
let signature = try await node.sign(message)
say("signature \(signature.prefix(8).map { String(format: "%02x", $0) }.joined())… (\(signature.count) bytes)")
say("verified with the user id alone: \(Carrier.verify(message: message, signature: signature, userId: node.userId))")
let forged = Array("I am someone else".utf8)
say(
    "the same signature over other words: \(Carrier.verify(message: forged, signature: signature, userId: node.userId))"
)

// The secret key, exported and restored elsewhere: the same user id.
let secret = await node.exportSecretKey()
await node.stop()
var restoredOptions = CarrierOptions(dataDirectory: root + "/restored")
restoredOptions.secretKey = secret
let restored = try Carrier(options: restoredOptions)
say("restored from the secret key: same user id \(restored.userId == node.userId)")
await restored.stop()
