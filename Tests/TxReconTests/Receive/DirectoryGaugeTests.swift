// The receiver's count of a spool directory: cached for a second (on given
// instants, no sleeping), fresh after it, nil when it cannot be listed.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct DirectoryGaugeTests {
    let directory = TemporaryDirectory("txrecon-gauge")

    @Test func theCountIsKeptForASecondThenListedAgain() throws {
        let gauge = DirectoryGauge(path: directory.path)
        let start = ContinuousClock.now
        #expect(gauge.count(now: start) == 0)
        _ = directory.write("a", to: "one")
        _ = directory.write("b", to: ".hidden")
        #expect(gauge.count(now: start + .milliseconds(900)) == 0, "within the second: the count as listed")
        #expect(gauge.count(now: start + .milliseconds(1001)) == 1, "after it: listed again, hidden names not counted")
    }

    @Test func aDirectoryThatCannotBeListedHasNoCount() {
        let gauge = DirectoryGauge(path: directory.path + "/missing")
        #expect(gauge.count() == nil)
        #expect(gauge.count() == nil, "a failure is not cached as a count")
    }
}
