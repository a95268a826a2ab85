// OneshotMetricsFile: how a oneshot (`txrecon reconcile`, `answer`) leaves
// its last run's metrics for node_exporter's textfile collector: NAME in
// [Metrics] TextfileDirectory=, replaced whole, readable by all. A file
// that cannot be written is a warning, never the run's failure.

enum OneshotMetricsFile {
    /// Writes `text` as `name` under `configuration`'s TextfileDirectory=, if set.
    static func write(_ text: String, as name: String, configuration: Configuration, log: any LogSink) {
        guard let directory = configuration.metrics.textfileDirectory else { return }
        let path = directory + "/" + name
        do {
            try SystemCall.replaceFile(path, Array(text.utf8), temporaryName: path + ".tmp", sync: false, mode: 0o644)
        } catch {
            log.write(LogEntry(.warning, "cannot write the metrics file \(path): \(error)"))
        }
    }
}
