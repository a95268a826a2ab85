// Duration in whole milliseconds, the unit persisted times and logs use, and
// in whole nanoseconds, the unit the engine keeps its deadlines in (eight
// bytes where a Duration takes sixteen, per pending key).

extension Duration {
    /// Whole milliseconds, rounded toward zero. `components` divides a
    /// 128-bit count of attoseconds; asked for once, not once per part (the
    /// engine converts a few times per delivered item).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// Whole nanoseconds, rounded toward zero, saturated at Int64's bounds
    /// (about 292 years either way).
    package var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        let (sum, overflowed) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        return overflowed ? (seconds < 0 ? .min : .max) : sum
    }
}
