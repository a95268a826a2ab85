// The built daemon with [Metrics] TextfileDirectory= set: txrecon.prom is
// written while it runs, follows deliveries within the coalescing interval,
// and says txrecon_up 0 after a clean stop. The file is read back with the
// strict exposition-format parser.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

/// A daemon whose metrics go to a directory of their own.
private final class MetricsFixture {
    let metricsDirectory = TemporaryDirectory("txrecon-it-metrics")
    let daemon: DaemonFixture
    var path: String { metricsDirectory.path + "/txrecon.prom" }

    init(handler: @escaping LoopbackHTTPServer.Handler = { _ in .status(200) }) throws {
        daemon = try DaemonFixture(extraConfig: "[Metrics]\nTextfileDirectory=\(metricsDirectory.path)\n",
                                   handler: handler)
    }

    /// The file as it is now; nil while it does not exist or does not parse.
    func read() -> PrometheusExposition? {
        guard let bytes = try? SystemCall.readFile(path, limit: 1 << 20) else { return nil }
        return try? PrometheusExposition(parsing: String(decoding: bytes, as: UTF8.self))
    }

    /// Waits until the file satisfies `condition`; the last reading either way.
    func eventually(_ condition: @escaping (PrometheusExposition) -> Bool) async -> PrometheusExposition? {
        var latest: PrometheusExposition?
        _ = await daemon.eventually {
            latest = read()
            return latest.map(condition) ?? false
        }
        return latest
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct MetricsIntegrationTests {
    @Test func theFileIsWrittenAtStartWithUpAndTheVersion() async throws {
        let fixture = try MetricsFixture()
        let before = Timestamp.nowMilliseconds() / 1000
        try await fixture.daemon.start()
        let metrics = try #require(await fixture.eventually { $0.value("txrecon_up") == "1" })
        #expect(metrics.value("txrecon_build_info", ["version": TxReconVersion.current]) == "1")
        let started = try #require(metrics.value("txrecon_start_time_seconds").flatMap(Double.init))
        #expect(started >= Double(before) && started <= Double(before + 60))
        #expect(metrics.value("txrecon_spool_items", ["destination": "backend", "directory": "queue"]) == "0")
        let info = try #require(try SystemCall.linkStatus(fixture.path))
        #expect(info.st_mode & 0o777 == 0o644)
        #expect(try SystemCall.listDirectory(fixture.metricsDirectory.path) == ["txrecon.prom"])
    }

    @Test func checkConfigShowsTheMetricsDirectory() async throws {
        let fixture = try MetricsFixture()
        let check = try await fixture.daemon.cli(["check-config"])
        #expect(check.status == 0)
        let lines = check.stdout.split(separator: "\n").map { $0.trimmingPrefix(while: \.isWhitespace) }
        let section = try #require(lines.firstIndex(of: "[Metrics]"))
        #expect(lines.dropFirst(section + 1).first == "TextfileDirectory=\(fixture.metricsDirectory.path)")
    }

    @Test func whileRunningTheFileFollowsDeliveriesAndRejections() async throws {
        let fixture = try MetricsFixture()
        try await fixture.daemon.start()
        try fixture.daemon.drop(fixture.daemon.envelope("m-1", version: 1))
        try fixture.daemon.drop(fixture.daemon.envelope("m-2", version: 1))
        try fixture.daemon.drop("not json at all")
        let metrics = await fixture.eventually {
            $0.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2"
                && $0.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "rejected"]) == "1"
                && $0.value("txrecon_spool_items", ["directory": "rejected"]) == "1"
        }
        // `eventually` returns the last reading either way: each value is asserted.
        #expect(metrics?.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2",
                "delivered 2, rejected 1 within 20 s; file:\n\(fixture.read().map { "\($0.families)" } ?? "none")")
        #expect(metrics?.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "rejected"]) == "1")
        #expect(metrics?.value("txrecon_spool_items", ["directory": "rejected"]) == "1")
        #expect(metrics?.value("txrecon_up") == "1")
    }

    @Test func theRejectedGaugeFollowsAnOperatorsRemovalByHand() async throws {
        // docs/spool.md: remove it if the backend confirmed it. An alert on
        // the gauge must clear then, without a restart.
        let fixture = try MetricsFixture()
        try await fixture.daemon.start()
        try fixture.daemon.drop("not json at all", name: "bad-1")
        try fixture.daemon.drop("nor this", name: "bad-2")
        let before = await fixture.eventually { $0.value("txrecon_spool_items", ["directory": "rejected"]) == "2" }
        #expect(before?.value("txrecon_spool_items", ["directory": "rejected"]) == "2")
        let rejected = fixture.daemon.layout.rejected + "/"
        #expect(unlink(rejected + "bad-1") == 0 && unlink(rejected + "bad-1.reason") == 0)
        let metrics = await fixture.eventually { $0.value("txrecon_spool_items", ["directory": "rejected"]) == "1" }
        #expect(metrics?.value("txrecon_spool_items", ["directory": "rejected"]) == "1",
                "the gauge is rejected/'s count again; file:\n\(fixture.read().map { "\($0.families)" } ?? "none")")
        #expect(metrics?.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "rejected"]) == "2",
                "the counter of outcomes does not go back")
    }

    @Test func aCleanStopLeavesTheFinalCountsWithUpZero() async throws {
        let fixture = try MetricsFixture { _ in .delayed(.milliseconds(30), .status(200)) }
        let process = try await fixture.daemon.start()
        try fixture.daemon.drop(fixture.daemon.envelope("s-1", version: 1))
        try fixture.daemon.drop(fixture.daemon.envelope("s-2", version: 1))
        #expect(await fixture.daemon.eventually { fixture.daemon.doneItems().count == 2 })
        process.signal(SIGTERM)
        #expect(await process.wait(timeout: .seconds(10)) == 0)

        let metrics = try #require(fixture.read())
        #expect(metrics.value("txrecon_up") == "0")
        #expect(metrics.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2")
        #expect(metrics.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "deferred"]) == "0")
        #expect(metrics.value("txrecon_spool_items", ["destination": "backend", "directory": "queue"]) == "0")
        #expect(metrics.family("txrecon_oldest_queued_timestamp_seconds") == nil)
        #expect(metrics.value("txrecon_attempt_duration_seconds_count", ["destination": "backend"]) == "2")
        #expect(metrics.value("txrecon_attempt_duration_seconds_bucket", ["destination": "backend", "le": "0.025"]) == "0",
                "the backend took 30 ms to answer each")
        #expect(metrics.value("txrecon_attempt_duration_seconds_bucket", ["destination": "backend", "le": "+Inf"]) == "2")
        #expect(metrics.value("txrecon_backend_consecutive_failures", ["destination": "backend"]) == "0")
    }

    @Test func aFailingBackendShowsAsAFailureStreakAndAnOldestQueuedItem() async throws {
        let fixture = try MetricsFixture { _ in .status(503) }
        try await fixture.daemon.start()
        let dropped = Timestamp.nowMilliseconds() / 1000
        try fixture.daemon.drop(fixture.daemon.envelope("f-1", version: 1))
        let metrics = await fixture.eventually {
            ($0.value("txrecon_backend_consecutive_failures", ["destination": "backend"]).flatMap(Int.init) ?? 0) >= 2
        }
        #expect(metrics != nil, "two failed attempts (RetryDelays=1s 2s) within 20 s")
        #expect((metrics?.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "deferred"]).flatMap(Int.init) ?? 0) >= 2)
        #expect(metrics?.value("txrecon_spool_items", ["destination": "backend", "directory": "queue"]) == "1")
        let oldest = try #require(metrics?.value("txrecon_oldest_queued_timestamp_seconds", ["destination": "backend"]).flatMap(Double.init))
        #expect(abs(oldest - Double(dropped)) < 5, "the oldest item arrived when the test dropped it")
    }
}
