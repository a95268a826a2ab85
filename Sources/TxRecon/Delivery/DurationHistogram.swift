// DurationHistogram: how long something took, counted into fixed buckets, as
// Prometheus histograms want it (the engine records attempt durations here;
// MetricsReport writes them out). A value kept in EngineStatus, so it must stay
// small: one Int per bucket, the sum and nothing else.
// Reports: nothing.

/// Durations counted into buckets by upper bound (`le`, inclusive), plus
/// their count and sum. Counts only grow.
struct DurationHistogram: Sendable, Equatable {
    /// Upper bounds for delivery attempts, 5 ms to 10 s (Prometheus's usual
    /// latency buckets): a loopback backend answers in milliseconds, the
    /// default Timeout= is 10 s; anything slower lands only in `+Inf`.
    static let attemptBounds: [Duration] = [
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// Ascending upper bounds; the implicit last bucket is `+Inf`.
    let bounds: [Duration]
    /// Observations per bucket, not cumulative; one more than `bounds`
    /// (the last counts those above every bound).
    private(set) var bucketCounts: [Int]
    /// Every observation added up.
    private(set) var sum: Duration = .zero
    private(set) var count = 0

    /// `bounds` must be strictly ascending.
    init(bounds: [Duration] = DurationHistogram.attemptBounds) {
        precondition(zip(bounds, bounds.dropFirst()).allSatisfy { $0 < $1 }, "bounds not ascending: \(bounds)")
        self.bounds = bounds
        bucketCounts = Array(repeating: 0, count: bounds.count + 1)
    }

    /// Counts one observation; a negative one (a clock that went back) counts as zero.
    mutating func record(_ duration: Duration) {
        let value = max(duration, .zero)
        let index = bounds.firstIndex { value <= $0 } ?? bounds.count
        bucketCounts[index] += 1
        sum += value
        count += 1
    }

    /// Observations at or below each bound, then the total for `+Inf`; the
    /// form the exposition format wants.
    var cumulativeCounts: [Int] {
        var running = 0
        return bucketCounts.map { count in
            running += count
            return running
        }
    }
}
