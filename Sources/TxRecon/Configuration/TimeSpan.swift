// TimeSpan: time spans in systemd.time(7) syntax, read from configuration
// values and printed back the way systemd prints them.
//
// Reads "2s", "5min", "1h 30min", "1min30s", "1.5h", "100ms", "3d" and bare
// numbers (seconds) with microsecond resolution, as systemd's parse_sec()
// does. Reports nothing itself: a nil result means "not a time span", and the
// caller names the file, line and key.

/// A systemd time span: parsing into a `Duration` and canonical text.
package enum TimeSpan {
    private static let microsecondsPerSecond: Int64 = 1_000_000
    private static let microsecondsPerMinute = 60 * microsecondsPerSecond
    private static let microsecondsPerHour = 60 * microsecondsPerMinute
    private static let microsecondsPerDay = 24 * microsecondsPerHour
    private static let microsecondsPerWeek = 7 * microsecondsPerDay
    /// 30.44 days, as systemd defines a month.
    private static let microsecondsPerMonth: Int64 = 2_629_800 * microsecondsPerSecond
    /// 365.25 days, as systemd defines a year.
    private static let microsecondsPerYear: Int64 = 31_557_600 * microsecondsPerSecond

    /// Every unit name systemd.time(7) accepts, in microseconds. Names are
    /// case-sensitive: `m` is a minute, `M` a month.
    private static let units: [String: Int64] = [
        "us": 1, "usec": 1,
        "ms": 1000, "msec": 1000,
        "s": microsecondsPerSecond, "sec": microsecondsPerSecond,
        "second": microsecondsPerSecond, "seconds": microsecondsPerSecond,
        "m": microsecondsPerMinute, "min": microsecondsPerMinute,
        "minute": microsecondsPerMinute, "minutes": microsecondsPerMinute,
        "h": microsecondsPerHour, "hr": microsecondsPerHour,
        "hour": microsecondsPerHour, "hours": microsecondsPerHour,
        "d": microsecondsPerDay, "day": microsecondsPerDay, "days": microsecondsPerDay,
        "w": microsecondsPerWeek, "week": microsecondsPerWeek, "weeks": microsecondsPerWeek,
        "M": microsecondsPerMonth, "month": microsecondsPerMonth, "months": microsecondsPerMonth,
        "y": microsecondsPerYear, "year": microsecondsPerYear, "years": microsecondsPerYear,
    ]

    /// The units systemd's format_timespan() prints, largest first.
    private static let printedUnits: [(suffix: String, microseconds: Int64)] = [
        ("y", microsecondsPerYear), ("month", microsecondsPerMonth), ("w", microsecondsPerWeek),
        ("d", microsecondsPerDay), ("h", microsecondsPerHour), ("min", microsecondsPerMinute),
        ("s", microsecondsPerSecond), ("ms", 1000), ("us", 1),
    ]

    /// Accepted forms, for error messages.
    static let acceptedForms = #"a time span such as "30s", "5min", "1h 30min" or "2d" "#
        + "(units us, ms, s, min, h, d, w, M, y; a bare number is seconds)"

    /// The span `text` denotes, with microsecond resolution; nil when it is
    /// not a time span (empty, negative, an unknown unit, or beyond
    /// `Int64.max` microseconds). Each number takes the unit that follows it,
    /// seconds when none does, and the parts add up: `"1min 30"` is 90 s.
    static func parse(_ text: String) -> Duration? {
        var scanner = TimeSpanScanner(Array(text.utf8))
        var total: Int64 = 0
        scanner.skipSpaces()
        guard !scanner.isAtEnd else { return nil }
        while !scanner.isAtEnd {
            guard let whole = scanner.integer(), let fraction = scanner.fractionDigits() else { return nil }
            scanner.skipSpaces()
            let unitName = scanner.letters()
            guard let unit = unitName.isEmpty ? microsecondsPerSecond : units[unitName],
                  let part = microseconds(whole: whole, fraction: fraction, unit: unit)
            else { return nil }
            let (sum, overflow) = total.addingReportingOverflow(part)
            guard !overflow else { return nil }
            total = sum
            scanner.skipSpaces()
        }
        return .microseconds(total)
    }

    /// `whole.fraction` units in microseconds; digits finer than a
    /// microsecond are dropped, as systemd drops them.
    private static func microseconds(whole: Int64, fraction: [UInt8], unit: Int64) -> Int64? {
        let (wholePart, overflow) = whole.multipliedReportingOverflow(by: unit)
        guard !overflow else { return nil }
        var result = wholePart
        var scale = unit
        for digit in fraction {
            scale /= 10
            let (sum, overflow) = result.addingReportingOverflow(Int64(digit) * scale)
            guard !overflow else { return nil }
            result = sum
        }
        return result
    }

    /// The span as systemd prints it with microsecond accuracy: "0", "100ms",
    /// "1min 30s", "3d", "1w 2d 4h"; a remainder under a minute that is not
    /// whole in its largest unit is written as a decimal ("1.500000s").
    /// Sub-microsecond parts are dropped. The result parses back to the same
    /// span.
    package static func format(_ duration: Duration) -> String {
        precondition(duration >= .zero, "TimeSpan.format: negative duration \(duration)")
        let (seconds, attoseconds) = duration.components
        let (wholeSeconds, overflow) = seconds.multipliedReportingOverflow(by: microsecondsPerSecond)
        precondition(!overflow, "TimeSpan.format: \(duration) is beyond Int64.max microseconds")
        var remaining = wholeSeconds + attoseconds / 1_000_000_000_000
        guard remaining > 0 else { return "0" }
        var parts: [String] = []
        for (suffix, unit) in printedUnits where remaining >= unit {
            let count = remaining / unit
            let rest = remaining % unit
            if remaining < microsecondsPerMinute && rest > 0 {
                // The unit is a power of ten here, so the remainder has as
                // many digits as the unit has zeros.
                let width = String(unit).count - 1
                let digits = String(rest)
                parts.append("\(count).\(String(repeating: "0", count: width - digits.count))\(digits)\(suffix)")
                break
            }
            parts.append("\(count)\(suffix)")
            remaining = rest
        }
        return parts.joined(separator: " ")
    }
}

/// Reads a time span's text byte by byte.
private struct TimeSpanScanner {
    private let bytes: [UInt8]
    private var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { index == bytes.count }

    mutating func skipSpaces() {
        while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") {
            index += 1
        }
    }

    /// A run of decimal digits, or nil when there is none or it overflows.
    mutating func integer() -> Int64? {
        let start = index
        var value: Int64 = 0
        while index < bytes.count, let digit = Self.digit(bytes[index]) {
            let (product, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = product.addingReportingOverflow(Int64(digit))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            index += 1
        }
        return index > start ? value : nil
    }

    /// The digit values after a "." (empty when there is no "." here), or
    /// nil for a "." with no digits after it ("1.s"), which is malformed.
    mutating func fractionDigits() -> [UInt8]? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: ".") else { return [] }
        index += 1
        var digits: [UInt8] = []
        while index < bytes.count, let digit = Self.digit(bytes[index]) {
            digits.append(digit)
            index += 1
        }
        return digits.isEmpty ? nil : digits
    }

    /// A run of ASCII letters (a unit name), possibly empty.
    mutating func letters() -> String {
        let start = index
        while index < bytes.count, Self.isLetter(bytes[index]) { index += 1 }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func digit(_ byte: UInt8) -> UInt8? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? byte - UInt8(ascii: "0") : nil
    }
}
