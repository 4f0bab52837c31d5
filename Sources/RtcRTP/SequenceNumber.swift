/// 16-bit sequence numbers (RTP's, the transport-wide extension's) extended
/// to 64 bits: a number is taken as the one nearest to a reference already
/// extended, so wrap-around and reordering both come out right (RFC 3550
/// Appendix A.1 does the same with a cycle count).
public enum SequenceNumber {
    /// `sequence`, extended to the value within ±32768 of `reference`.
    public static func unwrap(_ sequence: UInt16, near reference: Int64) -> Int64 {
        reference + Int64(Int16(bitPattern: sequence &- UInt16(truncatingIfNeeded: reference)))
    }
}
