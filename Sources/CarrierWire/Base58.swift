/// Base58 with the Bitcoin alphabet and no check bytes, as Carrier uses for
/// user ids, addresses, group ids and node keys (wire notes §8.1).
/// Leading zero bytes are written as leading `1`s, so lengths round-trip.
public enum Base58 {
    static let alphabet = Array("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz".utf8)

    /// Reverse table: ASCII code → digit value, or 0xFF for characters outside the alphabet.
    static let digits: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 128)
        for (value, char) in alphabet.enumerated() { table[Int(char)] = UInt8(value) }
        return table
    }()

    /// The longest text `decode` accepts. Carrier's longest base58 value is a
    /// 52-character address; this bound keeps hostile input from costing
    /// quadratic time.
    public static let maxEncodedLength = 128

    /// Base58 (Bitcoin alphabet) of bytes, leading zero bytes as `1`s.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        let zeros = input.prefix { $0 == 0 }.count
        // Base-58 digits, least significant first.
        var digits: [UInt8] = []
        digits.reserveCapacity(input.count * 138 / 100 + 1)
        for byte in input[zeros...] {
            var carry = Int(byte)
            for index in digits.indices {
                carry += Int(digits[index]) << 8
                digits[index] = UInt8(carry % 58)
                carry /= 58
            }
            while carry > 0 {
                digits.append(UInt8(carry % 58))
                carry /= 58
            }
        }
        var output = [UInt8](repeating: alphabet[0], count: zeros)
        output.append(contentsOf: digits.reversed().map { alphabet[Int($0)] })
        return String(decoding: output, as: UTF8.self)
    }

    /// Decodes base58 text, or returns nil for an empty string, a character
    /// outside the alphabet, or text longer than `maxEncodedLength`.
    public static func decode(_ text: String) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard !chars.isEmpty, chars.count <= maxEncodedLength else { return nil }
        let zeros = chars.prefix { $0 == alphabet[0] }.count
        // Bytes, least significant first.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chars.count * 733 / 1000 + 1)
        for char in chars[zeros...] {
            guard char < 128, case let digit = digits[Int(char)], digit != 0xFF else { return nil }
            var carry = Int(digit)
            for index in bytes.indices {
                carry += Int(bytes[index]) * 58
                bytes[index] = UInt8(carry & 0xFF)
                carry >>= 8
            }
            while carry > 0 {
                bytes.append(UInt8(carry & 0xFF))
                carry >>= 8
            }
        }
        return [UInt8](repeating: 0, count: zeros) + bytes.reversed()
    }
}
