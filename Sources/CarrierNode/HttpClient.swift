import CCurl
import Foundation

/// HTTP requests through libcurl, for the Express client. Each request runs
/// `curl_easy_perform` on a thread of the global dispatch pool (libcurl
/// blocks), never on the node's actor; libcurl's callbacks run on that thread.
/// Response bodies are bounded (`maxResponseSize`).
struct HttpClient: Sendable {
    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    var timeout: Duration = .seconds(15)
    var maxResponseSize = 32 << 20
    /// Check an HTTPS server's certificate (off for Carrier's Express nodes,
    /// as the reference client has it: their key authenticates them).
    var verifyPeer = true

    init(verifyPeer: Bool = true) { self.verifyPeer = verifyPeer }

    static let initialised: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    func send(method: String, url: String, headers: [String: String], body: [UInt8]) async throws(Failure)
        -> Response
    {
        let request = self
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Response, Failure>, Never>) in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(returning: request.perform(method: method, url: url, headers: headers, body: body))
            }
        }
        return try result.get()
    }

    /// What libcurl's callbacks fill, passed to them as their context pointer.
    private final class Sink {
        var body: [UInt8] = []
        var headers: [String: String] = [:]
        var overflow = false
        let limit: Int
        init(limit: Int) { self.limit = limit }
    }

    private func perform(method: String, url: String, headers: [String: String], body: [UInt8]) -> Result<
        Response, Failure
    > {
        guard Self.initialised, let curl = curl_easy_init() else {
            return .failure(Failure(description: "libcurl did not start"))
        }
        defer { curl_easy_cleanup(curl) }
        let sink = Sink(limit: maxResponseSize)
        let context = Unmanaged.passUnretained(sink).toOpaque()
        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in headers { list = curl_slist_append(list, "\(name): \(value)") }
        // No "Expect: 100-continue" round trip before a body.
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }
        let writeBody: ccurl_data_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let sink = Unmanaged<Sink>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            guard sink.body.count + length <= sink.limit else {
                sink.overflow = true
                return 0
            }
            data.withMemoryRebound(to: UInt8.self, capacity: length) {
                sink.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: length))
            }
            return length
        }
        let writeHeader: ccurl_data_callback = { data, size, count, context in
            guard let data, let context else { return 0 }
            let sink = Unmanaged<Sink>.fromOpaque(context).takeUnretainedValue()
            let length = size * count
            let line = data.withMemoryRebound(to: UInt8.self, capacity: length) {
                String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
            }
            if let colon = line.firstIndex(of: ":"), sink.headers.count < 64 {
                let name = line[..<colon].lowercased()
                sink.headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return length
        }
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
        let codes = url.withCString { urlText in
            method.withCString { methodText in
                body.withUnsafeBytes { bodyBytes -> [CURLcode] in
                    var codes = [
                        ccurl_setopt_pointer(curl, CURLOPT_URL, urlText),
                        ccurl_setopt_pointer(curl, CURLOPT_CUSTOMREQUEST, methodText),
                        ccurl_setopt_pointer(curl, CURLOPT_HTTPHEADER, list),
                        ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, milliseconds),
                        ccurl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, min(milliseconds, 5000)),
                        ccurl_setopt_long(curl, CURLOPT_NOSIGNAL, 1),
                        // Only the configured node: no redirects elsewhere.
                        ccurl_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0),
                        ccurl_setopt_pointer(curl, CURLOPT_PROTOCOLS_STR, "http,https"),
                        ccurl_setopt_callback(curl, CURLOPT_WRITEFUNCTION, writeBody),
                        ccurl_setopt_pointer(curl, CURLOPT_WRITEDATA, context),
                        ccurl_setopt_callback(curl, CURLOPT_HEADERFUNCTION, writeHeader),
                        ccurl_setopt_pointer(curl, CURLOPT_HEADERDATA, context),
                    ]
                    if !verifyPeer {
                        codes.append(ccurl_setopt_long(curl, CURLOPT_SSL_VERIFYPEER, 0))
                        codes.append(ccurl_setopt_long(curl, CURLOPT_SSL_VERIFYHOST, 0))
                    }
                    if !body.isEmpty || method == "POST" || method == "PUT" {
                        codes.append(
                            ccurl_setopt_pointer(
                                curl, CURLOPT_POSTFIELDS, bodyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)))
                        codes.append(ccurl_setopt_offset(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
                    }
                    codes.append(curl_easy_perform(curl))
                    return codes
                }
            }
        }
        if sink.overflow {
            return .failure(Failure(description: "the answer from \(url) is larger than \(maxResponseSize) bytes"))
        }
        if let failed = codes.first(where: { $0 != CURLE_OK }) {
            return .failure(Failure(description: "\(method) \(url): \(String(cString: curl_easy_strerror(failed)))"))
        }
        var status = 0
        _ = ccurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
        return .success(Response(status: status, headers: sink.headers, body: sink.body))
    }
}
