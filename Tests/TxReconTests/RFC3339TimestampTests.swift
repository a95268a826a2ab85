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
