// Duration in whole milliseconds, the unit persisted times and logs use.

extension Duration {
    /// Whole milliseconds, rounded toward zero. `components` divides a
    /// 128-bit count of attoseconds; asked for once, not once per part (the
    /// engine converts a few times per delivered item).
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
