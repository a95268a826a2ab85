// PrometheusText: the Prometheus text exposition format (version 0.0.4), the
// format node_exporter's textfile collector reads: per metric family a
// `# HELP` and a `# TYPE` line, then its samples, one per line. Only what
// txrecon writes: no timestamps (the textfile collector refuses them), no
// comments other than HELP and TYPE.
//
// Numbers are written as exact decimals (durations and times from their
// integer parts), never through Double, so 0.005 stays "0.005".
// Reports: a precondition failure on an invalid metric or label name, which
// only a programming error can produce (the names are constants).

/// Text in the exposition format, built one family at a time.
struct PrometheusText {
    enum MetricType: String {
        case counter, gauge, histogram
    }

    /// The text so far; ends with a newline once anything was written.
    private(set) var text = ""

    /// Starts a family: its HELP and TYPE lines. Samples follow.
    mutating func family(_ name: String, _ type: MetricType, help: String) {
        precondition(Self.isValidName(name), "invalid metric name \(name)")
        text += "# HELP \(name) \(Self.escapedHelp(help))\n"
        text += "# TYPE \(name) \(type.rawValue)\n"
    }

    /// One sample line: `name{label="value",…} value`. `value` must already
    /// be a number in the format's syntax (see `integer`, `seconds`).
    mutating func sample(_ name: String, labels: KeyValuePairs<String, String> = [:], _ value: String) {
        precondition(Self.isValidName(name), "invalid metric name \(name)")
        text += name
        if !labels.isEmpty {
            text += "{"
            text += labels.map { label, value in
                precondition(Self.isValidName(label) && !label.contains(":"), "invalid label name \(label)")
                return "\(label)=\"\(Self.escapedLabelValue(value))\""
            }.joined(separator: ",")
            text += "}"
        }
        text += " \(value)\n"
    }

    /// A whole histogram family: cumulative `_bucket` lines by `le` ending
    /// with `+Inf`, then `_sum` (seconds) and `_count`.
    mutating func histogram(_ name: String, help: String, _ histogram: DurationHistogram) {
        family(name, .histogram, help: help)
        let cumulative = histogram.cumulativeCounts
        for (bound, count) in zip(histogram.bounds, cumulative) {
            sample(name + "_bucket", labels: ["le": Self.seconds(bound)], Self.integer(count))
        }
        sample(name + "_bucket", labels: ["le": "+Inf"], Self.integer(histogram.count))
        sample(name + "_sum", Self.seconds(histogram.sum))
        sample(name + "_count", Self.integer(histogram.count))
    }

    /// The samples of one destination's histogram (its family started
    /// with `family(_:.histogram:)`): cumulative `_bucket` lines by `le`
    /// ending with `+Inf`, then `_sum` (seconds) and `_count`.
    mutating func histogramSamples(_ name: String, destination: String, _ histogram: DurationHistogram) {
        let cumulative = histogram.cumulativeCounts
        for (bound, count) in zip(histogram.bounds, cumulative) {
            sample(name + "_bucket", labels: ["destination": destination, "le": Self.seconds(bound)], Self.integer(count))
        }
        sample(name + "_bucket", labels: ["destination": destination, "le": "+Inf"], Self.integer(histogram.count))
        sample(name + "_sum", labels: ["destination": destination], Self.seconds(histogram.sum))
        sample(name + "_count", labels: ["destination": destination], Self.integer(histogram.count))
    }

    // MARK: Values

    /// A oneshot's two gauges of its last run: `txrecon_PROGRAM_last_run_timestamp_seconds`
    /// (when it ended) and `txrecon_PROGRAM_last_run_success` (1 when
    /// `succeeded`, whose meaning `success` words for the help line).
    mutating func lastRun(of program: String, finishedAt milliseconds: Int64, succeeded: Bool, success: String) {
        let prefix = "txrecon_\(program)_last_run_"
        family(prefix + "timestamp_seconds", .gauge, help: "When the last txrecon \(program) run ended (UNIX seconds).")
        sample(prefix + "timestamp_seconds", PrometheusText.integer(milliseconds / 1000))
        family(prefix + "success", .gauge, help: "1 when the last txrecon \(program) run \(success).")
        sample(prefix + "success", succeeded ? "1" : "0")
    }

    static func integer(_ value: some BinaryInteger) -> String { "\(value)" }

    /// A duration in seconds as an exact decimal without trailing zeros:
    /// `0.005`, `2.5`, `10`. Resolution 1 ns.
    static func seconds(_ duration: Duration) -> String {
        if duration < .zero { return "-" + seconds(.zero - duration) }
        let (whole, attoseconds) = duration.components
        let nanoseconds = attoseconds / 1_000_000_000
        guard nanoseconds > 0 else { return "\(whole)" }
        var fraction = String(nanoseconds)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(whole).\(fraction)"
    }

    /// A wall-clock time (ms since 1970) in seconds since 1970.
    static func seconds(sinceEpochMilliseconds milliseconds: Int64) -> String {
        seconds(.milliseconds(milliseconds))
    }

    // MARK: Escaping

    /// HELP text: backslash and line feed escaped, as the format requires.
    static func escapedHelp(_ help: String) -> String {
        escaped(help, quote: false)
    }

    /// A label value: backslash, double quote and line feed escaped.
    static func escapedLabelValue(_ value: String) -> String {
        escaped(value, quote: true)
    }

    /// By Unicode scalar, not Character: "\r\n" is one Character, and its
    /// line feed must be escaped all the same.
    private static func escaped(_ text: String, quote: Bool) -> String {
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped.append(contentsOf: "\\\\".unicodeScalars)
            case "\n": escaped.append(contentsOf: "\\n".unicodeScalars)
            case "\"" where quote: escaped.append(contentsOf: "\\\"".unicodeScalars)
            default: escaped.append(scalar)
            }
        }
        return String(escaped)
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`, the metric name syntax.
    private static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: ":"): true
            default: false
            }
        }
    }
}
