// SecretRedactor: the one place where the secrets a process knows are taken
// out of text before it leaves the process. A backend that echoes request
// headers in a refusal would otherwise put the bearer token into
// hold/KEY.reason, the journal and `txrecon list hold`, which every producer
// in group txrecon can read.
//
// Two kinds of text pass through it: every log entry (RedactingLogSink
// wraps the process's log sink), and every reason derived from the
// backend's answer, at the point the answer becomes text (the attempt's
// Outcome), so that what the spool stores (hold/KEY.reason, KEY.state) and
// what is shown from it (STATUS, txrecon status, list, show) never held the
// secret. A secret replaced by a reload stays known until the reload after
// it: answers to requests that carried the old one still arrive, and apps go
// on sending an old upload token for a while; older generations are
// dropped, since every text is searched for every spelling of each secret.
import Glibc
import Synchronization

/// Replaces every occurrence of a known secret by `<redacted>`.
package final class SecretRedactor: Sendable {
    /// What stands in for a secret.
    package static let placeholder = "<redacted>"
    /// Shorter texts are not looked for: they would blank out ordinary
    /// words, and no real token, key or query is that short.
    static let minimumLength = 6

    private struct Known {
        /// The spellings searched for: those of both generations, longest first.
        var searched: [[UInt8]]
        /// The spellings of the secrets given last.
        var current: Set<[UInt8]>
    }

    private let secrets: Mutex<Known>

    package init(_ secrets: [String] = []) {
        let forms = SecretRedactor.forms(of: secrets)
        self.secrets = Mutex(Known(searched: SecretRedactor.longestFirst(forms), current: forms))
    }

    /// Looks for `secrets` from now on, and for the ones given before them
    /// until the next call.
    package func replace(with secrets: [String]) {
        let forms = SecretRedactor.forms(of: secrets)
        self.secrets.withLock { known in
            known = Known(searched: SecretRedactor.longestFirst(forms.union(known.current)), current: forms)
        }
    }

    /// `text` with every known secret replaced by `<redacted>`.
    package func redact(_ text: String) -> String {
        SecretRedactor.redact(text, searching: searched)
    }

    /// `entry` with every known secret in its message and field values
    /// replaced by `<redacted>`. Every log entry passes here: the secrets
    /// are read once per entry, and an entry that holds none (nearly all)
    /// is searched in place and returned as it is, without a copy.
    package func redact(_ entry: consuming LogEntry) -> LogEntry {
        let secrets = searched
        guard !secrets.isEmpty else { return entry }
        // The fields read in place, each value's bytes searched where they are.
        guard SecretRedactor.occurs(secrets, in: entry.message)
            || entry.fields.withUnsafeBufferPointer({ fields in
                fields.contains { SecretRedactor.occurs(secrets, in: $0.value) }
            }) else { return entry }
        entry.message = SecretRedactor.redact(entry.message, searching: secrets)
        entry.fields = entry.fields.map { ($0.name, SecretRedactor.redact($0.value, searching: secrets)) }
        return entry
    }

    /// The spellings searched for now; empty when no secret is known.
    private var searched: [[UInt8]] {
        secrets.withLock { $0.searched }
    }

    private static func redact(_ text: String, searching secrets: [[UInt8]]) -> String {
        guard occurs(secrets, in: text) else { return text }
        var bytes = Array(text.utf8)
        replaceAll(secrets, in: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether any of `secrets` occurs in `text`, searched in place.
    private static func occurs(_ secrets: [[UInt8]], in text: String) -> Bool {
        guard !secrets.isEmpty else { return false }
        return text.withUTF8Bytes { occurs(secrets, in: $0) }
    }

    private static func occurs(_ secrets: [[UInt8]], in bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        !cutBeginnings(of: secrets, in: bytes).isEmpty || secrets.contains { secret in
            guard let first = secret.first, bytes.count >= secret.count else { return false }
            return secret.withUnsafeBufferPointer { secret in
                for start in 0...(bytes.count - secret.count) where bytes[start] == first {
                    if UnsafeBufferPointer(rebasing: bytes[start..<start + secret.count]).elementsEqual(secret) {
                        return true
                    }
                }
                return false
            }
        }
    }

    /// Replaces every known secret in `bytes` (an answer's body, before it
    /// is read); whether there was one.
    @discardableResult
    package func redact(_ bytes: inout [UInt8]) -> Bool {
        SecretRedactor.replaceAll(searched, in: &bytes)
    }

    /// Replaces every occurrence of each of `secrets` (longest first);
    /// whether there was one.
    @discardableResult
    private static func replaceAll(_ secrets: [[UInt8]], in bytes: inout [UInt8]) -> Bool {
        var changed = false
        for secret in secrets {
            changed = replace(secret, in: &bytes) || changed
        }
        let cut = bytes.withUnsafeBufferPointer { cutBeginnings(of: secrets, in: $0) }
        for range in cut.reversed() {
            bytes.replaceSubrange(range, with: placeholder.utf8)
        }
        return changed || !cut.isEmpty
    }

    /// What LogText.singleLine puts where it cut a text at its limit.
    static let cutMark = Array("…".utf8)

    /// Where a text cut before it was redacted (a NATS server's words cut
    /// to 300 characters, then put in a log line or a reason) ends in the
    /// beginning of a secret: the byte ranges of those beginnings, each
    /// just before a cut mark and at least `minimumLength` long (a shorter
    /// one could be any word's end), in order. Searched in place: nearly
    /// every text has no cut mark, and costs one pass over its bytes.
    private static func cutBeginnings(of secrets: [[UInt8]], in bytes: UnsafeBufferPointer<UInt8>) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        guard let base = bytes.baseAddress else { return ranges }
        var index = 0
        while index + cutMark.count <= bytes.count,
              let found = memchr(base + index, Int32(cutMark[0]), bytes.count - index) {
            let end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            index = end + 1
            guard end + cutMark.count <= bytes.count, bytes[end + 1] == cutMark[1], bytes[end + 2] == cutMark[2],
                  end >= minimumLength else { continue }
            let longest = secrets.compactMap { secret -> Int? in
                let most = min(secret.count - 1, end - (ranges.last?.upperBound ?? 0))
                guard most >= minimumLength else { return nil }
                return (minimumLength...most).reversed().first { length in
                    UnsafeBufferPointer(rebasing: bytes[end - length..<end]).elementsEqual(secret.prefix(length))
                }
            }.max()
            if let longest { ranges.append(end - longest..<end) }
        }
        return ranges
    }

    /// Each secret as given and as an echo would spell it: JSON-escaped (also
    /// with `/` as `\/`, as PHP's json_encode writes it) and percent-encoded.
    private static func forms(of secrets: [String]) -> Set<[UInt8]> {
        var forms = Set<[UInt8]>()
        for secret in secrets where secret.utf8.count >= minimumLength {
            let json = Array(JSONValue.string(secret).serialized.dropFirst().dropLast())
            forms.insert(Array(secret.utf8))
            forms.insert(json)
            forms.insert(json.flatMap { $0 == UInt8(ascii: "/") ? [UInt8(ascii: "\\"), $0] : [$0] })
            forms.insert(percentEncoded(secret))
        }
        return forms
    }

    /// Longest first, so a secret inside another is replaced whole.
    private static func longestFirst(_ forms: Set<[UInt8]>) -> [[UInt8]] {
        forms.sorted { $0.count > $1.count }
    }

    private static func percentEncoded(_ text: String) -> [UInt8] {
        var encoded: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                 UInt8(ascii: "~"):
                encoded.append(byte)
            default:
                let digits = Array("0123456789ABCDEF".utf8)
                encoded += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return encoded
    }

    /// Replaces every occurrence of `secret` in `bytes`; whether there was one.
    private static func replace(_ secret: [UInt8], in bytes: inout [UInt8]) -> Bool {
        guard let first = secret.first, bytes.count >= secret.count else { return false }
        var result: [UInt8] = []
        var index = 0, copied = 0
        while index + secret.count <= bytes.count {
            if bytes[index] == first, bytes[index..<index + secret.count].elementsEqual(secret) {
                result += bytes[copied..<index]
                result += placeholder.utf8
                index += secret.count
                copied = index
            } else {
                index += 1
            }
        }
        guard copied > 0 else { return false }
        result += bytes[copied...]
        bytes = result
        return true
    }
}

/// A log sink that redacts every message and field value first.
package struct RedactingLogSink: LogSink {
    let inner: any LogSink
    let redactor: SecretRedactor

    package init(_ inner: any LogSink, redactor: SecretRedactor) {
        self.inner = inner
        self.redactor = redactor
    }

    package func write(_ entry: consuming LogEntry) {
        inner.write(redactor.redact(entry))
    }
}
