// CurlResponseCapture: what a worker keeps of one HTTP response while curl
// reads it: the `Retry-After` header and the first bytes of the body.
//
// Called from curl's header and write callbacks on the worker's thread (or
// the sweep's, whose App Store API client keeps the whole body). Touches no
// files and reports nothing; a body over `bodyLimit` stops the transfer,
// which the worker treats as a complete answer (the status line and headers
// have arrived).
import Glibc

/// The parts of a response the engine needs. Not Sendable on purpose: it
/// belongs to one curl handle (`CurlConnection`) and its thread.
final class CurlResponseCapture {
    /// How much of the body is kept for hold reasons: 16 KiB, of which the
    /// reason keeps 512 bytes (`Outcome.reasonBodyLimit`) once the secrets
    /// are out. The rest is there so that a secret an echo puts within those
    /// 512 bytes is whole when it is looked for: cut first, its first part
    /// would stay. 16 KiB holds a token of 5 KiB percent-encoded.
    static let bodyPrefixLimit = 16 * 1024
    /// How much body is read (and dropped) before the transfer is stopped:
    /// 1 MiB. Answers are expected to be short; a longer one would only keep
    /// the worker busy.
    static let bodyLimit = 1 << 20

    /// How much of the body is kept, bytes.
    let keptBodyLimit: Int
    /// How much body is read before the transfer is stopped, bytes.
    let readBodyLimit: Int

    private(set) var bodyPrefix: [UInt8] = []
    /// The raw value of the final response's `Retry-After` header.
    private(set) var retryAfter: String?
    /// True when the body passed `bodyLimit` and the transfer was stopped.
    private(set) var bodyTooLong = false
    private var bodyLength = 0

    /// Keeps the first `keeping` bytes of each body (default
    /// `bodyPrefixLimit`) and stops a transfer whose body passes
    /// `readingAtMost` (default `bodyLimit`).
    init(keeping: Int = CurlResponseCapture.bodyPrefixLimit, readingAtMost: Int = CurlResponseCapture.bodyLimit) {
        keptBodyLimit = keeping
        readBodyLimit = readingAtMost
        bodyPrefix.reserveCapacity(min(keeping, 1024))
    }

    /// Forgets the previous response.
    func reset() {
        bodyPrefix.removeAll(keepingCapacity: true)
        retryAfter = nil
        bodyTooLong = false
        bodyLength = 0
    }

    /// Takes a piece of the body. Returns the number of bytes consumed; a
    /// smaller number tells curl to stop.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Int {
        let room = keptBodyLimit - bodyPrefix.count
        if room > 0 { bodyPrefix.append(contentsOf: bytes.prefix(room)) }
        bodyLength += bytes.count
        if bodyLength > readBodyLimit {
            bodyTooLong = true
            return 0
        }
        return bytes.count
    }

    /// Takes one header line, CRLF included.
    func receiveHeader(_ line: UnsafeRawBufferPointer) {
        if Self.isStatusLine(line) {
            // A new status line: whatever an interim 1xx response said is void.
            retryAfter = nil
            return
        }
        // Most lines are other headers: the first byte tells them apart.
        let name = "retry-after:".utf8
        guard line.count > name.count, Self.lowercased(line[0]) == UInt8(ascii: "r"),
              zip(line, name).allSatisfy({ Self.lowercased($0) == $1 })
        else { return }
        let value = line.dropFirst(name.count).drop { Self.isBlank($0) }
        let end = value.lastIndex { !Self.isBlank($0) }.map { $0 + 1 } ?? value.startIndex
        retryAfter = String(decoding: value[..<end], as: UTF8.self)
    }

    /// Whether `line` starts with `HTTP/`. Compared as bytes: asked of
    /// every header line of every response, and the generic
    /// `starts(with:)` cost about 120 instructions a line.
    private static func isStatusLine(_ line: UnsafeRawBufferPointer) -> Bool {
        let prefix: StaticString = "HTTP/"
        guard line.count >= prefix.utf8CodeUnitCount, let base = line.baseAddress else { return false }
        return memcmp(base, prefix.utf8Start, prefix.utf8CodeUnitCount) == 0
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }
}
