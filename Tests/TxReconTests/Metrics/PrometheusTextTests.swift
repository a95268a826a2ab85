// The exposition-format writer: escaping, exact numbers, histogram layout,
// each read back with the strict test parser.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct PrometheusTextTests {
    @Test func helpTextEscapesBackslashAndLineFeedOnly() {
        #expect(PrometheusText.escapedHelp(#"a\b "c""# + "\nd") == #"a\\b "c"\nd"#)
    }

    @Test func labelValuesEscapeBackslashQuoteAndLineFeed() {
        #expect(PrometheusText.escapedLabelValue(#"a\b "c""# + "\nd") == #"a\\b \"c\"\nd"#)
    }

    @Test func aLineFeedInsideACarriageReturnPairIsEscapedToo() {
        #expect(PrometheusText.escapedLabelValue("a\r\nb") == "a\r\\nb")
    }

    @Test func labelValuesAndHelpReadBackUnchanged() throws {
        let awkward = #"1.0 "beta" \ build"# + "\nsecond line, ünïcode"
        var text = PrometheusText()
        text.family("txrecon_test_info", .gauge, help: awkward)
        text.sample("txrecon_test_info", labels: ["version": awkward, "empty": ""], "1")
        let parsed = try PrometheusExposition(parsing: text.text)
        #expect(parsed.family("txrecon_test_info")?.help == awkward)
        #expect(parsed.value("txrecon_test_info", ["version": awkward, "empty": ""]) == "1")
    }

    @Test func everyFamilyStartsWithHelpThenType() {
        var text = PrometheusText()
        text.family("txrecon_things_total", .counter, help: "Things.")
        text.sample("txrecon_things_total", "3")
        #expect(text.text == "# HELP txrecon_things_total Things.\n# TYPE txrecon_things_total counter\ntxrecon_things_total 3\n")
    }

    @Test(arguments: [
        (Duration.zero, "0"), (.milliseconds(5), "0.005"), (.milliseconds(2500), "2.5"), (.seconds(10), "10"),
        (.nanoseconds(1), "0.000000001"), (.milliseconds(1_800_000_000_123), "1800000000.123"),
        (.milliseconds(-1500), "-1.5"),
    ])
    func secondsAreWrittenAsExactDecimals(duration: Duration, expected: String) {
        #expect(PrometheusText.seconds(duration) == expected)
    }

    @Test func histogramBucketsAreCumulativeEndWithInfAndCarrySumAndCount() throws {
        var histogram = DurationHistogram(bounds: [.milliseconds(10), .seconds(1)])
        for duration: Duration in [.milliseconds(3), .milliseconds(10), .milliseconds(400), .seconds(7)] {
            histogram.record(duration)
        }
        var text = PrometheusText()
        text.histogram("txrecon_wait_seconds", help: "Waits.", histogram)
        let family = try #require(try PrometheusExposition(parsing: text.text).family("txrecon_wait_seconds"))
        #expect(family.type == "histogram")
        #expect(family.samples.map(\.name) == ["txrecon_wait_seconds_bucket", "txrecon_wait_seconds_bucket",
                                               "txrecon_wait_seconds_bucket", "txrecon_wait_seconds_sum",
                                               "txrecon_wait_seconds_count"])
        #expect(family.samples.prefix(3).map { $0.labels["le"] } == ["0.01", "1", "+Inf"])
        #expect(family.samples.map(\.value) == ["2", "3", "4", "7.413", "4"])
    }
}
