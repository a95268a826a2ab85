// The test parser itself: it must refuse what a scraper refuses, or the
// metrics tests that rely on it would prove nothing.
import Testing
import TxReconTestSupport

@Suite struct PrometheusExpositionTests {
    @Test func aSampleBeforeItsTypeIsRefused() {
        #expect(throws: PrometheusParseError.self) { try PrometheusExposition(parsing: "txrecon_up 1\n") }
    }

    @Test func aSampleOfAnotherFamilyIsRefused() {
        let text = "# HELP txrecon_up Up.\n# TYPE txrecon_up gauge\ntxrecon_down 1\n"
        #expect(throws: PrometheusParseError.self) { try PrometheusExposition(parsing: text) }
    }

    @Test func anUnknownEscapeInALabelValueIsRefused() {
        let text = "# HELP txrecon_info Info.\n# TYPE txrecon_info gauge\ntxrecon_info{version=\"a\\tb\"} 1\n"
        #expect(throws: PrometheusParseError.self) { try PrometheusExposition(parsing: text) }
    }

    @Test func aValueThatIsNotANumberIsRefused() {
        let text = "# HELP txrecon_up Up.\n# TYPE txrecon_up gauge\ntxrecon_up yes\n"
        #expect(throws: PrometheusParseError.self) { try PrometheusExposition(parsing: text) }
    }

    @Test func escapedQuotesAndBackslashesInLabelValuesAreRead() throws {
        let text = "# HELP txrecon_info Info.\n# TYPE txrecon_info gauge\ntxrecon_info{a=\"x\\\\\",b=\"\\\"y\\\"\"} 1\n"
        let parsed = try PrometheusExposition(parsing: text)
        #expect(parsed.value("txrecon_info", ["a": "x\\", "b": "\"y\""]) == "1")
    }
}
