// One delivery attempt as a value, run without threads against a spool in
// a temporary directory and a `send` the test answers: what the answer
// means for the item is decided and committed by the attempt itself.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct AttemptTests {
    let directory = TemporaryDirectory("txrecon-attempt")
    var layout: SpoolLayout { SpoolLayout(root: directory.path + "/spool") }
    var spool: Spool { Spool(layout: layout) }

    func context() -> Attempt.Context {
        Attempt.Context(spool: spool, storedItems: StoredItemReader(acceptEnvelopes: true, policy: nil,
                                                                   receipts: ReceiptLibrary(store: ReceiptStore(layout: layout))),
                        prepare: { item, attempt, _, _ in
                            DeliveryRequest(headers: [("Attempt", "\(attempt)")], body: Array(item.key.rawValue.utf8))
                        },
                        redactor: SecretRedactor(), clock: ManualClock())
    }

    /// `key`'s envelope written to queue/ (or to new/ as `inbox`).
    func attempt(_ key: String, number: Int = 1, inbox: String? = nil) throws -> Attempt {
        try layout.createMissingDirectories()
        let body = #"{"id":"\#(key)","version":1,"payload":{}}"#
        _ = directory.write(body, to: inbox.map { "spool/new/\($0)" } ?? "spool/queue/\(key)")
        // A first attempt from new/ sends intake's item, as the engine passes it.
        var cached: Item?
        if inbox != nil, case let .item(item) = try InputDecoder(acceptEnvelopes: true).decode(Array(body.utf8)) {
            cached = item
        }
        return Attempt(key: ItemKey(key)!, number: number, receivedAt: 0, cached: cached, hasStateFile: false,
                       followsDelivery: false, inbox: inbox, maximumSize: 1 << 20, now: 0)
    }

    static func answer(_ status: Int, _ body: String = "") -> TransportResult {
        .response(status: status, retryAfter: nil, bodyPrefix: Array(body.utf8))
    }

    @Test func aConfirmedDeliveryMovesTheItemToDone() throws {
        let attempt = try attempt("k-1")
        var sent: [DeliveryRequest] = []
        let exchange = attempt.run(send: { sent.append($0); return Self.answer(204) }, in: context())
        guard case let .answered(item, settlement) = exchange else {
            Issue.record("no answer: \(exchange)")
            return
        }
        #expect(item.key.rawValue == "k-1")
        #expect(settlement.outcome == .delivered(.http(status: 204)) && settlement.spoolError == nil)
        #expect(sent.map(\.body) == [Array("k-1".utf8)], "the request is built from queue/KEY, read and decoded")
        #expect(try SystemCall.listDirectory(layout.done).contains("k-1"))
        #expect(try !SystemCall.listDirectory(layout.queue).contains("k-1"))
    }

    @Test func aDeliveredPurchaseOfAReceiptMarksTheReceiptItNamesUsed() throws {
        try layout.createMissingDirectories()
        let receipt = TestReceipt.sign(TestReceipt.payload(purchases: [TestReceipt.Purchase(transactionId: "1000000000000001")]))
        let library = ReceiptLibrary(store: ReceiptStore(layout: layout))
        let name = ReceiptStore.name(of: receipt)
        try library.store.store(receipt, name: name)
        var long = [timespec(tv_sec: 1_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, layout.receipts + "/" + name, &long, 0) == 0, "last used long ago")
        try SystemCall.writeNewFile(layout.queue + "/1000000000000001",
                                    ReceiptSplit.part(receiptSha256: name, entry: "1000000000000001", context: nil), sync: false)
        let context = Attempt.Context(spool: spool, storedItems: StoredItemReader(acceptEnvelopes: true, policy: nil,
                                                                                 receipts: library),
                                      prepare: { item, _, _, _ in DeliveryRequest(headers: [], body: Array(item.key.rawValue.utf8)) },
                                      redactor: SecretRedactor(), clock: ManualClock())
        let attempt = Attempt(key: ItemKey("1000000000000001")!, number: 1, receivedAt: 0, cached: nil, hasStateFile: false,
                              followsDelivery: false, inbox: nil, maximumSize: 1 << 20, now: 0)
        guard case .answered(_, let settlement) = attempt.run(send: { _ in Self.answer(204) }, in: context),
              case .delivered = settlement.outcome else {
            Issue.record("not delivered")
            return
        }
        let used = try #require(try SystemCall.linkStatus(layout.receipts + "/" + name))
        #expect(Spool.modifiedMilliseconds(used) > Timestamp.nowMilliseconds() - 60_000,
                "kept for DoneRetention= from this delivery, as done/ keeps the purchase")
    }

    @Test func aRefusalHoldsTheItemWithTheBackendsReason() throws {
        let attempt = try attempt("k-2", number: 3)
        let exchange = attempt.run(send: { _ in Self.answer(409, "order unknown") }, in: context())
        guard case let .answered(_, settlement) = exchange, case .hold = settlement.outcome else {
            Issue.record("not held: \(exchange)")
            return
        }
        #expect(try SystemCall.listDirectory(layout.hold).contains("k-2"))
        #expect(spool.holdReason(ItemKey("k-2")!)?.contains("order unknown") == true)
    }

    @Test func aFailedFirstAttemptFromNewLeavesTheFileInQueueForItsRetry() throws {
        let attempt = try attempt("k-3", inbox: "drop-1")
        let exchange = attempt.run(send: { _ in Self.answer(503) }, in: context())
        guard case let .answered(_, settlement) = exchange, case .retryLater = settlement.outcome else {
            Issue.record("not a retry: \(exchange)")
            return
        }
        #expect(try SystemCall.listDirectory(layout.queue).contains("k-3"))
        #expect(try SystemCall.listDirectory(layout.new).isEmpty)
    }

    @Test func anItemThatIsGoneNeverReachesTheBackend() throws {
        try layout.createMissingDirectories()
        let attempt = Attempt(key: ItemKey("gone")!, number: 1, receivedAt: 0, cached: nil, hasStateFile: false,
                              followsDelivery: false, inbox: nil, maximumSize: 1 << 20, now: 0)
        var sends = 0
        let exchange = attempt.run(send: { _ in sends += 1; return Self.answer(204) }, in: context())
        guard case .local(.missing) = exchange else {
            Issue.record("not missing: \(exchange)")
            return
        }
        #expect(sends == 0)
    }

    @Test func aQueuedFileThatNoLongerDecodesIsHeldByTheAttemptWithoutBeingSent() throws {
        try layout.createMissingDirectories()
        _ = directory.write("not an item", to: "spool/queue/broken")
        let attempt = Attempt(key: ItemKey("broken")!, number: 3, receivedAt: 0, cached: nil, hasStateFile: false,
                              followsDelivery: false, inbox: nil, maximumSize: 1 << 20, now: 0)
        var sends = 0
        let exchange = attempt.run(send: { _ in sends += 1; return Self.answer(204) }, in: context())
        guard case let .local(.undecodable(reason, holdError)) = exchange else {
            Issue.record("not undecodable: \(exchange)")
            return
        }
        #expect(sends == 0)
        #expect(holdError == nil)
        #expect(reason.hasPrefix("queued file no longer decodes or verifies: "))
        #expect(try SystemCall.listDirectory(layout.hold).contains("broken"))
        #expect(try !SystemCall.listDirectory(layout.queue).contains("broken"))
        // The hold file names the attempts made before this one.
        let record = String(decoding: try SystemCall.readFile(layout.hold + "/broken.reason", limit: 4096), as: UTF8.self)
        #expect(record.contains("attempts: 2"))
    }

    /// MaxFileSize= lowered below a queued file: no retry can read it, so
    /// it is held with the reason, not tried every 5 minutes for ever.
    @Test func aQueuedFileLargerThanALoweredMaxFileSizeIsHeldNotRetried() throws {
        try layout.createMissingDirectories()
        let body = #"{"id":"large","version":1,"payload":{"padding":"\#(String(repeating: "x", count: 2048))"}}"#
        _ = directory.write(body, to: "spool/queue/large")
        let attempt = Attempt(key: ItemKey("large")!, number: 2, receivedAt: 0, cached: nil, hasStateFile: false,
                              followsDelivery: false, inbox: nil, maximumSize: 1024, now: 0)
        var sends = 0
        let exchange = attempt.run(send: { _ in sends += 1; return Self.answer(204) }, in: context())
        guard case let .local(.undecodable(reason, holdError)) = exchange else {
            Issue.record("not held: \(exchange)")
            return
        }
        #expect(sends == 0 && holdError == nil)
        #expect(reason.contains("larger than MaxFileSize= (1024 bytes)"), "\(reason)")
        #expect(try SystemCall.listDirectory(layout.hold).contains("large"))
    }
}

extension Attempt {
    /// The attempt run whole on the calling thread with `send`, as a
    /// threaded transport runs its exchange; what it reported.
    func run(send: (DeliveryRequest) -> TransportResult, in context: Context) -> Exchange {
        let ended = Mutex<Exchange?>(nil)
        exchange(in: context) { exchange in ended.withLock { $0 = exchange } }.run(sending: send)
        return ended.withLock { $0! }
    }
}
