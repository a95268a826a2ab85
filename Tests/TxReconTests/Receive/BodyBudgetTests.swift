// The bytes of large request bodies the receiver holds at once: taken as a
// body arrives, refused past the limit or one address's share of it, given
// back when its request ends. Through libmicrohttpd: ReceiverLimitsTests.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct BodyBudgetTests {
    @Test func bytesAreTakenUpToTheLimitAndGivenBack() {
        let budget = BodyBudget(limit: 1000)
        #expect(budget.take(600, from: "192.0.2.1"))
        #expect(!budget.take(401, from: "192.0.2.1"), "600 + 401 is past 1000")
        #expect(budget.inUse == 600, "a refused take takes nothing")
        #expect(budget.take(400, from: "192.0.2.1"))
        budget.give(600, from: "192.0.2.1")
        #expect(budget.take(600, from: "192.0.2.1"))
        #expect(budget.inUse == 1000)
    }

    @Test func oneAddressHoldsNoMoreThanItsShareOfTheConnections() {
        // 8 connections, 2 from one address: a quarter of the budget each.
        let budget = BodyBudget(limit: 1000, connections: 8, connectionsPerAddress: 2)
        #expect(budget.take(200, from: "192.0.2.1"))
        #expect(!budget.take(100, from: "192.0.2.1"), "200 + 100 is past its 250")
        #expect(budget.take(250, from: "192.0.2.2"), "another address has a share of its own")
        budget.give(200, from: "192.0.2.1")
        #expect(budget.take(250, from: "192.0.2.1"), "given back, the share is free again")
        #expect(budget.inUse == 500)
    }

    @Test func theBudgetHoldsTwoLargestBodiesAndNeverLessThan64MiB() {
        #expect(BodyBudget.limit(forMaximumBodySize: 1 << 20) == 64 << 20)
        #expect(BodyBudget.limit(forMaximumBodySize: 100 << 20) == 200 << 20)
        #expect(BodyBudget.limit(forMaximumBodySize: Int.max) == Int.max, "no overflow trap")
    }
}
