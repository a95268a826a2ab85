// Format 6, the StoreKit 1 receipt upload, decoded and verified as intake
// does: receipts signed by the test PKI shaped like Apple's receipt signers,
// genuine and forged every way one can be; and the parts intake splits an
// upload into, read back through the receipt they name in receipts/.
import FoundationEssentials
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct ReceiptUploadTests {
    static func policy(bundleID: String = "com.example.app",
                       environments: [SignedDataEnvironment] = [.production, .sandbox]) throws -> SignedDataPolicy {
        SignedDataPolicy(roots: try VerificationFixtures.testRoots(), bundleID: bundleID, appAppleID: nil,
                         environments: environments, receiptRoots: try RootCertificate.read(TestReceipt.path("root")))
    }

    static func verifier(environments: [SignedDataEnvironment] = [.production, .sandbox]) throws -> SignedDataVerifier {
        SignedDataVerifier(policy: try policy(environments: environments))
    }

    /// Decodes and verifies as intake does; parts through `receipts`, or
    /// refused without them as the receiver refuses them.
    static func examine(_ bytes: [UInt8], _ verifier: SignedDataVerifier? = nil,
                        receipts: ReceiptLibrary? = nil) throws(Rejection) -> VerifiedInput {
        guard let receipts else {
            switch try InputDecoder().decode(bytes, verifyingWith: verifier) {
            case let .item(item): return .item(item)
            case let .page(transactions): return .page(signedTransactions: transactions)
            case let .receipt(split): return .receipt(split)
            case .receiptPart: throw Rejection("test", "a part came through unread")
            }
        }
        do throws(ItemReadFailure) {
            return try InputDecoder().decode(bytes, verifyingWith: verifier, receipts: receipts)
        } catch {
            guard case let .rejected(rejection) = error else { throw Rejection("test", "unreadable: \(error)") }
            throw rejection
        }
    }

    static func rejection(_ bytes: [UInt8], _ verifier: SignedDataVerifier?, receipts: ReceiptLibrary? = nil) -> Rejection? {
        do {
            _ = try examine(bytes, verifier, receipts: receipts)
            return nil
        } catch {
            return error
        }
    }

    /// The upload taken apart, or a recorded issue.
    static func split(_ bytes: [UInt8], _ verifier: SignedDataVerifier? = nil) throws -> ReceiptSplit {
        guard case let .receipt(split) = try examine(bytes, verifier) else {
            Issue.record("not taken apart as a receipt upload")
            throw Rejection("test", "not a receipt")
        }
        return split
    }

    static let two = [TestReceipt.Purchase(transactionId: "1000000000000001"),
                      TestReceipt.Purchase(transactionId: "1000000000000002", purchaseDate: "2025-05-02T10:00:00Z")]
    static let context: [(String, JSONValue)] = [("orderID", .string("A-17")), ("applicationUsername", .string("order-17"))]

    /// A spool's receipts/ of its own, holding `der` (when given).
    final class Store {
        let directory = TemporaryDirectory("txrecon-receipts")
        var layout: SpoolLayout { SpoolLayout(root: directory.path) }
        let library: ReceiptLibrary

        init(holding der: [UInt8]? = nil) throws {
            let layout = SpoolLayout(root: directory.path)
            try layout.createMissingDirectories()
            library = ReceiptLibrary(store: ReceiptStore(layout: layout))
            if let der { try library.store.store(der, name: ReceiptStore.name(of: der)) }
        }
    }

    @Test func anUploadIsTakenApartIntoItsPurchasesAndItsContextWholeBeforeAnythingIsWritten() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let split = try Self.split(TestReceipt.upload(receipt, context: Self.context), try Self.verifier())
        #expect(split.der == receipt)
        #expect(split.context == .object(Self.context))
        #expect(split.purchases.map(\.key.rawValue) == ["1000000000000001", "1000000000000002"])
        #expect(split.purchases.allSatisfy { $0.kind == .receipt && $0.signedStrings.isEmpty })
        #expect(split.purchases.map(\.version.primary) == [ReceiptDate.milliseconds("2025-05-01T10:00:00Z")!,
                                                           ReceiptDate.milliseconds("2025-05-02T10:00:00Z")!])
    }

    @Test func anUploadOfOnePurchaseAndABareBase64FileAreTakenApartToo() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[0]]))
        for bytes in [TestReceipt.upload(receipt), Array(Data(receipt).base64EncodedString(options: .lineLength76Characters).utf8)] {
            let split = try Self.split(bytes, try Self.verifier())
            #expect(split.der == receipt, "the receipt is stored, not its text as uploaded")
            #expect(split.purchases.map(\.key.rawValue) == ["1000000000000001"])
        }
    }

    /// A receipt spoiled on its way (form decoding's '+' -> ' ', the
    /// URL-safe alphabet, a file cut short) is a malformed receipt, not
    /// "not JSON", which sends its producer to the wrong place.
    @Test func aBareBase64ReceiptSpoiledOnItsWayIsAMalformedReceipt() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[0]]))
        let text = Data(receipt).base64EncodedString()
        #expect(text.hasPrefix("MII") && text.contains("+"), "the test receipt's base64 has a '+' to spoil")
        for spoiled in [text.replacingOccurrences(of: "+", with: " "),
                        text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"),
                        String(text.prefix(text.count / 2 + 1))] {
            let verifier = try Self.verifier()
            do {
                _ = try Self.examine(Array(spoiled.utf8), verifier)
                Issue.record("taken: \(spoiled.prefix(40))")
            } catch {
                #expect(error.code == "malformed-receipt", "\(error)")
            }
        }
    }

    /// The entry a producer names is quoted only when it could be a
    /// transaction id: the reason goes to the journal and rejected/.
    @Test func anUploadNamingALongEntryIsRefusedWithoutQuotingIt() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[0]]))
        let long = String(repeating: "9", count: 100_000)
        let upload = JSONValue.object([("receipt", .string(Data(receipt).base64EncodedString())),
                                       ("txreconReceiptEntry", .string(long))]).serialized
        let verifier = try Self.verifier()
        do {
            _ = try Self.examine(upload, verifier)
            Issue.record("taken")
        } catch {
            #expect(error.code == "invalid-field")
            #expect(error.detail.utf8.count < 1024, "\(error.detail.utf8.count) bytes")
        }
    }

    @Test func aPartNamesItsReceiptAndPurchaseInAHundredBytesWhateverTheReceiptsSize() throws {
        let large = TestReceipt.sign(TestReceipt.payload(purchases: (0..<200).map {
            TestReceipt.Purchase(transactionId: String(3_000_000_000_000_000 + $0))
        }))
        let name = ReceiptStore.name(of: large)
        let part = ReceiptSplit.part(receiptSha256: name, entry: "3000000000000007", context: nil)
        #expect(part.count < 128, "\(part.count) bytes")
        #expect(try JSONValue.parse(part) == .object([("receiptSha256", .string(name)),
                                                      ("txreconReceiptEntry", .string("3000000000000007"))]))
        let withContext = ReceiptSplit.part(receiptSha256: name, entry: nil, context: .object(Self.context))
        #expect(try JSONValue.parse(withContext) == .object([("receiptSha256", .string(name))] + Self.context))
    }

    @Test func aPartIsThePurchaseItNamesWithItsReceiptsNameAndNoReceiptInItsBody() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let name = ReceiptStore.name(of: receipt)
        let part = ReceiptSplit.part(receiptSha256: name, entry: "1000000000000002", context: .object(Self.context))
        guard case let .item(item) = try Self.examine(part, try Self.verifier(), receipts: store.library) else {
            Issue.record("a part is not one item")
            return
        }
        #expect(item.key.rawValue == "1000000000000002" && item.kind == .receipt)
        #expect(item.version == ItemVersion(primary: ReceiptDate.milliseconds("2025-05-02T10:00:00Z")!))
        #expect(item.fields.environment == "Sandbox" && item.fields.bundleId == "com.example.app")
        #expect(item.fields.productId == "com.example.app.premium")
        #expect(item.context == .object(Self.context))
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["kind"] == .string("appstore.receipt"))
        #expect(body["receiptSha256"] == .string(name))
        #expect(body["receipt"] == nil, "the receipt is delivered once, as an item of its own")
        #expect(body["transactionId"] == .string("1000000000000002"))
        #expect(body["purchaseDate"]?.int64Value == item.version.primary)
        #expect(body["unverified"] == .object(Self.context))
        #expect(body["txreconReceiptEntry"] == nil)
        #expect(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0).count < 1024)
    }

    @Test func theReceiptItemCarriesTheReceiptOnceUnderItsOwnKeyAndKind() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let name = ReceiptStore.name(of: receipt)
        let part = ReceiptSplit.part(receiptSha256: name, entry: nil, context: .object(Self.context))
        guard case let .item(item) = try Self.examine(part, try Self.verifier(), receipts: store.library) else {
            Issue.record("the receipt's part is not one item")
            return
        }
        #expect(item.key.rawValue == "receipt-" + name)
        #expect(item.kind == .receiptFile)
        #expect(item.version == ItemVersion(primary: ReceiptDate.milliseconds(TestReceipt.creationDate)!))
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["kind"] == .string("appstore.receipt-file"))
        #expect(body["receipt"] == .string(Data(receipt).base64EncodedString()))
        #expect(body["receiptSha256"] == .string(name))
        #expect(body["bundleId"] == .string("com.example.app") && body["environment"] == .string("Sandbox"))
        #expect(body["unverified"] == .object(Self.context))
        #expect(body["transactionId"] == nil)
    }

    @Test func aPartNamingAReceiptThatIsNotStoredIsRefusedSayingSo() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let empty = try Store()
        let part = ReceiptSplit.part(receiptSha256: ReceiptStore.name(of: receipt), entry: "1000000000000001", context: nil)
        let rejection = Self.rejection(part, try Self.verifier(), receipts: empty.library)
        #expect(rejection?.code == "receipt-not-stored")
        #expect(rejection?.detail.contains("receipts/ does not hold") == true, "\(String(describing: rejection))")
        #expect(Self.rejection(part, try Self.verifier())?.code == "receipt-not-stored",
                "where receipts/ is not read (the receiver), a part is refused too")
    }

    @Test func aReceiptThatCannotBeReadForAnyReasonButItsAbsenceLeavesItsPartWhereItIs() throws {
        // A directory where the receipt should be: read(2) fails (EISDIR),
        // as EIO, EMFILE or ENOMEM would. Not the part's fault: intake leaves
        // it in new/ and an attempt tries again, neither rejects nor holds it.
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store()
        let name = ReceiptStore.name(of: receipt)
        try SystemCall.makeDirectory(store.layout.receipts + "/" + name, mode: 0o750)
        let part = ReceiptSplit.part(receiptSha256: name, entry: "1000000000000001", context: nil)
        try SystemCall.writeNewFile(store.layout.new + "/part", part, sync: false)
        let examination = DropExamination.examine("part", in: Spool(layout: store.layout), maximumSize: 1 << 20,
                                                  decoder: InputDecoder(), verifier: try Self.verifier(),
                                                  receipts: store.library)
        guard case let .failed(error) = examination else {
            Issue.record("not left in new/: \(examination)")
            return
        }
        #expect(error.code == EISDIR)
        let reader = StoredItemReader(acceptEnvelopes: false, policy: try Self.policy(), receipts: store.library)
        #expect(throws: ItemReadFailure.unreadable(error)) { try reader.item(part, key: ItemKey("1000000000000001")!) }
    }

    @Test func aPartNamingAPurchaseItsReceiptDoesNotHoldIsRefused() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let part = ReceiptSplit.part(receiptSha256: ReceiptStore.name(of: receipt), entry: "1000000000000003", context: nil)
        let rejection = Self.rejection(part, try Self.verifier(), receipts: store.library)
        #expect(rejection?.code == "invalid-field")
        #expect(rejection?.detail.contains("1000000000000003") == true)
    }

    @Test func aStoredReceiptThatNoLongerHashesToItsNameIsNotRead() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let name = ReceiptStore.name(of: receipt)
        var damaged = receipt
        damaged[damaged.count / 2] ^= 1
        try SystemCall.unlinkIfPresent(store.layout.receipts + "/" + name)
        try SystemCall.writeNewFile(store.layout.receipts + "/" + name, damaged, sync: false)
        let part = ReceiptSplit.part(receiptSha256: name, entry: "1000000000000001", context: nil)
        let rejection = Self.rejection(part, try Self.verifier(), receipts: store.library)
        #expect(rejection?.code == "receipt-not-stored")
        #expect(rejection?.detail.contains("damaged") == true)
    }

    @Test func aDamagedStoredReceiptIsReplacedByTheNextUploadOfIt() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let name = ReceiptStore.name(of: receipt)
        var damaged = receipt
        damaged[damaged.count / 2] ^= 1
        try SystemCall.unlinkIfPresent(store.layout.receipts + "/" + name)
        try SystemCall.writeNewFile(store.layout.receipts + "/" + name, damaged, sync: false)
        // The same size: only its bytes tell it from the receipt.
        try store.library.store.store(receipt, name: name)
        #expect(try SystemCall.readFile(store.layout.receipts + "/" + name, limit: 1 << 20) == receipt)
        let part = ReceiptSplit.part(receiptSha256: name, entry: "1000000000000001", context: nil)
        #expect(Self.rejection(part, try Self.verifier(), receipts: store.library) == nil)
    }

    @Test func aReceiptIsWrittenWhereOnlyTheDaemonWritesNotInTmp() throws {
        // tmp/ is the producers' (group-writable, no sticky bit): a
        // temporary there could be replaced between its fsync and its rename.
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store()
        #expect(rmdir(store.layout.tmp) == 0)
        try store.library.store.store(receipt, name: ReceiptStore.name(of: receipt))
        #expect(try SystemCall.listDirectory(store.layout.receipts) == [ReceiptStore.name(of: receipt)],
                "no temporary left beside it")
    }

    @Test func aStoredReceiptLargerThanMaxFileSizeIsNotReadWhole() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        store.library.store.limitReads(to: receipt.count - 1)
        #expect(throws: SpoolError.self) { try store.library.store.read(ReceiptStore.name(of: receipt)) }
        store.library.store.limitReads(to: receipt.count)
        #expect(try store.library.store.read(ReceiptStore.name(of: receipt)) == receipt)
    }

    /// MaxFileSize= lowered below a stored receipt: no later read takes it,
    /// so its parts are refused at intake and held by an attempt as
    /// too-large, not left in new/ or retried every 5 minutes for ever.
    @Test func aPartWhoseReceiptIsLargerThanALoweredMaxFileSizeIsRefusedAsTooLarge() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let name = ReceiptStore.name(of: receipt)
        store.library.store.limitReads(to: receipt.count - 1)
        let part = ReceiptSplit.part(receiptSha256: name, entry: "1000000000000001", context: nil)
        try SystemCall.writeNewFile(store.layout.new + "/part", part, sync: false)
        let examination = DropExamination.examine("part", in: Spool(layout: store.layout), maximumSize: 1 << 20,
                                                  decoder: InputDecoder(), verifier: try Self.verifier(),
                                                  receipts: store.library)
        guard case let .undecodable(rejection, _) = examination else {
            Issue.record("not refused: \(examination)")
            return
        }
        #expect(rejection.code == "too-large")
        #expect(rejection.detail.contains("receipts/\(name)") && rejection.detail.contains("(\(receipt.count - 1) bytes)"),
                "\(rejection.detail)")
        let reader = StoredItemReader(acceptEnvelopes: false, policy: try Self.policy(), receipts: store.library)
        #expect(throws: ItemReadFailure.rejected(rejection), "an attempt holds it") {
            try reader.item(part, key: ItemKey("1000000000000001")!)
        }
    }

    @Test func malformedPartsAreRefusedWithTheMemberAtFault() throws {
        let store = try Store()
        for (text, code) in [
            (#"{"receiptSha256":"ABC"}"#, "invalid-field"),
            (#"{"receiptSha256":7}"#, "invalid-field"),
            (#"{"receiptSha256":"\#(String(repeating: "a", count: 64))","txreconReceiptEntry":""}"#, "invalid-field"),
            (#"{"receipt":"MAo=","receiptSha256":"\#(String(repeating: "a", count: 64))"}"#, "unexpected-member"),
        ] {
            #expect(Self.rejection(Array(text.utf8), try Self.verifier(), receipts: store.library)?.code == code, "\(text)")
        }
    }

    @Test func aStoredReceiptIsVerifiedAgainUnderThePolicyInForce() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let part = ReceiptSplit.part(receiptSha256: ReceiptStore.name(of: receipt), entry: "1000000000000001", context: nil)
        #expect(Self.rejection(part, try Self.verifier(), receipts: store.library) == nil)
        let otherApp = SignedDataVerifier(policy: try Self.policy(bundleID: "com.other"))
        #expect(Self.rejection(part, otherApp, receipts: store.library)?.code == "wrong-bundle-id")
        #expect(Self.rejection(part, otherApp, receipts: store.library)?.code == "wrong-bundle-id",
                "the verdict kept for the receipt is said again for its next part")
        #expect(store.library.cachedCount == 1, "read and parsed once")
    }

    @Test func anItemReadBackFromTheQueueIsReadThroughItsStoredReceipt() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let part = ReceiptSplit.part(receiptSha256: ReceiptStore.name(of: receipt), entry: "1000000000000001", context: nil)
        let reader = StoredItemReader(acceptEnvelopes: false, policy: try Self.policy(), receipts: store.library)
        let key = ItemKey("1000000000000001")!
        #expect(try reader.item(part, key: key).fields.receiptSha256 == ReceiptStore.name(of: receipt))
        #expect(reader.version(part, key: key, against: ItemVersion(primary: 0))
                == ItemVersion(primary: ReceiptDate.milliseconds("2025-05-01T10:00:00Z")!))
        let otherApp = StoredItemReader(acceptEnvelopes: false, policy: try Self.policy(bundleID: "com.other"),
                                        receipts: store.library)
        #expect(throws: ItemReadFailure.self) { try otherApp.item(part, key: key) }
        #expect(otherApp.version(part, key: key, against: ItemVersion(primary: 0)) == ItemVersion(primary: .min),
                "a part whose receipt no longer verifies has the lowest version")
        let elsewhere = StoredItemReader(acceptEnvelopes: false, policy: try Self.policy(),
                                         receipts: try Store().library)
        #expect(elsewhere.version(part, key: key, against: ItemVersion(primary: 0)) == ItemVersion(primary: .min))
    }

    /// `txrecon list` with several apps names each row's app from its
    /// bundle id: a receipt's purchase has it only in its receipt.
    @Test func theInspectorReadsAQueuedPurchasesBundleIDThroughItsStoredReceipt() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let store = try Store(holding: receipt)
        let part = ReceiptSplit.part(receiptSha256: ReceiptStore.name(of: receipt), entry: "1000000000000001", context: nil)
        try SystemCall.writeNewFile(store.layout.queue + "/1000000000000001", part, sync: false)
        let inspector = SpoolInspector(layout: store.layout)
        #expect(inspector.bundleID(ofItemNamed: "1000000000000001", in: .queue) == "com.example.app")
        #expect(try inspector.show(ItemKey("1000000000000001")!)?.item?.fields.bundleId == "com.example.app")
    }

    @Test func aPartAnEarlierReleaseWroteIsStillThatPurchaseCarryingItsReceipt() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let legacy = TestReceipt.upload(receipt, context: [("txreconReceiptEntry", .string("1000000000000002"))])
        guard case let .item(item) = try Self.examine(legacy, try Self.verifier()) else {
            Issue.record("not one item")
            return
        }
        #expect(item.key.rawValue == "1000000000000002")
        #expect(item.signedStrings.map(\.name) == ["receipt"])
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["receipt"] == .string(Data(receipt).base64EncodedString()))
    }

    /// Base64 with line breaks (and without padding) is read, but delivered
    /// as the standard base64 of the receipt's bytes, as docs/contract.md
    /// says: a backend's decoder may refuse the other spelling.
    @Test func aPartAnEarlierReleaseWroteCarriesItsReceiptInStandardBase64() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        var text = Data(receipt).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        var broken = ""
        for (index, character) in text.enumerated() {
            if index > 0 && index % 76 == 0 { broken += #"\r\n"# }
            broken.append(character)
        }
        let upload = Array((#"{"receipt":"\#(broken)","txreconReceiptEntry":"1000000000000002"}"#).utf8)
        guard case let .item(item) = try Self.examine(upload, try Self.verifier()) else {
            Issue.record("not one item")
            return
        }
        let body = try JSONValue.parse(RequestBuilder.body(for: item, attempt: 1, receivedAt: 0))
        #expect(body["receipt"] == .string(Data(receipt).base64EncodedString()))
    }

    @Test func aRevokedEntryIsNewerThanThePurchaseAndTheSameInEveryUpload() throws {
        let purchased = TestReceipt.Purchase(transactionId: "1000000000000001")
        var revoked = purchased
        revoked.cancellationDate = "2025-05-20T08:00:00Z"
        func version(_ purchase: TestReceipt.Purchase, created: String) throws -> ItemVersion? {
            let receipt = TestReceipt.sign(TestReceipt.payload(creationDate: created, purchases: [purchase]))
            return try Self.split(TestReceipt.upload(receipt)).purchases.first?.version
        }
        let before = try #require(try version(purchased, created: "2025-05-10T00:00:00Z"))
        let after = try #require(try version(revoked, created: "2025-05-21T00:00:00Z"))
        #expect(after > before)
        #expect(after == ItemVersion(primary: ReceiptDate.milliseconds("2025-05-20T08:00:00Z")!, revoked: true))
        #expect(try version(purchased, created: "2025-06-01T00:00:00Z") == before,
                "the creation date, which changes at every upload, is not the version")
    }

    @Test func anExtendedRenewalDateIsNewerAndAnOlderReceiptHoldingTheEarlierExpiryOlder() throws {
        // "Extend a Subscription Renewal Date": the next receipt holds the
        // same transaction, bought at the same time, expiring later.
        var subscription = TestReceipt.Purchase(transactionId: "1000000000000001")
        subscription.expiresDate = "2025-06-01T10:00:00Z"
        var extended = subscription
        extended.expiresDate = "2025-06-15T10:00:00Z"
        func version(_ purchase: TestReceipt.Purchase, created: String) throws -> ItemVersion {
            let receipt = TestReceipt.sign(TestReceipt.payload(creationDate: created, purchases: [purchase]))
            return try #require(try Self.split(TestReceipt.upload(receipt)).purchases.first?.version)
        }
        let before = try version(subscription, created: "2025-05-10T00:00:00Z")
        let after = try version(extended, created: "2025-05-20T00:00:00Z")
        #expect(after > before, "the extension is news")
        #expect(try version(extended, created: "2025-05-25T00:00:00Z") == after, "and the same in every upload")
        #expect(try version(subscription, created: "2025-05-30T00:00:00Z") == before,
                "an older receipt uploaded later is still the earlier expiry, older than the extension")
        #expect(after.description == "\(ReceiptDate.milliseconds("2025-05-01T10:00:00Z")!)."
                + "\(ReceiptDate.milliseconds("2025-06-15T10:00:00Z")!)")

        var refunded = subscription
        refunded.cancellationDate = "2025-05-05T08:00:00Z"
        var refundedExtended = refunded
        refundedExtended.expiresDate = "2025-06-15T10:00:00Z"
        let revoked = try version(refunded, created: "2025-05-10T00:00:00Z")
        #expect(revoked > after, "a refund stays newer than any expiry of the purchase")
        #expect(try version(refundedExtended, created: "2025-05-20T00:00:00Z") > revoked)
    }

    @Test func aForgedReceiptIsRefusedBeforeItIsSplit() throws {
        let verifier = try Self.verifier()
        var altered = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let at = try #require(altered.firstRange(of: Array("1000000000000002".utf8))).lowerBound
        altered[at + 15] = UInt8(ascii: "9")
        #expect(Self.rejection(TestReceipt.upload(altered), verifier)?.code == "invalid-receipt-signature")

        let payload = TestReceipt.payload(purchases: Self.two)
        for (chain, code) in [
            (["leaf-under-other-root", "other-intermediate", "other-root"], "receipt-untrusted-chain"),
            (["leaf-under-intermediate-expired", "intermediate-expired", "root"], "receipt-untrusted-chain"),
            (["leaf", "root"], "receipt-untrusted-chain"),
            (["leaf-no-oid", "intermediate", "root"], "receipt-missing-oid"),
            (["leaf-under-intermediate-no-oid", "intermediate-no-oid", "root"], "receipt-missing-oid"),
        ] {
            let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(payload, chain: chain)), verifier)
            #expect(rejection?.code == code, "\(chain): \(String(describing: rejection))")
        }
        #expect(Self.rejection(TestReceipt.upload(TestReceipt.sign(payload)), verifier) == nil, "the genuine one passes")
    }

    @Test func aSignerKnownFromOneReceiptIsCheckedAgainOnEveryNextOne() throws {
        // One verifier: the first receipt makes its signer known, and the
        // ones after it take the short way (one RSA check); every forgery
        // must still fail there.
        let verifier = try Self.verifier()
        let genuine = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[0]]))
        #expect(Self.rejection(TestReceipt.upload(genuine), verifier) == nil)
        #expect(Self.rejection(TestReceipt.upload(genuine), verifier) == nil, "the signer known, it passes again")
        var altered = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[1]]))
        let at = try #require(altered.firstRange(of: Array("1000000000000002".utf8))).lowerBound
        altered[at + 15] = UInt8(ascii: "7")
        #expect(Self.rejection(TestReceipt.upload(altered), verifier)?.code == "invalid-receipt-signature")
        let late = TestReceipt.sign(TestReceipt.payload(creationDate: "2026-06-01T00:00:00Z", purchases: [Self.two[1]]))
        #expect(Self.rejection(TestReceipt.upload(late), verifier)?.code == "receipt-untrusted-chain",
                "outside the known signer's window the chain is validated again")
        let other = TestReceipt.sign(TestReceipt.payload(purchases: [Self.two[1]]),
                                     chain: ["leaf-under-other-root", "other-intermediate", "other-root"])
        #expect(Self.rejection(TestReceipt.upload(other), verifier)?.code == "receipt-untrusted-chain")
        for name in ["sandbox-tpinappreceipt-2.receipt", "sandbox-revenuecat-1.receipt"] {
            let real = SignedDataVerifier(policy: SignedDataPolicy(
                roots: try VerificationFixtures.appleRoots(), bundleID: try ReceiptVerificationTests.bundle(name),
                appAppleID: nil, environments: [.sandbox], receiptRoots: try ReceiptVerificationTests.receiptRoots()))
            for _ in 0..<2 { try real.verify(try ReceiptVerificationTests.parsed(name)) }
        }
    }

    @Test func aReceiptCreatedOutsideItsSignersValidityIsUntrusted() throws {
        let late = TestReceipt.payload(creationDate: "2026-06-01T00:00:00Z", purchases: Self.two)
        let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(late)), try Self.verifier())
        #expect(rejection?.code == "receipt-untrusted-chain")
        #expect(rejection?.detail.contains("2026-06-01T00:00:00Z") == true)
    }

    @Test func anotherAppsReceiptOrAnotherEnvironmentsIsRefused() throws {
        let other = TestReceipt.sign(TestReceipt.payload(bundleId: "com.other", purchases: Self.two))
        #expect(Self.rejection(TestReceipt.upload(other), try Self.verifier())?.code == "wrong-bundle-id")
        let production = TestReceipt.sign(TestReceipt.payload(receiptType: "Production", purchases: Self.two))
        #expect(Self.rejection(TestReceipt.upload(production), try Self.verifier(environments: [.sandbox]))?.code
                == "wrong-environment")
        let odd = TestReceipt.sign(TestReceipt.payload(receiptType: "Elsewhere", purchases: Self.two))
        let refusal = Self.rejection(TestReceipt.upload(odd), try Self.verifier())
        #expect(refusal?.code == "wrong-environment")
        #expect(refusal?.detail.hasPrefix("Elsewhere (want") == true, "the type named: \(String(describing: refusal))")
    }

    /// Volume Purchase Program receipts name their environment in their own
    /// words; they are the app's, not another environment's.
    @Test func aVolumePurchaseReceiptIsOfTheEnvironmentItNames() throws {
        for (type, environment) in [("ProductionVPP", SignedDataEnvironment.production),
                                    ("ProductionVPPSandbox", .sandbox)] {
            let receipt = TestReceipt.sign(TestReceipt.payload(receiptType: type, purchases: Self.two))
            #expect(Self.rejection(TestReceipt.upload(receipt), try Self.verifier(environments: [environment])) == nil,
                    "\(type)")
        }
    }

    @Test func bytesThatAreNotAReceiptAreRefusedWithTheirCodes() throws {
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: Self.two))
        let verifier = try Self.verifier()
        for (bytes, code) in [
            (TestReceipt.upload(Array(receipt.prefix(receipt.count - 10))), "malformed-receipt"),
            (Array(#"{"receipt":"not base64!"}"#.utf8), "malformed-receipt"),
            (Array(#"{"receipt":7}"#.utf8), "invalid-field"),
            (TestReceipt.upload(TestReceipt.sign(TestReceipt.payload(purchases: []))), "empty-receipt"),
            (Array(JSONValue.object([("receipt", .string(Data(receipt).base64EncodedString())),
                                     ("txreconReceiptEntry", .string("3"))]).serialized), "invalid-field"),
        ] as [([UInt8], String)] {
            #expect(Self.rejection(bytes, verifier)?.code == code, "\(String(decoding: bytes.prefix(40), as: UTF8.self))")
        }
    }

    @Test func aReceiptOfMorePurchasesThanTheLimitIsRefused() throws {
        // Entries without attributes: the count alone is refused.
        let entry = TestReceipt.attribute(17, TestReceipt.der(0x31, []))
        let crowded = TestReceipt.der(0x31, Array([[UInt8]](repeating: entry, count: AppReceipt.maximumPurchases + 1).joined()))
        let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(crowded)), try Self.verifier())
        #expect(rejection?.code == "malformed-receipt")
        #expect(rejection?.detail.contains("more than \(AppReceipt.maximumPurchases) in-app purchases") == true,
                "\(String(describing: rejection))")
    }

    @Test func deepNestingInThePayloadIsRefused() throws {
        // An in-app value that is a set of sets 1,000 deep.
        var nested = TestReceipt.der(0x31, [])
        for _ in 0..<1000 { nested = TestReceipt.der(0x31, nested) }
        let deep = TestReceipt.der(0x31, TestReceipt.attribute(17, nested))
        let rejection = Self.rejection(TestReceipt.upload(TestReceipt.sign(deep)), try Self.verifier())
        #expect(rejection?.code == "malformed-receipt", "\(String(describing: rejection))")
    }

    @Test func base64IsWrittenAsDataWritesIt() {
        for count in 0..<8 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 97 &+ 200) }
            #expect(Base64.encode(bytes) == Data(bytes).base64EncodedString())
            #expect(Base64.decode(Array(Base64.encode(bytes).utf8)) == bytes)
        }
    }
}
