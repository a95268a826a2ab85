// ReconcileReportTests: the metrics file of a run through several apps.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct ReconcileReportTests {
    private static func report(finishedAt: Int64, customers: Int, stop: SweepStop? = nil) -> ReconcileReport {
        var report = ReconcileReport(environment: .sandbox, dryRun: false, all: false, startedAt: finishedAt - 1000)
        report.finishedAt = finishedAt
        report.due[.cycle] = customers
        report.customers = customers
        report.subscriptions = customers
        report.agreed = customers
        report.stop = stop
        return report
    }

    @Test func theMetricsOfSeveralAppsReadSuccessOnlyWhenEveryAppSucceededAndSumTheCounts() {
        let completed = Self.report(finishedAt: 1_800_000_060_000, customers: 3)
        let stopped = Self.report(finishedAt: 1_800_000_000_000, customers: 0,
                                  stop: SweepStop(kind: .configuration, reason: "no key"))
        for reports in [[stopped, completed], [completed, stopped]] {
            let metrics = ReconcileReport.metrics(of: reports)
            #expect(metrics.contains("txrecon_reconcile_last_run_success 0\n"), "\(metrics)")
            #expect(metrics.contains("txrecon_reconcile_last_run_timestamp_seconds 1800000060\n"), "\(metrics)")
            #expect(metrics.contains("txrecon_reconcile_last_run_customers{stage=\"checked\"} 3\n"), "\(metrics)")
        }
        var refused = completed
        refused.refused = 1
        #expect(ReconcileReport.metrics(of: [completed, refused]).contains("txrecon_reconcile_last_run_success 0\n"))
        let both = ReconcileReport.metrics(of: [completed, completed])
        #expect(both.contains("txrecon_reconcile_last_run_success 1\n"))
        #expect(both.contains("txrecon_reconcile_last_run_subscriptions{outcome=\"agreed\"} 6\n"), "\(both)")
    }
}
