// OperatorTime: a point in time as an operator types it on the command
// line (`txrecon replay --since`): an RFC 3339 timestamp with a zone
// (`2026-12-01T09:30:00Z`, `2026-12-01T10:30:00+01:00`, fractions of a
// second allowed), or a systemd time span meaning that long ago (`2h`,
// `3d`, `1h 30min`).

package enum OperatorTime {
    /// What `parse` accepts, for an error message.
    package static let acceptedForms = #"an RFC 3339 time such as "2026-12-01T09:30:00Z", or a span ago such as "2h""#

    /// Milliseconds since 1970, or nil; a span counts back from now.
    package static func parse(_ text: String) -> Int64? {
        parse(text, now: Timestamp.nowMilliseconds())
    }

    /// As `parse(_:)`, a span counting back from `now` (ms since 1970).
    static func parse(_ text: String, now: Int64) -> Int64? {
        if let span = TimeSpan.parse(text) { return now - span.milliseconds }
        return timestamp(Array(text.utf8))
    }

    private static func timestamp(_ bytes: [UInt8]) -> Int64? {
        // YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(bytes, 0, 4), let month = number(bytes, 5, 2), let day = number(bytes, 8, 2),
              let hour = number(bytes, 11, 2), let minute = number(bytes, 14, 2), let second = number(bytes, 17, 2),
              (1...12).contains(month), (1...days(inMonth: month, of: year)).contains(day),
              hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var milliseconds: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, let digit = digitValue(bytes[index]) {
                if digits < 3 { milliseconds = milliseconds * 10 + digit }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { milliseconds *= 10 }
        }
        guard index < bytes.count else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                  let hours = number(bytes, index + 1, 2), let minutes = number(bytes, index + 4, 2),
                  hours < 24, minutes < 60 else { return nil }
            offset = (hours * 60 + minutes) * 60_000 * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        let days = Int64(HTTPDate.daysSinceEpoch(year: Int(year), month: Int(month), day: Int(day)))
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + milliseconds - offset
    }

    private static func number(_ bytes: [UInt8], _ start: Int, _ count: Int) -> Int64? {
        var value: Int64 = 0
        for byte in bytes[start..<start + count] {
            guard let digit = digitValue(byte) else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    private static func digitValue(_ byte: UInt8) -> Int64? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int64(byte - UInt8(ascii: "0")) : nil
    }

    private static func days(inMonth month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension OperatorTime {
    /// A span as a person reads it at a glance, rounded down to one unit:
    /// `45s`, `12min`, `5h`, `3d`.
    package static func age(milliseconds: Int64) -> String {
        let seconds = max(0, milliseconds / 1000)
        if seconds < 120 { return "\(seconds)s" }
        if seconds < 7200 { return "\(seconds / 60)min" }
        if seconds < 172_800 { return "\(seconds / 3600)h" }
        return "\(seconds / 86400)d"
    }
}
