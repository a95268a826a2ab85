// SnapshotComparisonTests: each row of the comparison's table.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct SnapshotComparisonTests {
    static func item(transaction: Int64?, renewal: Int64?) -> Item {
        var fields = ItemFields()
        fields.transactionDigest = transaction
        fields.renewalDigest = renewal
        return Item(key: ItemKey("3000")!, version: ItemVersion(primary: 1), kind: .transaction, fields: fields)
    }

    static func record(_ destination: String = "backend", transaction: Int64?, renewal: Int64?) -> LedgerRecord {
        LedgerRecord(destination: destination, key: ItemKey("3000")!, version: ItemVersion(primary: 1),
                     confirmedAt: 0, attempt: 1, confirmation: "HTTP 200", kind: .transaction,
                     identity: LedgerRecord.Identity(transactionDigest: transaction, renewalDigest: renewal))
    }

    @Test func whatEveryTakingDestinationConfirmedAgrees() {
        let apple = Self.item(transaction: 1, renewal: 2)
        #expect(SnapshotComparison.compare(apple, with: [Self.record(transaction: 1, renewal: 2),
                                                         Self.record("stream", transaction: 1, renewal: 2)],
                                           destinations: ["backend", "stream"]) == .agrees)
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil),
                                           with: [Self.record(transaction: 1, renewal: 2)],
                                           destinations: ["backend"]) == .agrees,
                "Apple sending no renewal info changes nothing confirmed")
    }

    @Test func aDestinationThatTakesTheTransactionAndConfirmedNothingIsAChange() {
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil), with: [],
                                           destinations: ["backend"])
                == .changed("backend has not confirmed this transaction"))
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil),
                                           with: [Self.record(transaction: 1, renewal: nil)],
                                           destinations: ["backend", "stream"])
                == .changed("stream has not confirmed this transaction"), "one destination behind is enough")
    }

    @Test func rowsOfDestinationsThatDoNotTakeItCountForNothing() {
        // A destination removed since, or one taking only notifications,
        // keeps a row that could never be brought up to date.
        let apple = Self.item(transaction: 1, renewal: 2)
        #expect(SnapshotComparison.compare(apple, with: [Self.record(transaction: 1, renewal: 2),
                                                         Self.record("old", transaction: 9, renewal: nil)],
                                           destinations: ["backend"]) == .agrees)
        #expect(SnapshotComparison.compare(apple, with: [Self.record("old", transaction: 9, renewal: nil)],
                                           destinations: []) == .agrees, "nothing takes it: nothing to deliver")
    }

    @Test func oneDestinationBehindIsAChange() {
        let apple = Self.item(transaction: 1, renewal: 2)
        #expect(SnapshotComparison.compare(apple, with: [Self.record(transaction: 1, renewal: 2),
                                                         Self.record("stream", transaction: 9, renewal: 2)],
                                           destinations: ["backend", "stream"])
                == .changed("the transaction differs from what stream confirmed"))
    }

    @Test func aConfirmationWithoutADigestIsAChange() {
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil),
                                           with: [Self.record(transaction: nil, renewal: nil)],
                                           destinations: ["backend"])
                == .changed("backend confirmed it without a content digest"))
    }

    @Test func renewalInfoThatDiffersOrWasNeverConfirmedIsAChange() {
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: 3),
                                           with: [Self.record(transaction: 1, renewal: 2)], destinations: ["backend"])
                == .changed("the renewal info differs from what backend confirmed"))
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: 3),
                                           with: [Self.record(transaction: 1, renewal: nil)], destinations: ["backend"])
                == .changed("backend confirmed no renewal info"))
    }
}
