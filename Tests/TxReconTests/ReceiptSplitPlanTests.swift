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
