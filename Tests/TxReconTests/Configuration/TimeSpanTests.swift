import Testing
@testable import TxRecon

@Suite struct TimeSpanTests {
    @Test(arguments: [
        ("2s", Duration.seconds(2)),
        ("5min", .seconds(300)),
        ("1h 30min", .seconds(5400)),
        ("1min30s", .seconds(90)),
        ("100ms", .milliseconds(100)),
        ("3d", .seconds(3 * 86_400)),
        ("1w", .seconds(7 * 86_400)),
        ("45", .seconds(45)),
        ("0", .zero),
        ("7us", .microseconds(7)),
        ("7usec", .microseconds(7)),
        ("250msec", .milliseconds(250)),
        ("1sec", .seconds(1)),
        ("1second", .seconds(1)),
        ("2seconds", .seconds(2)),
        ("2m", .seconds(120)),
        ("1minute", .seconds(60)),
        ("3minutes", .seconds(180)),
        ("2hr", .seconds(7200)),
        ("1hour", .seconds(3600)),
        ("2hours", .seconds(7200)),
        ("1day", .seconds(86_400)),
        ("2days", .seconds(172_800)),
        ("1week", .seconds(604_800)),
        ("2weeks", .seconds(1_209_600)),
        ("1M", .seconds(2_629_800)),
        ("1month", .seconds(2_629_800)),
        ("2months", .seconds(5_259_600)),
        ("1y", .seconds(31_557_600)),
        ("1year", .seconds(31_557_600)),
        ("2years", .seconds(63_115_200)),
        ("1.5h", .seconds(5400)),
        ("0.25s", .milliseconds(250)),
        ("1.0000005s", .seconds(1)),
        ("  5 min  ", .seconds(300)),
        ("1min 30", .seconds(90)),
        ("1y 12month", .seconds(63_115_200)),
    ] as [(String, Duration)])
    func timeSpansParseToTheirDuration(text: String, expected: Duration) {
        #expect(TimeSpan.parse(text) == expected)
    }

    @Test(arguments: [
        "", "   ", "s", "-5s", "+5s", "5x", "5 minutes ago", "5S", "5MIN", "1.s", ".5s", "1,5s", "5s,", "infinity",
        "9223372036854775807s", "99999999999999999999",
    ])
    func malformedTimeSpansAreRefused(text: String) {
        #expect(TimeSpan.parse(text) == nil)
    }

    @Test(arguments: [
        (Duration.zero, "0"),
        (.seconds(90), "1min 30s"),
        (.seconds(3 * 86_400), "3d"),
        (.seconds(5400), "1h 30min"),
        (.milliseconds(100), "100ms"),
        (.microseconds(7), "7us"),
        (.milliseconds(1500), "1.500000s"),
        (.microseconds(2500), "2.500ms"),
        (.milliseconds(60_500), "1min 500ms"),
        (.seconds(10 * 86_400), "1w 3d"),
        (.seconds(31_557_600 + 2_629_800), "1y 1month"),
    ] as [(Duration, String)])
    func durationsFormatTheWaySystemdPrintsThem(duration: Duration, expected: String) {
        #expect(TimeSpan.format(duration) == expected)
    }

    @Test func formattedSpansParseBackToTheSameDuration() {
        let spans: [Duration] = [.microseconds(1), .milliseconds(1234), .seconds(59), .seconds(3661), .seconds(40_000_000)]
        for span in spans {
            #expect(TimeSpan.parse(TimeSpan.format(span)) == span, "\(span)")
        }
    }

    @Test func formattingDropsPartsFinerThanAMicrosecond() {
        #expect(TimeSpan.format(.nanoseconds(1_999)) == "1us")
    }
}
