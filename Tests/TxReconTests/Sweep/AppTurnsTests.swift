// AppTurns: a run's 55 minutes shared among its apps, for the sweep and
// the reconcile alike. Pure: no clock, no files.
import Testing
@testable import TxRecon

@Suite struct AppTurnsTests {
    /// Each app's turn is an equal share of what is left of the run when it
    /// begins: one that ends early leaves its time to the apps after it.
    @Test func eachAppsTurnIsAShareOfWhatIsLeftOfTheRun() {
        let end = Duration.seconds(60)
        #expect(AppTurns.turnEnds(now: .zero, runEnds: end, appsLeft: 3) == .seconds(20))
        #expect(AppTurns.turnEnds(now: .seconds(2), runEnds: end, appsLeft: 2) == .seconds(31))
        #expect(AppTurns.turnEnds(now: .seconds(31), runEnds: end, appsLeft: 1) == end)
        #expect(AppTurns.turnEnds(now: .seconds(10), runEnds: end, appsLeft: 0) == end, "never past the run's end")
        #expect(AppTurns.runningTime < .seconds(3600),
                "within txrecon-sweep.service's and txrecon-reconcile.service's TimeoutStartSec=1h")
    }

    /// The turns of a run through three apps, the first ending early, the
    /// second using all of its turn.
    @Test func theTurnsOfARunEndWithTheRun() {
        var turns = AppTurns(now: .seconds(100), apps: 3)
        #expect(turns.runEnds == .seconds(100) + AppTurns.runningTime)
        #expect(turns.next(now: .seconds(100)) == .seconds(100 + 1100))
        #expect(turns.next(now: .seconds(400)) == .seconds(400 + 1500))
        #expect(turns.next(now: .seconds(1900)) == turns.runEnds)
    }
}
