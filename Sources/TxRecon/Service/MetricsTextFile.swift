// MetricsTextFile: how txrecon leaves metrics for node_exporter's textfile
// collector, which runs as another user: a file replaced whole through a
// temporary name beside it and a rename (a scrape sees the old text or the
// new), mode 0644 whatever the umask (the units' UMask=0007 would leave
// 0640, which the collector cannot read: `node_textfile_scrape_error 1`
// and the series absent, so no alert on them fires). The daemon's and the
// receiver's files (MetricsExporter) and a oneshot's last run
// (`txrecon reconcile`, `answer`: `write`) alike.
import Glibc

enum MetricsTextFile {
    /// Replaces `path` with `text` through `temporaryPath`, readable by all.
    static func replace(_ path: String, with text: String, through temporaryPath: String) throws(SpoolError) {
        try SystemCall.unlinkIfPresent(temporaryPath)
        try SystemCall.writeNewFile(temporaryPath, Array(text.utf8), mode: 0o644, sync: false)
        do throws(SpoolError) {
            guard chmod(temporaryPath, 0o644) == 0 else { throw SpoolError("chmod", temporaryPath) }
            try SystemCall.rename(temporaryPath, path)
        } catch {
            unlink(temporaryPath)
            throw error
        }
    }

    /// A oneshot's last run: writes `text` as `name` under `configuration`'s
    /// TextfileDirectory=, if set. A file that cannot be written is a
    /// warning, never the run's failure.
    static func write(_ text: String, as name: String, configuration: Configuration, log: any LogSink) {
        guard let directory = configuration.metrics.textfileDirectory else { return }
        let path = directory + "/" + name
        do {
            try replace(path, with: text, through: path + ".tmp")
        } catch {
            log.write(LogEntry(.warning, "cannot write the metrics file \(path): \(error)"))
        }
    }
}
