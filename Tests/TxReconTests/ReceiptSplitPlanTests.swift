// Which parts a receipt upload becomes: the receipt item and its purchases,
// less what no destination takes and what every destination that takes it
// confirmed (the ConfirmedVersions seam, answered here in memory and from a
// real done/).
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptSplitPlanTests {
    /// Confirmations answered from a table: destination → key → version.
    struct Confirmed: ConfirmedVersions {
        var versions: [String: [String: ItemVersion]] = [:]
        func confirmedVersion(of key: ItemKey, by destination: String) -> ItemVersion? {
            versions[destination]?[key.rawValue]
        }
    }

    static let purchases = [TestReceipt.Purchase(transactionId: "1000000000000001"),
                            TestReceipt.Purchase(transactionId: "1000000000000002", purchaseDate: "2025-05-02T10:00:00Z")]
    static let receipt = TestReceipt.sign(TestReceipt.payload(purchases: purchases))
    static let name = ReceiptStore.name(of: receipt)

    static func split() throws -> ReceiptSplit {
        guard case let .receipt(split) = try InputDecoder().decode(TestReceipt.upload(receipt)) else {
            throw Rejection("test", "not a receipt upload")
        }
        return split
    }

    static func match(kinds: [ItemKind]? = nil) -> DestinationMatch {
        var match = DestinationMatch()
        match.kinds = kinds
        return match
    }

    static func version(_ date: String) -> ItemVersion { ItemVersion(primary: ReceiptDate.milliseconds(date)!) }

    /// The upload of a receipt created at `created` holding one
    /// subscription, bought 2025-05-01, that expires at `expires`.
    static func subscription(expiring expires: String, created: String) throws -> ReceiptSplit {
        var purchase = TestReceipt.Purchase(transactionId: "1000000000000003")
        purchase.expiresDate = expires
        let receipt = TestReceipt.sign(TestReceipt.payload(creationDate: created, purchases: [purchase]))
        guard case let .receipt(split) = try InputDecoder().decode(TestReceipt.upload(receipt)) else {
            throw Rejection("test", "not a receipt upload")
        }
        return split
    }

    /// A subscription's receipt, then the next one after Apple extended
    /// its renewal date.
    static func earlierAndExtended() throws -> (earlier: ReceiptSplit, extended: ReceiptSplit) {
        (try subscription(expiring: "2025-06-01T10:00:00Z", created: "2025-05-10T00:00:00Z"),
         try subscription(expiring: "2025-06-15T10:00:00Z", created: "2025-05-20T00:00:00Z"))
    }

    /// The purchases `split`'s plan writes, given each destination's
    /// confirmed version of the subscription (every destination takes all).
    static func writtenPurchases(_ split: ReceiptSplit, confirmed: [String: ItemVersion]) -> [String] {
        let destinations = confirmed.keys.sorted().map { (name: $0, match: match()) }
        let table = Confirmed(versions: confirmed.mapValues { ["1000000000000003": $0] })
        let plan = ReceiptSplitPlan(split, receiptSha256: ReceiptStore.name(of: split.der), destinations: destinations,
                                    confirmations: table)
        return plan.items.filter { $0.kind == .receipt }.map(\.key.rawValue)
    }

    func plan(_ destinations: [(name: String, match: DestinationMatch)] = [("backend", match())],
              _ confirmed: Confirmed = Confirmed()) throws -> ReceiptSplitPlan {
        ReceiptSplitPlan(try Self.split(), receiptSha256: Self.name, destinations: destinations, confirmations: confirmed)
    }

    @Test func aFreshUploadIsItsReceiptFirstThenEachPurchaseNamingIt() throws {
        let plan = try plan()
        #expect(plan.items.map(\.key.rawValue) == ["receipt-" + Self.name, "1000000000000001", "1000000000000002"])
        #expect(plan.items.map(\.kind) == [.receiptFile, .receipt, .receipt])
        #expect(plan.items.allSatisfy { $0.fields.receiptSha256 == Self.name })
        #expect(plan.confirmed == 0 && plan.untaken == 0 && !plan.takenByNone)
    }

    @Test func whatEveryDestinationConfirmedAtItsVersionIsNotWrittenAgain() throws {
        let confirmed = Confirmed(versions: ["backend": [
            "receipt-" + Self.name: Self.version(TestReceipt.creationDate),
            "1000000000000001": Self.version("2025-05-01T10:00:00Z"),
            "1000000000000002": Self.version("2025-04-01T10:00:00Z"),
        ]])
        let plan = try plan([("backend", Self.match())], confirmed)
        #expect(plan.items.map(\.key.rawValue) == ["1000000000000002"], "confirmed at an older version: written")
        #expect(plan.confirmed == 2)
    }

    @Test func aPurchaseOneDestinationHasNotConfirmedIsWritten() throws {
        let purchase = ["1000000000000001": Self.version("2025-05-01T10:00:00Z")]
        let confirmed = Confirmed(versions: ["backend": purchase, "archive": [:]])
        let plan = try plan([("backend", Self.match()), ("archive", Self.match())], confirmed)
        #expect(plan.items.map(\.key.rawValue).contains("1000000000000001"))
        let onlyBackendTakesIt = try self.plan([("backend", Self.match()), ("archive", Self.match(kinds: [.receiptFile]))],
                                               confirmed)
        #expect(!onlyBackendTakesIt.items.map(\.key.rawValue).contains("1000000000000001"),
                "a destination that does not take it has nothing to confirm")
    }

    @Test func anExtendedRenewalDateIsWrittenAndAnOlderReceiptAfterTheExtensionIsNot() throws {
        let (earlier, extended) = try Self.earlierAndExtended()
        let earlierVersion = try #require(earlier.purchases.first?.version)
        let extendedVersion = try #require(extended.purchases.first?.version)
        #expect(Self.writtenPurchases(extended, confirmed: ["backend": earlierVersion]) == ["1000000000000003"],
                "the same purchase, a later expiry: the backend must learn it")
        #expect(Self.writtenPurchases(extended, confirmed: ["backend": extendedVersion]).isEmpty, "uploaded again")
        #expect(Self.writtenPurchases(earlier, confirmed: ["backend": extendedVersion]).isEmpty,
                "an older receipt uploaded after the extension was confirmed")
        #expect(Self.writtenPurchases(extended, confirmed: ["backend": extendedVersion, "archive": earlierVersion])
                == ["1000000000000003"], "one destination still has the earlier expiry")
    }

    @Test func aSubscriptionAnEarlierReleaseConfirmedIsNotWrittenAgainButItsExtensionIs() throws {
        let (earlier, extended) = try Self.earlierAndExtended()
        let entry = try #require(earlier.purchases.first)
        let directory = TemporaryDirectory("txrecon-ledger")
        let ledger = try SQLiteLedger(path: directory.path + "/ledger.sqlite3")
        // As a release before the expiry was part of the version recorded it.
        let recorded = ItemVersion(primary: entry.version.primary)
        try ledger.record([LedgerRecord(destination: "backend", key: entry.key, version: recorded,
                                        confirmedAt: 1_746_900_000_000, attempt: 1, confirmation: "HTTP 200",
                                        kind: .receipt, identity: LedgerRecord.Identity(entry.fields))])
        let confirmed = try #require(try ledger.confirmedVersion(at: "backend", of: entry.key))
        #expect(Self.writtenPurchases(earlier, confirmed: ["backend": confirmed]).isEmpty,
                "after the upgrade, the same entry is what was confirmed: not delivered again under a new key")
        #expect(Self.writtenPurchases(extended, confirmed: ["backend": confirmed]) == ["1000000000000003"])
        #expect(try ledger.records(of: entry.key).map(\.idempotencyKey) == ["1000000000000003:\(recorded)"],
                "the row still says what was sent")
    }

    @Test func itemsNoDestinationTakesAreNotWrittenAndAnUploadNoneTakesIsRefusedWhole() throws {
        let receiptsOnly = try plan([("backend", Self.match(kinds: [.receiptFile]))])
        #expect(receiptsOnly.items.map(\.kind) == [.receiptFile])
        #expect(receiptsOnly.untaken == 2)
        let none = try plan([("backend", Self.match(kinds: [.transaction]))])
        #expect(none.items.isEmpty && none.takenByNone)
    }

    @Test func doneAnswersWithTheVersionItHoldsVerifiedAndNothingElse() throws {
        let directory = TemporaryDirectory("txrecon-confirmed")
        let layout = SpoolLayout(root: directory.path)
        try layout.createMissingDirectories()
        let library = ReceiptLibrary(store: ReceiptStore(layout: layout))
        try library.store.store(Self.receipt, name: Self.name)
        let spool = Spool(layout: layout)
        try SystemCall.writeNewFile(layout.done + "/1000000000000001",
                                    ReceiptSplit.part(receiptSha256: Self.name, entry: "1000000000000001", context: nil),
                                    sync: false)
        try SystemCall.writeNewFile(layout.done + "/1000000000000002",
                                    ReceiptSplit.part(receiptSha256: Self.name, entry: "1000000000000001", context: nil),
                                    sync: false)
        let policy = try ReceiptUploadTests.policy()
        let done = DoneConfirmations(spools: ["backend": spool], reader: StoredItemReader(
            acceptEnvelopes: false, policy: policy, receipts: library), maximumSize: 1 << 20)
        #expect(done.confirmedVersion(of: ItemKey("1000000000000001")!, by: "backend") == Self.version("2025-05-01T10:00:00Z"))
        #expect(done.confirmedVersion(of: ItemKey("1000000000000002")!, by: "backend") == nil,
                "done/KEY holding another key's snapshot confirms nothing")
        #expect(done.confirmedVersion(of: ItemKey("1000000000000003")!, by: "backend") == nil)
        #expect(done.confirmedVersion(of: ItemKey("1000000000000001")!, by: "elsewhere") == nil)
        let otherApp = DoneConfirmations(spools: ["backend": spool], reader: StoredItemReader(
            acceptEnvelopes: false, policy: try ReceiptUploadTests.policy(bundleID: "com.other"), receipts: library),
            maximumSize: 1 << 20)
        #expect(otherApp.confirmedVersion(of: ItemKey("1000000000000001")!, by: "backend") == nil,
                "what no longer verifies confirms nothing")
    }
}
