import COgg
import Foundation
import RtcCodecs

/// An Ogg Opus file (RFC 7845) read with libogg: the OpusHead and OpusTags
/// headers, then Opus packets as they are (sent without re-encoding).
public struct OggOpusFile: Sendable {
    /// Channels from OpusHead.
    public let channels: Int
    /// Samples (at 48 kHz) the decoder drops at the start.
    public let preSkip: Int
    /// Every Opus packet, in order, as stored.
    public let packets: [[UInt8]]

    /// Reads the whole file with libogg; headers that are not Opus's are a clear error.
    public init(path: String) throws(MediaFileError) {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else {
            throw .cannotOpen(path)
        }
        var sync = ogg_sync_state()
        var stream = ogg_stream_state()
        ogg_sync_init(&sync)
        defer { ogg_sync_clear(&sync) }
        var streamSerial: Int32?
        defer { if streamSerial != nil { ogg_stream_clear(&stream) } }
        if let buffer = ogg_sync_buffer(&sync, data.count) {
            data.copyBytes(to: UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: UInt8.self), count: data.count)
            ogg_sync_wrote(&sync, data.count)
        }
        var all: [[UInt8]] = []
        var page = ogg_page()
        var packet = ogg_packet()
        while ogg_sync_pageout(&sync, &page) == 1 {
            let serial = ogg_page_serialno(&page)
            if streamSerial == nil {
                ogg_stream_init(&stream, serial)
                streamSerial = serial
            }
            guard serial == streamSerial else { continue }  // other logical streams are skipped
            ogg_stream_pagein(&stream, &page)
            while ogg_stream_packetout(&stream, &packet) == 1 {
                guard packet.bytes > 0, let bytes = packet.packet else { continue }
                all.append(Array(UnsafeBufferPointer(start: bytes, count: packet.bytes)))
            }
        }
        guard let head = all.first, head.count >= 19, head.starts(with: Array("OpusHead".utf8)) else {
            throw .malformed(path: path, why: "no OpusHead packet (is it an Ogg Opus file?)")
        }
        channels = Int(head[9])
        preSkip = Int(head[10]) | Int(head[11]) << 8
        guard channels == 1 || channels == 2 else {
            throw .unsupported(path: path, why: "\(channels) channels; mono and stereo are supported")
        }
        guard all.count >= 2, all[1].starts(with: Array("OpusTags".utf8)) else {
            throw .malformed(path: path, why: "no OpusTags packet")
        }
        packets = Array(all.dropFirst(2))
    }
}

/// Writes Opus packets into an Ogg Opus file. Pages are flushed about once a
/// second, so a recording cut short loses at most that; `close` writes the
/// last page with the end-of-stream flag.
public final class OggOpusWriter: @unchecked Sendable {
    private let file: HeaderedFile
    private var stream = ogg_stream_state()
    private var packetNumber: Int64 = 0
    private var granule: Int64 = 0
    private var held: [UInt8]?
    private var heldSamples = 0
    private var sinceFlush = 0
    private var closed = false
    /// Packets appended so far.
    public private(set) var packetsWritten = 0

    /// Creates the file and writes the OpusHead and OpusTags pages.
    public init(path: String, channels: Int, preSkip: Int = 312) throws(MediaFileError) {
        file = try HeaderedFile(path: path)
        ogg_stream_init(&stream, Int32.random(in: 1...Int32.max))
        granule = Int64(preSkip)
        var head = ByteWriter()
        head.ascii("OpusHead")
        head.u8(1)
        head.u8(UInt8(channels))
        head.u16(UInt16(preSkip))
        head.u32(48000)
        head.u16(0)
        head.u8(0)
        var tags = ByteWriter()
        let vendor = "carrier-rtc"
        tags.ascii("OpusTags")
        tags.u32(UInt32(vendor.utf8.count))
        tags.ascii(vendor)
        tags.u32(0)
        try put(head.bytes, granule: 0, first: true, last: false)
        try flush()
        try put(tags.bytes, granule: 0, first: false, last: false)
        try flush()
    }

    /// The file being written.
    public var path: String { file.path }

    /// Appends one packet (its duration read from its TOC byte).
    public func append(_ packet: [UInt8]) throws(MediaFileError) {
        guard !closed, let samples = OpusAudioDecoder.frameSamples(of: packet) else { return }
        if let held { try writeHeld(held, last: false) }
        held = packet
        heldSamples = samples
    }

    /// Writes the last page with the end-of-stream flag and closes the file.
    public func close() {
        guard !closed else { return }
        closed = true
        // At close a failed write loses only the last page; every earlier page is on disk and plays.
        if let held { try? writeHeld(held, last: true) }
        try? flush()
        ogg_stream_clear(&stream)
        file.close()
    }

    private func writeHeld(_ packet: [UInt8], last: Bool) throws(MediaFileError) {
        granule += Int64(heldSamples)
        try put(packet, granule: granule, first: false, last: last)
        packetsWritten += 1
        sinceFlush += 1
        if sinceFlush >= 50 {
            try flush()
        } else {
            try drainFullPages()
        }
    }

    private func put(_ bytes: [UInt8], granule: Int64, first: Bool, last: Bool) throws(MediaFileError) {
        var data = bytes
        data.withUnsafeMutableBufferPointer { buffer in
            var packet = ogg_packet(
                packet: buffer.baseAddress, bytes: buffer.count, b_o_s: first ? 1 : 0, e_o_s: last ? 1 : 0,
                granulepos: granule, packetno: packetNumber)
            ogg_stream_packetin(&stream, &packet)
        }
        packetNumber += 1
    }

    private func drainFullPages() throws(MediaFileError) {
        var page = ogg_page()
        while ogg_stream_pageout(&stream, &page) != 0 { try write(page) }
    }

    private func flush() throws(MediaFileError) {
        var page = ogg_page()
        while ogg_stream_flush(&stream, &page) != 0 { try write(page) }
        sinceFlush = 0
    }

    private func write(_ page: ogg_page) throws(MediaFileError) {
        var bytes = Array(UnsafeBufferPointer(start: page.header, count: page.header_len))
        bytes += Array(UnsafeBufferPointer(start: page.body, count: page.body_len))
        try file.append(bytes)
    }
}
