import Testing
@testable import TxRecon

@Suite struct RFC3339TimestampTests {
    @Test func epochIsMidnightOfTheFirstOfJanuary1970() {
        #expect(RFC3339Timestamp.format(millisecondsSince1970: 0) == "1970-01-01T00:00:00.000Z")
    }

    @Test func millisecondsAreAlwaysWrittenWithThreeDigits() {
        #expect(RFC3339Timestamp.format(millisecondsSince1970: 1_690_000_000_007) == "2023-07-22T04:26:40.007Z")
    }

    @Test func leapDayIsFormatted() {
        #expect(RFC3339Timestamp.format(millisecondsSince1970: 1_709_208_000_000) == "2024-02-29T12:00:00.000Z")
    }

    @Test func instantsBefore1970CountBackwards() {
        #expect(RFC3339Timestamp.format(millisecondsSince1970: -1) == "1969-12-31T23:59:59.999Z")
    }

    /// Every field at its width, leading zeros included, across the years
    /// RFC 3339 can write, and clamped beyond them: against the calendar
    /// arithmetic and the standard library's decimal formatting.
    @Test func everyFieldIsWrittenAtItsWidthAcrossTheRepresentableYears() {
        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: width - digits.count) + digits
        }
        var generator = SystemRandomNumberGenerator()
        let first: Int64 = -62_167_219_200_000  // 0000-01-01T00:00:00.000Z
        let last: Int64 = 253_402_300_799_999   // 9999-12-31T23:59:59.999Z
        for milliseconds in [first, last, 0, -1] + (0..<2000).map({ _ in Int64.random(in: first...last, using: &generator) }) {
            let days = (milliseconds - (milliseconds % 86_400_000 + 86_400_000) % 86_400_000) / 86_400_000
            let ofDay = milliseconds - days * 86_400_000
            let (year, month, day) = RFC3339Timestamp.civilDate(daysSince1970: days)
            let expected = "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T\(padded(ofDay / 3_600_000, 2)):"
                + "\(padded(ofDay / 60_000 % 60, 2)):\(padded(ofDay / 1000 % 60, 2)).\(padded(ofDay % 1000, 3))Z"
            #expect(RFC3339Timestamp.format(millisecondsSince1970: milliseconds) == expected, "\(milliseconds)")
        }
        #expect(RFC3339Timestamp.format(millisecondsSince1970: first) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339Timestamp.format(millisecondsSince1970: last) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339Timestamp.format(millisecondsSince1970: first - 1).hasPrefix("0000-"))
        #expect(RFC3339Timestamp.format(millisecondsSince1970: last + 1).hasPrefix("9999-"))
    }

    @Test func civilDateAgreesWithHTTPDateForEveryDayOfFourCenturies() {
        for days in stride(from: Int64(-146_097), through: 146_097, by: 1) {
            let (year, month, day) = RFC3339Timestamp.civilDate(daysSince1970: days)
            let back = HTTPDate.daysSinceEpoch(year: Int(year), month: Int(month), day: Int(day))
            guard Int64(back) == days else {
                Issue.record("day \(days) became \(year)-\(month)-\(day), which maps back to \(back)")
                return
            }
        }
    }
}
