// Duration in whole milliseconds, the unit persisted times and logs use.

extension Duration {
    /// Whole milliseconds, rounded toward zero.
    package var milliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
