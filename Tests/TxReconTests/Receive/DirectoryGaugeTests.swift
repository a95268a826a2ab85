// The receiver's count of a spool directory: cached for a second (on given
// instants, no sleeping); after it the stale count is answered at once while
// the directory is listed again elsewhere (a refresher the test runs by
// hand); nil when it cannot be listed.
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct DirectoryGaugeTests {
    let directory = TemporaryDirectory("txrecon-gauge")

    /// Keeps the listings a gauge hands over until the test runs them.
    final class HeldListings: Sendable {
        private let listings = Mutex<[@Sendable () -> Void]>([])
        var count: Int { listings.withLock { $0.count } }
        var refresher: DirectoryGauge.Refresher { { listing in self.listings.withLock { $0.append(listing) } } }

        func runAll() {
            for listing in listings.withLock({ held in defer { held = [] }; return held }) { listing() }
        }
    }

    /// A gauge of the test's directory whose listings wait in `held`, with
    /// its first count (0, listed by the caller) taken at `start`.
    func heldGauge() -> (gauge: DirectoryGauge, held: HeldListings, start: ContinuousClock.Instant) {
        let held = HeldListings()
        let gauge = DirectoryGauge(path: directory.path, refresh: held.refresher)
        let start = ContinuousClock.now
        #expect(gauge.count(now: start) == 0, "no count yet: the caller lists")
        #expect(held.count == 0)
        return (gauge, held, start)
    }

    @Test func aStaleCountIsAnsweredAtOnceWhileTheDirectoryIsListedElsewhere() throws {
        let (gauge, held, start) = heldGauge()
        _ = directory.write("a", to: "one")
        _ = directory.write("b", to: ".hidden")
        #expect(gauge.count(now: start + .milliseconds(900)) == 0, "within the second: the count as listed")
        #expect(held.count == 0)
        #expect(gauge.count(now: start + .milliseconds(1001)) == 0, "after it: the stale count, not a wait")
        #expect(held.count == 1, "and a listing handed over")
        #expect(gauge.count(now: start + .milliseconds(1500)) == 0)
        #expect(held.count == 1, "one listing at a time")
        held.runAll()
        #expect(gauge.count(now: start + .milliseconds(1600)) == 1, "listed again; hidden names not counted")
        #expect(held.count == 0, "fresh since 1001 ms")
    }

    @Test func aCountNoRequestAskedForInAWhileIsListedBeforeItIsAnswered() {
        let (gauge, held, start) = heldGauge()
        _ = directory.write("a", to: "one")
        #expect(gauge.count(now: start + DirectoryGauge.staleAge) == 1, "the directory may have changed by any amount")
        #expect(held.count == 0, "listed by the caller")
    }

    @Test func aListingAskedForEarlierDoesNotReplaceALaterCount() {
        let (gauge, held, start) = heldGauge()
        #expect(gauge.count(now: start + .milliseconds(1500)) == 0)
        #expect(held.count == 1, "a listing asked for at 1.5 s, not run yet")
        _ = directory.write("a", to: "one")
        #expect(gauge.count(now: start + .seconds(7)) == 1, "too old: listed by the caller at 7 s")
        #expect(gauge.count(now: start + .milliseconds(8100)) == 1)
        #expect(held.count == 1, "the first listing still counts as under way: no second one")
        held.runAll()
        _ = directory.write("b", to: "two")
        // Had the 1.5 s listing replaced the 7 s count, 8.5 s would be too old and listed again (2).
        #expect(gauge.count(now: start + .milliseconds(8500)) == 1)
    }

    @Test func whileOneCallerListsAnOldCountTheOthersGoOnWithIt() throws {
        // The name filter runs inside the listing: it stops the first
        // listing after its initial count until the test lets it go on.
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let blocking = Mutex(false)
        let gauge = DirectoryGauge(path: directory.path, counts: { _ in
            if blocking.withLock({ armed in defer { armed = false }; return armed }) {
                entered.signal()
                release.wait()
            }
            return true
        }, refresh: { _ in Issue.record("an old count is listed by its caller, not handed over") })
        let start = ContinuousClock.now
        #expect(gauge.count(now: start) == 0)
        _ = directory.write("a", to: "one")
        blocking.withLock { $0 = true }
        let first = Mutex<Int??>(nil)
        let firstDone = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            let count = gauge.count(now: start + .seconds(6))
            first.withLock { $0 = .some(count) }
            firstDone.signal()
        }
        try #require(entered.wait(timeout: .now() + 20) == .success, "the first caller lists")
        #expect(gauge.count(now: start + .seconds(6)) == 0, "a second caller goes on with the old count")
        release.signal()
        try #require(firstDone.wait(timeout: .now() + 20) == .success)
        #expect(first.withLock { $0 } == .some(1), "the first caller's own listing")
        #expect(gauge.count(now: start + .milliseconds(6500)) == 1)
    }

    @Test func aDirectoryThatCannotBeListedHasNoCount() {
        let gauge = DirectoryGauge(path: directory.path + "/missing", refresh: { _ in
            Issue.record("with no count to answer, the caller lists")
        })
        #expect(gauge.count() == nil)
        #expect(gauge.count() == nil, "a failure is not cached as a count")
    }

    @Test func aDirectoryThatGoesAwayLosesItsCountAtTheNextListing() throws {
        let held = HeldListings()
        let inner = directory.path + "/inbox"
        #expect(mkdir(inner, 0o755) == 0)
        let gauge = DirectoryGauge(path: inner, refresh: held.refresher)
        let start = ContinuousClock.now
        #expect(gauge.count(now: start) == 0)
        #expect(rmdir(inner) == 0)
        #expect(gauge.count(now: start + .seconds(2)) == 0, "the stale count until the listing ends")
        held.runAll()
        #expect(gauge.count(now: start + .seconds(3)) == nil)
    }

    @Test func theDefaultRefresherListsOnAThreadOfItsOwn() throws {
        let listed = DispatchSemaphore(value: 0)
        let listingThread = Mutex<pthread_t?>(nil)
        let gauge = DirectoryGauge(path: directory.path, refresh: { listing in
            DirectoryGauge.onThreadOfItsOwn {
                listing()
                listingThread.withLock { $0 = pthread_self() }
                listed.signal()
            }
        })
        let start = ContinuousClock.now
        #expect(gauge.count(now: start) == 0)
        _ = directory.write("a", to: "one")
        #expect(gauge.count(now: start + .seconds(2)) == 0)
        try #require(listed.wait(timeout: .now() + 20) == .success, "the listing ran")
        let thread = try #require(listingThread.withLock { $0 })
        #expect(pthread_equal(thread, pthread_self()) == 0, "not on the caller's thread")
        #expect(gauge.count(now: start + .seconds(2)) == 1)
    }
}
