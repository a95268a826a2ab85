// The metrics file on disk: written whole under its name, readable by the
// node_exporter user, not rewritten when nothing changed, a failure reported
// once. Writes are forced with flushNow(), so no test waits for the
// coalescing timer.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct MetricsExporterTests {
    let directory = TemporaryDirectory("txrecon-metrics")
    let log = RecordingLogSink()

    func exporter(in path: String? = nil) -> MetricsExporter<DaemonStatus> {
        MetricsExporter(directory: path ?? directory.path, startedAt: 1_800_000_000_000, version: "test", log: log,
                        clock: ManualClock())
    }

    func status(delivered: Int) -> DaemonStatus {
        var status = EngineStatus()
        status.delivered = delivered
        return DaemonStatus(status)
    }

    func metrics(_ exporter: MetricsExporter<DaemonStatus>) throws -> PrometheusExposition {
        let bytes = try SystemCall.readFile(exporter.path, limit: 1 << 20)
        return try PrometheusExposition(parsing: String(decoding: bytes, as: UTF8.self))
    }

    @Test func aPublishedStatusIsWrittenToTxreconPromAndNothingElseStays() throws {
        let exporter = exporter()
        exporter.publish(status(delivered: 3))
        exporter.flushNow()
        #expect(exporter.path == directory.path + "/txrecon.prom")
        #expect(try metrics(exporter).value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "3")
        #expect(try SystemCall.listDirectory(directory.path) == ["txrecon.prom"])
    }

    @Test func theFileIsReadableByEveryone() throws {
        let exporter = exporter()
        exporter.publish(status(delivered: 1))
        exporter.flushNow()
        let info = try #require(try SystemCall.linkStatus(exporter.path))
        #expect(info.st_mode & 0o777 == 0o644)
    }

    @Test func aNewStatusReplacesTheFileByRename() throws {
        let exporter = exporter()
        exporter.publish(status(delivered: 1))
        exporter.flushNow()
        let before = try #require(try SystemCall.linkStatus(exporter.path)).st_ino
        exporter.publish(status(delivered: 2))
        exporter.flushNow()
        #expect(try #require(try SystemCall.linkStatus(exporter.path)).st_ino != before)
        #expect(try metrics(exporter).value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2")
    }

    @Test func anUnchangedStatusIsNotRewritten() throws {
        let exporter = exporter()
        exporter.publish(status(delivered: 1))
        exporter.flushNow()
        let before = try #require(try SystemCall.linkStatus(exporter.path)).st_ino
        exporter.publish(status(delivered: 1))
        exporter.flushNow()
        #expect(try #require(try SystemCall.linkStatus(exporter.path)).st_ino == before)
    }

    @Test func stoppingWritesTheFinalStatusWithUpZero() throws {
        let exporter = exporter()
        exporter.publish(status(delivered: 1))
        exporter.flushNow()
        exporter.stop(final: status(delivered: 2))
        let metrics = try metrics(exporter)
        #expect(metrics.value("txrecon_up") == "0")
        #expect(metrics.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2")
        exporter.publish(status(delivered: 3))
        exporter.flushNow()
        let after = try self.metrics(exporter)
        #expect(after.value("txrecon_up") == "0", "a publication after the stop changes nothing")
        #expect(after.value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2")
    }

    @Test func anUnwritableDirectoryIsReportedOnceNamingTheFileAndTheFix() {
        let missing = directory.path + "/missing"
        let exporter = exporter(in: missing)
        for delivered in 1...3 {
            exporter.publish(status(delivered: delivered))
            exporter.flushNow()
        }
        let warnings = log.entries.filter { $0.priority == .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message.contains(missing + "/txrecon.prom") == true)
        #expect(warnings.first?.message.contains("ReadWritePaths=") == true)
    }

    @Test func aWriteThatSucceedsAgainAfterAFailureIsLogged() throws {
        let missing = directory.path + "/later"
        let exporter = exporter(in: missing)
        exporter.publish(status(delivered: 1))
        exporter.flushNow()
        _ = directory.makeDirectory("later")
        exporter.publish(status(delivered: 2))
        exporter.flushNow()
        #expect(try metrics(exporter).value("txrecon_deliveries_total", ["destination": "backend", "outcome": "delivered"]) == "2")
        #expect(log.entries.map(\.priority) == [.warning, .notice])
    }
}
