// The receiver's count of set-aside bodies on their way to rejected/: a
// reservation per request let through, the body counted while it is in
// new/ and for a while after it left (on given instants, no sleeping), so
// that RejectedQuota= holds while the daemon is stopped or behind.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct SetAsideLedgerTests {
    let directory = TemporaryDirectory("txrecon-set-aside")

    @Test func bodiesInNewCountAgainstTheQuotaBesideRejected() {
        let ledger = SetAsideLedger(inbox: directory.path)
        let start = ContinuousClock.now
        for name in ["one", "two"] {
            #expect(ledger.reserve(quota: 3, rejectedCount: 1, now: start))
            _ = directory.write("{}", to: name)
            ledger.spooled(name)
        }
        #expect(!ledger.reserve(quota: 3, rejectedCount: 1, now: start), "one in rejected/, two on their way")
        #expect(!ledger.reserve(quota: 3, rejectedCount: 1, now: start + .seconds(60)),
                "still in new/ a minute later (the daemon stopped): still counted")
    }

    @Test func aReservationCountsUntilItIsSpooledOrReleased() {
        let ledger = SetAsideLedger(inbox: directory.path)
        let now = ContinuousClock.now
        #expect(ledger.reserve(quota: 2, rejectedCount: 0, now: now))
        #expect(ledger.reserve(quota: 2, rejectedCount: 0, now: now))
        #expect(!ledger.reserve(quota: 2, rejectedCount: 0, now: now), "two requests in flight fill a quota of two")
        ledger.release()
        #expect(ledger.reserve(quota: 2, rejectedCount: 0, now: now), "a body that was not spooled frees its room")
    }

    @Test func aBodyGoneFromNewIsCountedUntilRejectedsCountCanShowIt() {
        let ledger = SetAsideLedger(inbox: directory.path)
        let start = ContinuousClock.now
        #expect(ledger.reserve(quota: 10, rejectedCount: 0, now: start))
        _ = directory.write("{}", to: "moved")
        ledger.spooled("moved")
        #expect(unlink(directory.path + "/moved") == 0, "the daemon moved it to rejected/")
        let seen = start + SetAsideLedger.lookInterval
        #expect(ledger.outstanding(now: seen) == 1, "rejected/'s count may be older than the move")
        #expect(ledger.outstanding(now: seen + SetAsideLedger.settleTime - .seconds(1)) == 1)
        #expect(ledger.outstanding(now: seen + SetAsideLedger.settleTime + .seconds(1)) == 0,
                "by now rejected/'s count has it")
    }
}
