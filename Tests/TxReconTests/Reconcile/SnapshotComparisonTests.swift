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

    @Test func whatEveryDestinationConfirmedAgrees() {
        let apple = Self.item(transaction: 1, renewal: 2)
        #expect(SnapshotComparison.compare(apple, with: [Self.record(transaction: 1, renewal: 2),
                                                         Self.record("stream", transaction: 1, renewal: 2)]) == .agrees)
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil),
                                           with: [Self.record(transaction: 1, renewal: 2)]) == .agrees,
                "Apple sending no renewal info changes nothing confirmed")
    }

    @Test func aTransactionNoDestinationConfirmedIsAChange() {
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil), with: [])
                == .changed("no destination confirmed this transaction"))
    }

    @Test func oneDestinationBehindIsAChange() {
        let apple = Self.item(transaction: 1, renewal: 2)
        #expect(SnapshotComparison.compare(apple, with: [Self.record(transaction: 1, renewal: 2),
                                                         Self.record("stream", transaction: 9, renewal: 2)])
                == .changed("the transaction differs from what stream confirmed"))
    }

    @Test func aConfirmationWithoutADigestIsAChange() {
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: nil),
                                           with: [Self.record(transaction: nil, renewal: nil)])
                == .changed("backend confirmed it without a content digest"))
    }

    @Test func renewalInfoThatDiffersOrWasNeverConfirmedIsAChange() {
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: 3),
                                           with: [Self.record(transaction: 1, renewal: 2)])
                == .changed("the renewal info differs from what backend confirmed"))
        #expect(SnapshotComparison.compare(Self.item(transaction: 1, renewal: 3),
                                           with: [Self.record(transaction: 1, renewal: nil)])
                == .changed("backend confirmed no renewal info"))
    }
}
