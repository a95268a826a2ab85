// SettingValue: turns the text of one `Key=value` into the typed value a
// setting holds, checking the range that key allows.
//
// Each parser throws `InvalidValue` with a sentence that quotes the value,
// says what is wrong and what is accepted; the loader adds the file, line and
// `Section.Key`. A value that could hold a credential (a URL's user name,
// password or query; a file path, where the secret itself may have been
// written by mistake) is not quoted.
import FoundationEssentials

/// Why a value was refused, e.g. `"0" is not between 1 and 64`.
struct InvalidValue: Error, Equatable {
    var message: String
}

/// Parsers for the kinds of values txrecon.conf holds.
enum SettingValue {
    /// A parser the key table can hold.
    typealias Parser<Value> = @Sendable (String) throws(InvalidValue) -> Value

    /// An absolute path, kept as written.
    static func absolutePath(_ text: String) throws(InvalidValue) -> String {
        guard text.hasPrefix("/") else {
            throw InvalidValue(message: "is not an absolute path; write it starting with / (the value is not "
                               + "repeated here, in case it is a secret written in the path's place)")
        }
        return text
    }

    /// The longest time span any key takes: `10y` (years of 365.25 days, as
    /// TimeSpan reads `y`). Longer is a mistake, and past 292 years a span
    /// no longer fits the nanoseconds timers count.
    static let longestTimeSpan: Duration = .seconds(10 * 31_557_600)

    /// A time span, zero allowed, at most `longestTimeSpan`.
    static func timeSpan(_ text: String) throws(InvalidValue) -> Duration {
        guard let span = TimeSpan.parse(text) else {
            throw InvalidValue(message: "\(quoted(text)) is not \(TimeSpan.acceptedForms)")
        }
        guard span <= longestTimeSpan else {
            throw InvalidValue(message: "\(quoted(text)) is longer than 10y, the longest span accepted")
        }
        return span
    }

    /// A time span greater than zero.
    static func positiveTimeSpan(_ text: String) throws(InvalidValue) -> Duration {
        let span = try timeSpan(text)
        guard span > .zero else {
            throw InvalidValue(message: "\(quoted(text)) is not greater than zero; give a span such as \"10s\"")
        }
        return span
    }

    /// Requests a second: a decimal number (`50`, `0.5`) from 0.001 (one
    /// request in about 17 minutes) to 100,000.
    static func requestRate(_ text: String) throws(InvalidValue) -> Double {
        let digitsAndPoint = !text.isEmpty && text.utf8.allSatisfy {
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".")
        }
        guard digitsAndPoint, let rate = Double(text), rate >= 0.001, rate <= 100_000 else {
            throw InvalidValue(message: "\(quoted(text)) is not a number of requests per second from 0.001 "
                               + "to 100000, such as \"50\" or \"0.5\"")
        }
        return rate
    }

    /// A whole number in `range`, digits only.
    static func integer(in range: ClosedRange<Int>) -> Parser<Int> {
        { text throws(InvalidValue) in
            guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                  let number = Int(text)
            else {
                throw InvalidValue(
                    message: "\(quoted(text)) is not a whole number between \(range.lowerBound) and \(range.upperBound)")
            }
            guard range.contains(number) else {
                throw InvalidValue(message: "\(quoted(text)) is not between \(range.lowerBound) and \(range.upperBound)")
            }
            return number
        }
    }

    /// A size in bytes within `range`; `limits` words the range for the
    /// message (e.g. "between 1 and 1G").
    static func size(in range: ClosedRange<Int>, limits: String) -> Parser<Int> {
        { text throws(InvalidValue) in
            guard let bytes = ByteSize.parse(text) else {
                throw InvalidValue(message: "\(quoted(text)) is not \(ByteSize.acceptedForms)")
            }
            guard range.contains(bytes) else {
                throw InvalidValue(message: "\(quoted(text)) is not \(limits)")
            }
            return bytes
        }
    }

    /// Space-separated time spans, each greater than zero, at least one.
    /// Each word is one delay, so "1min30s" is one delay and "1min 30s" two.
    static func retrySchedule(_ text: String) throws(InvalidValue) -> RetrySchedule {
        let accepted = #"give space-separated time spans, such as "2s 5s 15s 30s 1min 5min""#
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        var delays: [Duration] = []
        for (index, word) in words.enumerated() {
            guard let delay = TimeSpan.parse(String(word)), delay > .zero, delay <= longestTimeSpan else {
                throw InvalidValue(
                    message: "\(quoted(text)): delay \(index + 1) (\(quoted(String(word)))) is not a time span "
                        + "greater than zero and at most 10y; \(accepted)")
            }
            delays.append(delay)
        }
        guard let schedule = RetrySchedule(delays: delays) else {
            throw InvalidValue(message: "\(quoted(text)) holds no delay; \(accepted)")
        }
        return schedule
    }

    /// `1.1` or `2`.
    static func httpVersion(_ text: String) throws(InvalidValue) -> HTTPVersion {
        guard let version = HTTPVersion(rawValue: text) else {
            throw InvalidValue(message: "\(quoted(text)) is not an HTTP version txrecon speaks; give 1.1 or 2")
        }
        return version
    }

    /// An http:// or https:// URL with a host, as POST requests go to it.
    static func backendURL(_ text: String) throws(InvalidValue) -> String {
        let accepted = #"an http:// or https:// URL with a host, such as "https://backend.example/transactions""#
        // Checked first so that no character is silently percent-encoded and
        // non-ASCII host names are written in their xn-- form.
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), let url = URL(string: text) else {
            throw InvalidValue(message: "\(quotedURL(text)) is not \(accepted)")
        }
        guard url.user == nil, url.password == nil else {
            throw InvalidValue(
                message: "the URL carries a user name or password, which would end up in logs; "
                    + "put the token in a file named by BearerTokenFile= instead")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty
        else {
            throw InvalidValue(message: "\(quotedURL(text)) is not \(accepted)")
        }
        if let port = url.port, !(1...65_535).contains(port) {
            throw InvalidValue(message: "\(quotedURL(text)): port \(port) is not between 1 and 65535")
        }
        return text
    }

    /// `[Backend] URL=`: what `backendURL` accepts, or a NATS server with
    /// JetStream, `nats://HOST[:PORT]` or, over TLS, `tls://HOST[:PORT]`
    /// (no path, query or credentials).
    static func destinationURL(_ text: String) throws(InvalidValue) -> String {
        let lowercased = text.lowercased()
        guard lowercased.hasPrefix("nats://") || lowercased.hasPrefix("tls://") else {
            do {
                return try backendURL(text)
            } catch {
                throw InvalidValue(message: error.message
                                   + #", or nats://HOST:PORT (tls://HOST:PORT over TLS) for NATS JetStream"#)
            }
        }
        let accepted = #"a NATS server as nats://HOST:PORT or tls://HOST:PORT, such as "nats://127.0.0.1:4222""#
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }), let url = URL(string: text),
              let host = url.host, !host.isEmpty, url.path.isEmpty || url.path == "/", url.query == nil else {
            throw InvalidValue(message: "\(quotedURL(text)) is not \(accepted)")
        }
        guard url.user == nil, url.password == nil else {
            throw InvalidValue(message: "the URL carries a user name or password, which would end up in logs; "
                               + "put the token in a file named by BearerTokenFile= instead")
        }
        if let port = url.port, !(1...65_535).contains(port) {
            throw InvalidValue(message: "\(quotedURL(text)): port \(port) is not between 1 and 65535")
        }
        return text
    }

    /// A NATS subject of tokens separated by dots, without wildcards or
    /// white space (`txrecon.items`).
    static func natsSubject(_ text: String) throws(InvalidValue) -> String {
        let tokens = text.split(separator: ".", omittingEmptySubsequences: false)
        guard text.utf8.count <= 200, tokens.allSatisfy({ token in
            !token.isEmpty && token.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "*") && $0 != UInt8(ascii: ">") }
        }) else {
            throw InvalidValue(message: "\(quoted(text)) is not a NATS subject: tokens of visible ASCII separated by "
                               + "dots, no empty token, no * or >, at most 200 bytes, such as \"txrecon.items\"")
        }
        return text
    }

    /// A JetStream stream name: visible ASCII without `.`, `*`, `>`, `/` or `\\`.
    static func streamName(_ text: String) throws(InvalidValue) -> String {
        let forbidden: Set<UInt8> = [UInt8(ascii: "."), UInt8(ascii: "*"), UInt8(ascii: ">"), UInt8(ascii: "/"),
                                     UInt8(ascii: "\\")]
        guard text.utf8.count <= 255, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && !forbidden.contains($0) }) else {
            throw InvalidValue(message: "\(quoted(text)) is not a JetStream stream name (visible ASCII without "
                               + ". * > / or \\\\)")
        }
        return text
    }

    private static func quoted(_ text: String) -> String { "\"\(text)\"" }

    /// A URL quoted without its query and its user name and password, which
    /// may hold a credential (checked here on the text as written: a URL
    /// refused as malformed may still have them).
    private static func quotedURL(_ text: String) -> String {
        // With an @ anywhere, everything after ://: a password may hold any
        // character (/ ? # included) when the URL is malformed anyway, and
        // an @ in a query would otherwise show what follows it.
        if text.contains("@") {
            guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
                return quoted(SecretRedactor.placeholder)
            }
            return quoted(text[..<text.index(colon, offsetBy: 3)] + SecretRedactor.placeholder)
        }
        guard let mark = text.firstIndex(of: "?") else { return quoted(text) }
        return quoted(text[...mark] + SecretRedactor.placeholder)
    }
}
