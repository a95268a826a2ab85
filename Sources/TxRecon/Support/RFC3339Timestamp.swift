// RFC3339Timestamp: instants as RFC 3339 text in UTC with milliseconds, the
// form the delivery body (`receivedAt`) and machine-readable output use.
// Pure arithmetic on the proleptic Gregorian calendar; no clock, no locale.

enum RFC3339Timestamp {
    /// `2023-07-22T04:26:40.123Z` for `milliseconds` since 1970-01-01T00:00Z.
    /// Years outside 0…9999 are not representable in RFC 3339 and are
    /// clamped to that range.
    static func format(millisecondsSince1970 milliseconds: Int64) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(24)
        append(millisecondsSince1970: milliseconds, to: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// Appends what `format` returns to `text`, for a writer that would
    /// otherwise copy the String's bytes straight into its own buffer.
    static func append(millisecondsSince1970 milliseconds: Int64, to text: inout [UInt8]) {
        let (daysSince1970, millisecondOfDay) = floorDivision(milliseconds, 86_400_000)
        let (year, month, day) = civilDate(daysSince1970: daysSince1970)
        append(min(max(year, 0), 9999), digits: 4, to: &text)
        text.append(UInt8(ascii: "-"))
        append(month, digits: 2, to: &text)
        text.append(UInt8(ascii: "-"))
        append(day, digits: 2, to: &text)
        text.append(UInt8(ascii: "T"))
        append(millisecondOfDay / 3_600_000, digits: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        append(millisecondOfDay / 60_000 % 60, digits: 2, to: &text)
        text.append(UInt8(ascii: ":"))
        append(millisecondOfDay / 1000 % 60, digits: 2, to: &text)
        text.append(UInt8(ascii: "."))
        append(millisecondOfDay % 1000, digits: 3, to: &text)
        text.append(UInt8(ascii: "Z"))
    }

    /// Year, month (1…12) and day (1…31) of the day `daysSince1970` after
    /// 1970-01-01, counting in 400-year eras that start on a 1 March.
    static func civilDate(daysSince1970: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let (era, dayOfEra) = floorDivision(daysSince1970 + 719_468, 146_097)
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // 0 is March
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = era * 400 + yearOfEra + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    /// Quotient rounded toward minus infinity and the non-negative remainder.
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (Int64, Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// Appends `value` (0 ≤ value < 10^digits) as `digits` (2, 3 or 4) digits,
    /// leading zeros included. Divided by constants only, which the
    /// compiler turns into multiplications: with the divisor in a variable
    /// each digit cost two hardware divisions, and every request's
    /// `receivedAt` has seventeen digits.
    private static func append(_ value: Int64, digits: Int, to text: inout [UInt8]) {
        let zero = UInt8(ascii: "0")
        var rest = value
        if digits == 4 {
            text.append(zero + UInt8(rest / 1000))
            rest %= 1000
        }
        if digits >= 3 {
            text.append(zero + UInt8(rest / 100))
            rest %= 100
        }
        text.append(zero + UInt8(rest / 10))
        text.append(zero + UInt8(rest % 10))
    }
}
