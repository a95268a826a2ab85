// How `txrecon lookup` asked of each app in turn ends: an app that could
// not be asked outranks another's "Apple does not know the order".
import Testing
@testable import TxRecon

@Suite struct LookupExitStatusTests {
    @Test func anAppThatCouldNotBeAskedOutranksAnotherAppsUnknownOrder() {
        #expect(LookupRun.combined([75, 1]) == 75, "the app that failed may be the order's: run it again")
        #expect(LookupRun.combined([1, 75]) == 75)
        #expect(LookupRun.combined([1, 1]) == 1, "no app knows it")
        #expect(LookupRun.combined([78, 75]) == 78)
        #expect(LookupRun.combined([1, 0]) == 0, "one app answered")
        #expect(AppRuns.mostSevere([75, 1]) == 1, "the runs of every app (sweep, reconcile) rank a failure first")
    }
}
