// MetricsReport: the content of txrecon.prom, the file node_exporter's
// textfile collector exposes: what the engine's status says, as Prometheus
// metric families with their HELP and TYPE lines.
//
// Nothing in it changes while the daemon is idle: the age of the oldest
// queued item is given as its arrival time (a timestamp gauge; the age is
// `time() - txrecon_oldest_queued_timestamp_seconds` in PromQL), so the file
// needs no rewrite just because time passes.
// Reports: nothing.

/// Renders one status as exposition-format text.
enum MetricsReport {
    /// The outcome label values of `txrecon_deliveries_total`, in the order written.
    static let outcomes = ["delivered", "deferred", "held", "rejected", "superseded", "replayed"]

    /// `startedAt`: when the daemon started (ms since 1970). `running`:
    /// false for the last file written at a clean stop (`txrecon_up 0`).
    static func render(_ daemon: DaemonStatus, startedAt: Int64, version: String, running: Bool) -> String {
        let destinations = daemon.destinations.map { ($0.name, $0.status) }
        var text = PrometheusText()
        text.family("txrecon_up", .gauge,
                    help: "1 while txrecon runs; 0 once it stopped cleanly (a crash leaves 1: "
                        + "the file is not rewritten while idle, so check the unit's state too).")
        text.sample("txrecon_up", running ? "1" : "0")
        text.family("txrecon_start_time_seconds", .gauge, help: "When the txrecon daemon started, in seconds since 1970.")
        text.sample("txrecon_start_time_seconds", PrometheusText.seconds(sinceEpochMilliseconds: startedAt))
        text.family("txrecon_build_info", .gauge, help: "Always 1; the version label is the running txrecon's.")
        text.sample("txrecon_build_info", labels: ["version": version], "1")

        text.family("txrecon_spool_items", .gauge,
                    help: "Items in each spool state directory, by destination; queue includes the attempts in "
                        + "flight. rejected/ is the spool's, shared by every destination.")
        for (name, status) in destinations {
            text.sample("txrecon_spool_items", labels: ["destination": name, "directory": "queue"],
                        PrometheusText.integer(status.queued))
            text.sample("txrecon_spool_items", labels: ["destination": name, "directory": "hold"],
                        PrometheusText.integer(status.held))
        }
        text.sample("txrecon_spool_items", labels: ["directory": "rejected"], PrometheusText.integer(daemon.primary.rejected))
        text.family("txrecon_deliveries_in_flight", .gauge, help: "Delivery attempts in flight, by destination.")
        for (name, status) in destinations {
            text.sample("txrecon_deliveries_in_flight", labels: ["destination": name],
                        PrometheusText.integer(status.delivering))
        }
        if destinations.contains(where: { $0.1.oldestQueuedAt != nil }) {
            text.family("txrecon_oldest_queued_timestamp_seconds", .gauge,
                        help: "When the oldest item in a destination's queue/ arrived, in seconds since 1970; absent "
                            + "while it is empty. Its age: time() - txrecon_oldest_queued_timestamp_seconds.")
        }
        for (name, status) in destinations {
            guard let oldest = status.oldestQueuedAt else { continue }
            text.sample("txrecon_oldest_queued_timestamp_seconds", labels: ["destination": name],
                        PrometheusText.seconds(sinceEpochMilliseconds: oldest))
        }

        text.family("txrecon_deliveries_total", .counter,
                    help: "Outcomes since the daemon started, by destination: delivered (confirmed by the "
                        + "destination), deferred (an attempt failed; retried later), held (refused, moved to hold/), "
                        + "rejected (input moved to rejected/), superseded (replaced by a newer snapshot of the same "
                        + "item), replayed (a delivered snapshot queued again by txrecon replay).")
        for (name, status) in destinations {
            let statistics = status.statistics
            let counts = [status.delivered, statistics.deferred, statistics.held, statistics.rejected,
                          status.superseded, statistics.replayed]
            for (outcome, count) in zip(outcomes, counts) {
                text.sample("txrecon_deliveries_total", labels: ["destination": name, "outcome": outcome],
                            PrometheusText.integer(count))
            }
        }
        // Only once some item of an app was delivered: a family without
        // samples would say nothing.
        if destinations.contains(where: { !$0.1.statistics.deliveredByApp.isEmpty }) {
            text.family("txrecon_app_deliveries_total", .counter,
                        help: "Items delivered since the daemon started, by destination and by the app "
                            + "(apps/NAME.conf, or main) their verified bundleId names; items that name no app "
                            + "(envelopes) are not counted.")
        }
        for (name, status) in destinations {
            for (app, count) in status.statistics.deliveredByApp.sorted(by: { $0.key < $1.key }) {
                text.sample("txrecon_app_deliveries_total", labels: ["destination": name, "app": app],
                            PrometheusText.integer(count))
            }
        }
        func perDestination(_ family: String, help: String, _ count: (DeliveryStatistics) -> Int) {
            text.family(family, .counter, help: help)
            for (name, status) in destinations {
                text.sample(family, labels: ["destination": name], PrometheusText.integer(count(status.statistics)))
            }
        }
        perDestination("txrecon_outbox_entries_written_total",
                       help: "Answers for Apple written into the outbox since the daemon started, by the destination "
                        + "whose confirmation wrote them (consumption information, Finish Transaction).") { $0.answersQueued }
        perDestination("txrecon_consumption_deadline_warnings_total",
                       help: "CONSUMPTION_REQUESTs still unconfirmed by the AnswersFrom= destination "
                        + "ConsumptionDeadlineWarning= after Apple sent them, since the daemon started.") {
            $0.consumptionDeadlineWarnings
        }
        if let ledger = daemon.ledger {
            text.family("txrecon_ledger_up", .gauge,
                        help: "1 while the ledger (LedgerFile=) is in use; 0 while it cannot be (see the journal).")
            text.sample("txrecon_ledger_up", ledger.unavailable == nil ? "1" : "0")
            text.family("txrecon_ledger_lag_seconds", .gauge,
                        help: "How long the oldest confirmation not yet durable in the ledger has waited.")
            text.sample("txrecon_ledger_lag_seconds", PrometheusText.seconds(.milliseconds(ledger.lagMilliseconds)))
            if let rows = ledger.rows, let bytes = ledger.bytes {
                text.family("txrecon_ledger_rows", .gauge,
                            help: "Destination-and-key rows in the ledger, as of its last write.")
                text.sample("txrecon_ledger_rows", PrometheusText.integer(rows))
                text.family("txrecon_ledger_bytes", .gauge, help: "The ledger's size on disk, its write-ahead log included.")
                text.sample("txrecon_ledger_bytes", PrometheusText.integer(bytes))
            }
        }
        let novelties = daemon.primary.statistics.novelties
        if !novelties.isEmpty {
            text.family("txrecon_apple_unknown_names_total", .counter,
                        help: "Verified notifications taken since the daemon started that carry a notificationType, "
                            + "a container or a signed member this release does not know (Apple added it since), by "
                            + "what and name; delivered all the same. Absent until one arrives.")
        }
        for novelty in novelties.keys.sorted(by: { ($0.what, $0.name) < ($1.what, $1.name) }) {
            text.sample("txrecon_apple_unknown_names_total", labels: ["what": novelty.what, "name": novelty.name],
                        PrometheusText.integer(novelties[novelty]!))
        }
        text.family("txrecon_attempt_duration_seconds", .histogram,
                    help: "How long delivery attempts took, by destination, from reading the item to the "
                        + "destination's answer or the transport's failure.")
        for (name, status) in destinations {
            text.histogramSamples("txrecon_attempt_duration_seconds", destination: name,
                                  status.statistics.attemptDurations)
        }
        text.family("txrecon_backend_consecutive_failures", .gauge,
                    help: "Attempts that failed against a destination since it last answered; 0 while it answers.")
        for (name, status) in destinations {
            text.sample("txrecon_backend_consecutive_failures", labels: ["destination": name],
                        PrometheusText.integer(status.statistics.consecutiveBackendFailures))
        }
        return text.text
    }
}
