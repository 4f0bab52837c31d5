/// Reads FlatBuffers tables from untrusted bytes, verifying every offset,
/// length and vtable before it is followed (flatbuffers.dev, "Internals").
///
/// The reference Carrier library decodes without a verifier and trusts its
/// input: an offset past the buffer crashes it, a vector length past the end
/// is read as it is (wire notes §2, `packets.json` "malformed"). Here every
/// read is bounded by the buffer, and a field that does not fit is an error.
/// Alignment is not checked: real Carrier packets place their 8-byte `tid`
/// at an offset that is 4 mod 8, and flatcc's own verifier rejects them at
/// an aligned address. Reads are byte by byte, so alignment does not matter.
struct FlatBufferReader {
    /// What made a buffer unreadable.
    enum Failure: Error, Equatable, CustomStringConvertible {
        case outOfBounds(String)
        case malformed(String)

        var description: String {
            switch self {
            case .outOfBounds(let what): "\(what) lies outside the buffer"
            case .malformed(let what): what
            }
        }
    }

    /// One table: its position and its vtable's.
    struct Table {
        let position: Int
        let vtable: Int
        let vtableSize: Int
        let inlineSize: Int
    }

    let bytes: [UInt8]
    /// Tables followed from the root at most (a packet nests two).
    static let maxDepth = 8

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The root table (its offset is the buffer's first four bytes; no file identifier).
    func root() throws(Failure) -> Table {
        try table(at: try offsetTarget(at: 0, what: "the root offset"), depth: 0)
    }

    /// The table at `position`, its vtable checked.
    func table(at position: Int, depth: Int) throws(Failure) -> Table {
        guard depth <= Self.maxDepth else { throw .malformed("tables nested more than \(Self.maxDepth) deep") }
        let relative = Int(Int32(bitPattern: try u32(at: position, what: "a table")))
        let vtable = position - relative
        let vtableSize = Int(try u16(at: vtable, what: "a vtable"))
        let inlineSize = Int(try u16(at: vtable + 2, what: "a vtable"))
        guard vtableSize >= 4, vtableSize % 2 == 0, vtable + vtableSize <= bytes.count else {
            throw .malformed("a vtable of \(vtableSize) bytes")
        }
        guard inlineSize >= 4, position + inlineSize <= bytes.count else {
            throw .outOfBounds("a table of \(inlineSize) bytes")
        }
        return Table(position: position, vtable: vtable, vtableSize: vtableSize, inlineSize: inlineSize)
    }

    /// Where field `id` of `table` is, or nil if absent. The field must lie within the table.
    func field(_ id: Int, of table: Table, size: Int) throws(Failure) -> Int? {
        let entry = 4 + 2 * id
        guard entry + 2 <= table.vtableSize else { return nil }
        let offset = Int(try u16(at: table.vtable + entry, what: "a vtable entry"))
        guard offset != 0 else { return nil }
        guard offset + size <= table.inlineSize else { throw .outOfBounds("field \(id) of a table") }
        return table.position + offset
    }

    func u8(_ id: Int, of table: Table) throws(Failure) -> UInt8? {
        try field(id, of: table, size: 1).map { bytes[$0] }
    }

    func u32(_ id: Int, of table: Table) throws(Failure) -> UInt32? {
        guard let at = try field(id, of: table, size: 4) else { return nil }
        return try u32(at: at, what: "a field")
    }

    func u64(_ id: Int, of table: Table) throws(Failure) -> UInt64? {
        guard let at = try field(id, of: table, size: 8) else { return nil }
        return UInt64(try u32(at: at, what: "a field")) | UInt64(try u32(at: at + 4, what: "a field")) << 32
    }

    /// The table a field points to.
    func table(_ id: Int, of table: Table, depth: Int) throws(Failure) -> Table? {
        guard let at = try field(id, of: table, size: 4) else { return nil }
        return try self.table(at: try offsetTarget(at: at, what: "a table offset"), depth: depth)
    }

    /// A byte vector field; nil if absent.
    func bytes(_ id: Int, of table: Table) throws(Failure) -> ArraySlice<UInt8>? {
        guard let at = try field(id, of: table, size: 4) else { return nil }
        let start = try offsetTarget(at: at, what: "a vector offset")
        let count = Int(try u32(at: start, what: "a vector length"))
        guard count <= bytes.count - start - 4 else { throw .outOfBounds("a vector of \(count) bytes") }
        return bytes[(start + 4)..<(start + 4 + count)]
    }

    /// A string field (UTF-8, NUL-terminated in the buffer); nil if absent.
    func string(_ id: Int, of table: Table) throws(Failure) -> String? {
        guard let at = try field(id, of: table, size: 4) else { return nil }
        let start = try offsetTarget(at: at, what: "a string offset")
        let count = Int(try u32(at: start, what: "a string length"))
        guard count < bytes.count - start - 4 else { throw .outOfBounds("a string of \(count) bytes") }
        guard bytes[start + 4 + count] == 0 else { throw .malformed("a string without its terminating NUL") }
        guard let text = String(validating: bytes[(start + 4)..<(start + 4 + count)], as: UTF8.self) else {
            throw .malformed("a string that is not UTF-8")
        }
        return text
    }

    /// Where the unsigned offset at `position` points (forward, inside the buffer).
    private func offsetTarget(at position: Int, what: String) throws(Failure) -> Int {
        let offset = Int(try u32(at: position, what: what))
        guard offset > 0, position + offset < bytes.count else { throw .outOfBounds(what) }
        return position + offset
    }

    private func u16(at position: Int, what: String) throws(Failure) -> UInt16 {
        guard position >= 0, position + 2 <= bytes.count else { throw .outOfBounds(what) }
        return UInt16(bytes[position]) | UInt16(bytes[position + 1]) << 8
    }

    private func u32(at position: Int, what: String) throws(Failure) -> UInt32 {
        guard position >= 0, position + 4 <= bytes.count else { throw .outOfBounds(what) }
        return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[position + $1]) << (8 * UInt32($1)) }
    }
}
