/// Writes FlatBuffers tables (flatbuffers.dev, "Internals"), front to back:
/// the root offset, then each table's vtable and the table, then what its
/// fields point to (strings, byte vectors, tables), so every offset points
/// forward as the format wants. Scalars sit at their natural alignment from
/// the buffer's start. No file identifier, as Carrier writes none.
///
/// The layout differs from flatcc's (which builds back to front); readers
/// do not care, and the tests check ours with an independent decoder.
enum FlatBufferWriter {
    /// A field's value.
    indirect enum Value {
        case u8(UInt8)
        case u32(UInt32)
        case i32(Int32)
        case u64(UInt64)
        case string(String)
        case bytes([UInt8])
        case table(Table)

        /// Bytes it takes inline in its table (an offset for the others).
        var inlineSize: Int {
            switch self {
            case .u8: 1
            case .u32, .i32, .string, .bytes, .table: 4
            case .u64: 8
            }
        }
    }

    /// A table: its fields by id (absent ones left out).
    struct Table {
        var fields: [(id: Int, value: Value)] = []

        /// Adds a field unless it is nil.
        mutating func add(_ id: Int, _ value: Value?) {
            if let value { fields.append((id, value)) }
        }
    }

    /// The buffer with `root` as its root table.
    static func encode(_ root: Table) -> [UInt8] {
        var out: [UInt8] = [0, 0, 0, 0]
        let position = write(root, into: &out)
        patch(&out, at: 0, UInt32(position))
        return out
    }

    private static func write(_ table: Table, into out: inout [UInt8]) -> Int {
        let fields = table.fields.sorted { $0.value.inlineSize > $1.value.inlineSize }
        let slots = (table.fields.map(\.id).max() ?? -1) + 1
        align(&out, 2)
        let vtable = out.count
        out += [UInt8](repeating: 0, count: 4 + 2 * slots)
        align(&out, 4)
        let position = out.count
        out += le(UInt32(bitPattern: Int32(position - vtable)))
        var placed: [(id: Int, at: Int, value: Value)] = []
        for (id, value) in fields {
            align(&out, value.inlineSize)
            placed.append((id, out.count, value))
            switch value {
            case .u8(let byte): out.append(byte)
            case .u32(let number): out += le(number)
            case .i32(let number): out += le(UInt32(bitPattern: number))
            case .u64(let number): out += le(UInt32(truncatingIfNeeded: number)) + le(UInt32(number >> 32))
            case .string, .bytes, .table: out += [0, 0, 0, 0]
            }
        }
        let inlineSize = out.count - position
        patch16(&out, at: vtable, UInt16(4 + 2 * slots))
        patch16(&out, at: vtable + 2, UInt16(inlineSize))
        for field in placed { patch16(&out, at: vtable + 4 + 2 * field.id, UInt16(field.at - position)) }
        for field in placed {
            let target: Int
            switch field.value {
            case .string(let text):
                align(&out, 4)
                target = out.count
                let utf8 = Array(text.utf8)
                out += le(UInt32(utf8.count)) + utf8 + [0]
            case .bytes(let data):
                align(&out, 4)
                target = out.count
                out += le(UInt32(data.count)) + data
            case .table(let child):
                target = write(child, into: &out)
            default:
                continue
            }
            patch(&out, at: field.at, UInt32(target - field.at))
        }
        return position
    }

    private static func align(_ out: inout [UInt8], _ alignment: Int) {
        while out.count % alignment != 0 { out.append(0) }
    }

    private static func le(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    private static func patch(_ out: inout [UInt8], at position: Int, _ value: UInt32) {
        for index in 0..<4 { out[position + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
    }

    private static func patch16(_ out: inout [UInt8], at position: Int, _ value: UInt16) {
        out[position] = UInt8(truncatingIfNeeded: value)
        out[position + 1] = UInt8(truncatingIfNeeded: value >> 8)
    }
}
