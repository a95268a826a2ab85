import Testing
@testable import TxRecon

@Suite struct DurationHistogramTests {
    @Test func aDurationEqualToABoundCountsInThatBucket() {
        var histogram = DurationHistogram()
        histogram.record(.milliseconds(5))
        #expect(histogram.bucketCounts.first == 1)
    }

    @Test func aDurationAboveEveryBoundCountsOnlyInTheLastBucket() {
        var histogram = DurationHistogram()
        histogram.record(.seconds(11))
        #expect(histogram.cumulativeCounts.dropLast().allSatisfy { $0 == 0 })
        #expect(histogram.cumulativeCounts.last == 1)
    }

    @Test func aNegativeDurationCountsAsZero() {
        var histogram = DurationHistogram()
        histogram.record(.milliseconds(-3))
        #expect(histogram.bucketCounts.first == 1)
        #expect(histogram.sum == .zero)
    }

    @Test func cumulativeCountsAddUpTheBucketsAndEndWithTheTotal() {
        var histogram = DurationHistogram(bounds: [.milliseconds(10), .milliseconds(100)])
        for duration: Duration in [.milliseconds(1), .milliseconds(50), .milliseconds(60), .seconds(2)] {
            histogram.record(duration)
        }
        #expect(histogram.bucketCounts == [1, 2, 1])
        #expect(histogram.cumulativeCounts == [1, 3, 4])
        #expect(histogram.count == 4)
        #expect(histogram.sum == .milliseconds(2111))
    }

    @Test func attemptBucketsRunFromFiveMillisecondsToTenSeconds() {
        #expect(DurationHistogram.attemptBounds.first == .milliseconds(5))
        #expect(DurationHistogram.attemptBounds.last == .seconds(10))
    }
}
