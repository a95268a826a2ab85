// The small values the delivery engine keeps and consults, each decided
// without the engine: when a CONSUMPTION_REQUEST near its deadline is
// warned about (ConsumptionDeadlines), and which attempt is the outage's
// probe (BackendHealth.probe).
import Testing
@testable import TxRecon

@Suite struct ConsumptionDeadlinesTests {
    static let signed: Int64 = 1_700_000_000_000
    let request: Item = {
        var fields = ItemFields()
        fields.notificationType = "CONSUMPTION_REQUEST"
        return Item(key: ItemKey("n-1")!, version: ItemVersion(primary: 1, secondary: signed), kind: .notification,
                    fields: fields)
    }()

    @Test func aFailingRequestIsWarnedAboutOnceAfterTheWarningTimeAndAgainOnlyAfterADelivery() {
        var deadlines = ConsumptionDeadlines()
        let hour: Int64 = 3_600_000
        #expect(deadlines.warning(for: request, held: false, after: .seconds(7200), destination: "main",
                                  now: Self.signed + hour) == nil)
        let warning = deadlines.warning(for: request, held: false, after: .seconds(7200), destination: "main",
                                        now: Self.signed + 3 * hour)
        #expect(warning?.priority == .warning && warning?.messageID == MessageID.consumptionDeadline)
        #expect(warning?.message.contains("is still not confirmed") == true)
        #expect(warning?.message.contains("bring main back") == true)
        #expect(deadlines.warning(for: request, held: false, after: .seconds(7200), destination: "main",
                                  now: Self.signed + 4 * hour) == nil)
        deadlines.delivered(request.key)
        #expect(deadlines.warning(for: request, held: false, after: .seconds(7200), destination: "main",
                                  now: Self.signed + 5 * hour) != nil)
    }

    @Test func aRequestIsWarnedAboutOnlyBeforeItsDeadlineAndForgottenAfterIt() {
        var deadlines = ConsumptionDeadlines()
        let hour: Int64 = 3_600_000
        #expect(deadlines.warning(for: request, held: true, after: .seconds(7200), destination: "main",
                                  now: Self.signed + 12 * hour) == nil, "too late to bring anything back")
        #expect(deadlines.warning(for: request, held: true, after: .seconds(7200), destination: "main",
                                  now: Self.signed + 11 * hour) != nil)
        #expect(deadlines.warned.count == 1)
        // Never delivered (dropped, say): another request's failure past
        // the first one's deadline lets it go.
        var other = request
        other.key = ItemKey("n-2")!
        other.version = ItemVersion(primary: 1, secondary: Self.signed + 10 * hour)
        #expect(deadlines.warning(for: other, held: false, after: .seconds(7200), destination: "main",
                                  now: Self.signed + 12 * hour) != nil)
        #expect(deadlines.warned.count == 1, "the first request is forgotten")
        #expect(deadlines.warning(for: request, held: true, after: .seconds(7200), destination: "main",
                                  now: Self.signed + 13 * hour) == nil, "and not warned about again")
    }

    @Test func aHeldRequestIsWarnedAboutAtOnce() {
        var deadlines = ConsumptionDeadlines()
        let warning = deadlines.warning(for: request, held: true, after: .seconds(7200), destination: "main",
                                        now: Self.signed + 1)
        #expect(warning?.message.contains("was held (hold/)") == true)
    }
}

@Suite struct BackendProbeTests {
    @Test func onlyTheProbesOwnAttemptEndsTheProbe() {
        var health = BackendHealth()
        health.probe = ItemKey("p")!
        let otherWasProbe = health.probeEnded(ItemKey("other")!)
        #expect(!otherWasProbe && health.probe == ItemKey("p")!)
        let probeWasProbe = health.probeEnded(ItemKey("p")!)
        #expect(probeWasProbe && health.probe == nil)
    }
}
