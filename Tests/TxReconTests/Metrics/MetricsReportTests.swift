// txrecon.prom's content: a known status rendered, then read back line by
// line with the strict parser, family by family.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct MetricsReportTests {
    static let startedAt: Int64 = 1_800_000_000_250

    /// A status with a distinct number everywhere, so a value in the wrong
    /// place shows.
    static var knownStatus: EngineStatus {
        var status = EngineStatus()
        status.phase = "running"
        status.queued = 12
        status.delivering = 3
        status.held = 4
        status.rejected = 5
        status.delivered = 101
        status.superseded = 7
        status.oldestQueuedAt = 1_800_000_123_456
        status.statistics.deferred = 23
        status.statistics.held = 6
        status.statistics.rejected = 8
        status.statistics.replayed = 4
        status.statistics.consecutiveBackendFailures = 9
        status.statistics.deliveredByApp = ["main": 97, "puzzles": 4]
        status.statistics.novelties = [.container("futureData"): 2, .notificationType("FUTURE_TYPE"): 3]
        for milliseconds in [2, 5, 30, 30, 700, 12_000] {
            status.statistics.attemptDurations.record(.milliseconds(milliseconds))
        }
        return status
    }

    private func parsed(_ status: EngineStatus = knownStatus, running: Bool = true,
                        version: String = "1.2.3") throws -> PrometheusExposition {
        try PrometheusExposition(parsing: MetricsReport.render(DaemonStatus(status), startedAt: Self.startedAt, version: version,
                                                               running: running))
    }

    @Test func everyFamilyHasHelpAndATypeAndFollowsTheNamingConventions() throws {
        for family in try parsed().families {
            #expect(family.name.hasPrefix("txrecon_"))
            #expect(!family.help.isEmpty)
            #expect((family.type == "counter") == family.name.hasSuffix("_total"), "\(family.name)")
            #expect(!family.samples.isEmpty, "\(family.name)")
        }
    }

    @Test func theFileHasExactlyTheDocumentedFamilies() throws {
        #expect(try parsed().families.map(\.name) == [
            "txrecon_up", "txrecon_start_time_seconds", "txrecon_build_info", "txrecon_spool_items",
            "txrecon_deliveries_in_flight", "txrecon_oldest_queued_timestamp_seconds", "txrecon_deliveries_total",
            "txrecon_app_deliveries_total", "txrecon_outbox_entries_written_total", "txrecon_consumption_deadline_warnings_total",
            "txrecon_apple_unknown_names_total", "txrecon_attempt_duration_seconds",
            "txrecon_backend_consecutive_failures",
        ])
    }

    @Test func eachAppsDeliveriesAreCountedByDestinationAndAppAndNoneWithoutAny() throws {
        let metrics = try parsed()
        let family = try #require(metrics.families.first { $0.name == "txrecon_app_deliveries_total" })
        #expect(family.samples.map(\.labels) == [["destination": "backend", "app": "main"],
                                                 ["destination": "backend", "app": "puzzles"]])
        #expect(family.samples.map(\.value) == ["97", "4"])
        var quiet = Self.knownStatus
        quiet.statistics.deliveredByApp = [:]
        #expect(try parsed(quiet).families.allSatisfy { $0.name != "txrecon_app_deliveries_total" })
    }

    @Test func theLedgerIsUpWithItsRowsSizeAndLagOrDownWithoutThem() throws {
        var daemon = DaemonStatus(Self.knownStatus)
        daemon.ledger = LedgerService.Status(path: "/var/lib/txrecon/ledger.sqlite3", rows: 1_204, bytes: 409_600,
                                             lagMilliseconds: 2_500)
        var metrics = try PrometheusExposition(parsing: MetricsReport.render(daemon, startedAt: Self.startedAt,
                                                                             version: "1", running: true))
        #expect(metrics.value("txrecon_ledger_up") == "1")
        #expect(metrics.value("txrecon_ledger_rows") == "1204" && metrics.value("txrecon_ledger_bytes") == "409600")
        #expect(metrics.value("txrecon_ledger_lag_seconds") == "2.5")
        daemon.ledger = LedgerService.Status(path: "/var/lib/txrecon/ledger.sqlite3", unavailable: "disk full")
        metrics = try PrometheusExposition(parsing: MetricsReport.render(daemon, startedAt: Self.startedAt,
                                                                         version: "1", running: true))
        #expect(metrics.value("txrecon_ledger_up") == "0")
        #expect(metrics.value("txrecon_ledger_rows") == nil, "no count while it is not in use")
        #expect(daemon.line.hasSuffix("; ledger unavailable: disk full"), "STATUS says so: \(daemon.line)")
    }

    @Test func namesAppleAddedAreCountedByWhatAndNameAndAbsentUntilOneArrives() throws {
        let metrics = try parsed()
        #expect(metrics.value("txrecon_apple_unknown_names_total", ["what": "container", "name": "futureData"]) == "2")
        #expect(metrics.value("txrecon_apple_unknown_names_total",
                              ["what": "notificationType", "name": "FUTURE_TYPE"]) == "3")
        var plain = Self.knownStatus
        plain.statistics.novelties = [:]
        #expect(try !parsed(plain).families.contains { $0.name == "txrecon_apple_unknown_names_total" })
    }

    @Test func upStartTimeAndVersionDescribeTheRunningDaemon() throws {
        let metrics = try parsed()
        #expect(metrics.value("txrecon_up") == "1")
        #expect(metrics.value("txrecon_start_time_seconds") == "1800000000.25")
        #expect(metrics.value("txrecon_build_info", ["version": "1.2.3"]) == "1")
    }

    @Test func aCleanStopReportsUpZero() throws {
        #expect(try parsed(running: false).value("txrecon_up") == "0")
    }

    @Test func theVersionLabelIsEscaped() throws {
        let version = #"1.0 "dirty" \ local"#
        let text = MetricsReport.render(DaemonStatus(Self.knownStatus), startedAt: Self.startedAt, version: version, running: true)
        #expect(text.contains(#"txrecon_build_info{version="1.0 \"dirty\" \\ local"} 1"#))
        #expect(try parsed(version: version).value("txrecon_build_info", ["version": version]) == "1")
    }

    @Test func queueDepthsArePerDirectory() throws {
        let metrics = try parsed()
        #expect(metrics.value("txrecon_spool_items", ["destination": "backend", "directory": "queue"]) == "12")
        #expect(metrics.value("txrecon_spool_items", ["destination": "backend", "directory": "hold"]) == "4")
        #expect(metrics.value("txrecon_spool_items", ["directory": "rejected"]) == "5")
        #expect(metrics.value("txrecon_deliveries_in_flight", ["destination": "backend"]) == "3")
    }

    @Test func theOldestQueuedItemIsGivenAsItsArrivalTimestamp() throws {
        #expect(try parsed().value("txrecon_oldest_queued_timestamp_seconds", ["destination": "backend"]) == "1800000123.456")
    }

    @Test func anEmptyQueueHasNoOldestQueuedTimestamp() throws {
        var status = Self.knownStatus
        status.oldestQueuedAt = nil
        #expect(try parsed(status).family("txrecon_oldest_queued_timestamp_seconds") == nil)
    }

    @Test func deliveriesAreCountedByOutcome() throws {
        let family = try #require(try parsed().family("txrecon_deliveries_total"))
        let byOutcome = Dictionary(uniqueKeysWithValues: family.samples.map { ($0.labels["outcome"] ?? "", $0.value) })
        #expect(byOutcome == ["delivered": "101", "deferred": "23", "held": "6", "rejected": "8", "superseded": "7",
                           "replayed": "4"])
    }

    @Test func attemptDurationsAreACumulativeHistogramInSeconds() throws {
        let family = try #require(try parsed().family("txrecon_attempt_duration_seconds"))
        #expect(family.type == "histogram")
        let buckets = family.samples.filter { $0.name == "txrecon_attempt_duration_seconds_bucket" }
        #expect(buckets.map { $0.labels["le"] ?? "" } == [
            "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "+Inf",
        ])
        #expect(buckets.map(\.value) == ["2", "2", "2", "4", "4", "4", "4", "5", "5", "5", "5", "6"])
        let metrics = try parsed()
        #expect(metrics.value("txrecon_attempt_duration_seconds_sum", ["destination": "backend"]) == "12.767")
        #expect(metrics.value("txrecon_attempt_duration_seconds_count", ["destination": "backend"]) == "6")
    }

    @Test func theBackendFailureStreakIsAGauge() throws {
        let metrics = try parsed()
        #expect(metrics.family("txrecon_backend_consecutive_failures")?.type == "gauge")
        #expect(metrics.value("txrecon_backend_consecutive_failures", ["destination": "backend"]) == "9")
    }
}
