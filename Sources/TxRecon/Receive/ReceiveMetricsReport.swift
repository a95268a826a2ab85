// ReceiveMetricsReport: the content of txrecon-receive.prom, the receiver's
// metrics file beside the daemon's txrecon.prom (each program replaces its
// own file whole, so they cannot share one).
// Reports: nothing.

enum ReceiveMetricsReport {
    static let fileName = "txrecon-receive.prom"

    /// `startedAt`: when the receiver started (ms since 1970). `running`:
    /// false for the last file written at a clean stop.
    static func render(_ statistics: ReceiveStatistics, startedAt: Int64, version: String, running: Bool) -> String {
        var text = PrometheusText()
        text.family("txrecon_receive_up", .gauge,
                    help: "1 while txrecon receive runs; 0 once it stopped cleanly (a crash leaves 1).")
        text.sample("txrecon_receive_up", running ? "1" : "0")
        text.family("txrecon_receive_start_time_seconds", .gauge,
                    help: "When txrecon receive started, in seconds since 1970.")
        text.sample("txrecon_receive_start_time_seconds", PrometheusText.seconds(sinceEpochMilliseconds: startedAt))
        text.family("txrecon_receive_build_info", .gauge, help: "Always 1; the version label is the receiver's.")
        text.sample("txrecon_receive_build_info", labels: ["version": version], "1")

        text.family("txrecon_receive_requests_total", .counter,
                    help: "Requests answered since the receiver started, by HTTP status code; 200 only once "
                        + "the body was durably in new/.")
        var codes = statistics.answers
        codes[200, default: 0] += 0
        for (code, count) in codes.sorted(by: { $0.key < $1.key }) {
            text.sample("txrecon_receive_requests_total", labels: ["code": String(code)], PrometheusText.integer(count))
        }
        text.family("txrecon_receive_spooled_total", .counter,
                    help: "Bodies written durably into new/ (each answered 200).")
        text.sample("txrecon_receive_spooled_total", PrometheusText.integer(statistics.spooled))
        if !statistics.spooledOnAppPath.isEmpty {
            text.family("txrecon_receive_app_path_spooled_total", .counter,
                        help: "Of the bodies spooled, those posted on an app's own notification path "
                            + "(/appstore/notifications/NAME), by app.")
            for (app, count) in statistics.spooledOnAppPath.sorted(by: { $0.key < $1.key }) {
                text.sample("txrecon_receive_app_path_spooled_total", labels: ["app": app],
                            PrometheusText.integer(count))
            }
        }
        text.family("txrecon_receive_set_aside_total", .counter,
                    help: "Spooled bodies of genuine data this configuration refuses; the daemon sets them "
                        + "aside in rejected/.")
        text.sample("txrecon_receive_set_aside_total", PrometheusText.integer(statistics.setAside))
        text.family("txrecon_receive_cut_total", .counter,
                    help: "Requests not whole within RequestTimeout=, whose connection was closed unanswered.")
        text.sample("txrecon_receive_cut_total", PrometheusText.integer(statistics.cut))
        text.family("txrecon_receive_connections_refused_total", .counter,
                    help: "Connections closed unanswered at a connection limit: limit=\"connections\" for "
                        + "MaxConnections=, limit=\"connections_per_address\" for MaxConnectionsPerAddress=.")
        for limit in ConnectionLimits.Limit.allCases {
            text.sample("txrecon_receive_connections_refused_total", labels: ["limit": limit.label],
                        PrometheusText.integer(statistics.refusedConnections[limit] ?? 0))
        }
        text.histogram("txrecon_receive_request_duration_seconds",
                       help: "From a request's head being read to its answer; for a 200 this includes "
                           + "verifying the body and the fsyncs.",
                       statistics.latency)
        return text.text
    }
}
