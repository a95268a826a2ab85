// An item read back from the spool is verified again: its file is the
// producer's inode, which the producer can still write after intake.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct StoredItemReaderTests {
    static let key = ItemKey("2000000123456789")!

    /// A transaction signed by the test PKI, key `key`, dated `signedDate`.
    static func transaction(signedDate: Int64 = TestPKI.insideLeafValidity) -> [UInt8] {
        Array(SignedDataVerifierTests.transaction(signedDate: signedDate).utf8)
    }

    /// Where no receipt is stored: none of these files is a receipt part.
    static let noReceipts = ReceiptLibrary(store: ReceiptStore(layout: SpoolLayout(root: "/nonexistent")))

    static func reader() throws -> StoredItemReader {
        StoredItemReader(acceptEnvelopes: false, policy: try VerificationFixtures.testPolicy(), receipts: noReceipts)
    }

    @Test func aGenuineItemIsReadForItsKey() throws {
        let item = try Self.reader().item(Self.transaction(), key: Self.key)
        #expect(item.key == Self.key)
        #expect(item.kind == .transaction)
    }

    /// Why `reader` refuses `bytes` as the item of `key`; nil when it takes them.
    static func rejection(_ bytes: [UInt8], key: ItemKey = key, by reader: StoredItemReader) -> Rejection? {
        do throws(ItemReadFailure) {
            _ = try reader.item(bytes, key: key)
            return nil
        } catch {
            guard case let .rejected(rejection) = error else {
                Issue.record("not refused but unreadable: \(error)")
                return nil
            }
            return rejection
        }
    }

    @Test func aForgedSignatureIsRefused() throws {
        let forged = SignedDataVerifierTests.replacing(segment: 2, of: String(decoding: Self.transaction(), as: UTF8.self),
                                                       with: TestJWS.base64URL(TestJWS.placeholderSignature))
        #expect(Self.rejection(Array(forged.utf8), by: try Self.reader())?.code == RejectionCode.invalidSignature.rawValue)
    }

    @Test func anEnvelopeIsRefusedWhereIntakeRefusesEnvelopes() throws {
        let envelope = TestDrop.envelope(id: Self.key.rawValue, version: 9_000_000_000_000, payload: .object([]))
        #expect(Self.rejection(envelope, by: try Self.reader())?.code == RejectionCode.envelopesDisabled.rawValue)
        let open = StoredItemReader(acceptEnvelopes: true, policy: nil, receipts: Self.noReceipts)
        #expect(try open.item(envelope, key: Self.key).kind == .envelope)
    }

    @Test func aStoredVersionIsCheckedOnlyWhereItWouldMakeTheDropOutdated() throws {
        let reader = try Self.reader()
        let open = StoredItemReader(acceptEnvelopes: true, policy: try VerificationFixtures.testPolicy(),
                                    receipts: Self.noReceipts)
        let forged = TestDrop.envelope(id: Self.key.rawValue, version: 5, payload: .object([]))
        let lowest = ItemVersion(primary: .min)
        #expect(open.version(forged, key: Self.key, against: ItemVersion(primary: 9)) == ItemVersion(primary: 5),
                "below the drop's version: taken as it claims, the drop is newer either way")
        #expect(open.version(forged, key: Self.key, against: ItemVersion(primary: 5)) == ItemVersion(primary: 5),
                "where intake takes envelopes, one is a stored item like any other")
        let badSignature = SignedDataVerifierTests.replacing(
            segment: 2, of: String(decoding: Self.transaction(), as: UTF8.self),
            with: TestJWS.base64URL(TestJWS.placeholderSignature))
        let claimed = try reader.item(Self.transaction(), key: Self.key).version
        #expect(reader.version(Array(badSignature.utf8), key: Self.key, against: claimed) == lowest,
                "at or above the drop's version and not Apple's: the oldest")
        #expect(reader.version(forged, key: Self.key, against: ItemVersion(primary: 9)) == lowest,
                "an envelope where intake refuses them does not decode")
        #expect(reader.version(Self.transaction(), key: Self.key, against: lowest) == claimed)
        #expect(reader.version(Self.transaction(), key: ItemKey("2000000999999999")!, against: lowest) == lowest)
    }

    @Test func anotherKeysGenuineItemIsRefused() throws {
        let rejection = Self.rejection(Self.transaction(), key: ItemKey("2000000999999999")!, by: try Self.reader())
        #expect(rejection?.code == RejectionCode.invalidField.rawValue)
        #expect(rejection?.detail.contains("changed after intake") == true)
    }
}

/// The engine reads queue/ and done/ through the reader.
@Suite struct StoredItemVerificationTests {
    static func harness(transport: ScriptedTransport) throws -> EngineHarness {
        try EngineHarness(settings: DeliveryEngine.Settings(stopGrace: .seconds(5), acceptEnvelopes: false,
                                                            verification: try VerificationFixtures.testPolicy()),
                          transport: transport)
    }

    /// Writes `bytes` into new/ and returns the drop intake would hand over.
    static func drop(_ bytes: [UInt8], name: String, in harness: EngineHarness) throws -> Drop {
        try SystemCall.writeNewFile(harness.layout.new + "/" + name, bytes, sync: false)
        guard case let .item(item) = try InputDecoder(acceptEnvelopes: false).decode(bytes) else {
            throw Rejection(.unknownFormat, "not an item")
        }
        return Drop(name: name, item: item, receivedAt: harness.clock.wallMilliseconds)
    }

    /// What a producer that still owns `directory`/KEY can do: put an
    /// envelope claiming the highest version in its place.
    static func forgeEnvelope(in directory: String, for key: ItemKey) throws {
        let envelope = TestDrop.envelope(id: key.rawValue, version: Int64.max, payload: .object([]))
        try SystemCall.replaceFile(directory + "/" + key.fileName, envelope, temporaryName: directory + "/.tmp-forged",
                                   sync: false)
    }

    /// An engine that has taken the test PKI's transaction (answered as
    /// `transport` says) and reached `reached`; then a genuine newer snapshot.
    static func engineAfterFirstSnapshot(_ harness: EngineHarness,
                                         until reached: @escaping @Sendable (EngineStatus) -> Bool) async throws
        -> (engine: DeliveryEngine, newer: Drop) {
        let engine = try await harness.startedEngine()
        await engine.waitForDoneIndex()
        _ = await engine.offer([try drop(StoredItemReaderTests.transaction(), name: "t1", in: harness)])
        await harness.status.waitFor(reached)
        let newer = StoredItemReaderTests.transaction(signedDate: TestPKI.insideLeafValidity + 60_000)
        return (engine, try drop(newer, name: "t2", in: harness))
    }

    @Test func aQueuedItemItsProducerRewroteIsHeldNotSent() async throws {
        let transport = ScriptedTransport()
        let key = StoredItemReaderTests.key
        transport.script(key.rawValue, [.status(503)])
        let harness = try Self.harness(transport: transport)
        let first = try await harness.startedEngine()
        _ = await first.offer([try Self.drop(StoredItemReaderTests.transaction(), name: "t1", in: harness)])
        await transport.waitForFinishedExchanges(1)
        await first.stop()
        #expect(harness.names(in: "queue").contains(key.fileName))

        // The producer still owns the file: an envelope in its place.
        let envelope = TestDrop.envelope(id: key.rawValue, version: 1, payload: .object([("forged", .bool(true))]))
        try SystemCall.replaceFile(harness.layout.queue + "/" + key.fileName, envelope,
                                   temporaryName: harness.layout.queue + "/.tmp-forged", sync: false)
        let restarted = try await harness.startedEngine()
        _ = await restarted.perform(ControlRequest(.retry, all: true))
        // Held, or (what the check prevents) delivered.
        let after = await harness.status.waitFor { $0.held == 1 || $0.delivered == 1 }
        #expect(after.held == 1 && after.delivered == 0)
        #expect(transport.requests.count == 1, "the rewritten file was never sent")
        #expect(harness.names(in: "hold").contains(key.fileName))
        let reason = try SystemCall.readFile(harness.layout.hold + "/" + key.fileName + ".reason", limit: 4096)
        #expect(String(decoding: reason, as: UTF8.self).contains("envelopes-disabled"))
        await restarted.stop()
    }

    @Test func aHeldFileThatNoLongerVerifiesIsSupersededByANewSnapshot() async throws {
        let transport = ScriptedTransport()
        let key = StoredItemReaderTests.key
        transport.script(key.rawValue, [.status(409)])
        let harness = try Self.harness(transport: transport)
        let (engine, newer) = try await Self.engineAfterFirstSnapshot(harness) { $0.held == 1 }
        try Self.forgeEnvelope(in: harness.layout.hold, for: key)
        _ = await engine.offer([newer])
        let after = await harness.status.waitFor { $0.delivered == 1 }
        #expect(after.held == 0 && after.superseded == 1)
        #expect(!harness.names(in: "hold").contains(key.fileName), "not left in hold/, uncounted")
        #expect(harness.names(in: "done").contains { $0.hasPrefix(key.fileName + ".superseded-") })
        await engine.stop()
    }

    @Test func aForgedVersionInDoneDoesNotSupersedeAGenuineNewerSnapshot() async throws {
        let transport = ScriptedTransport()
        let harness = try Self.harness(transport: transport)
        let (engine, newer) = try await Self.engineAfterFirstSnapshot(harness) { $0.delivered == 1 }
        // done/KEY rewritten with a version no genuine snapshot reaches.
        try Self.forgeEnvelope(in: harness.layout.done, for: StoredItemReaderTests.key)
        _ = await engine.offer([newer])
        // Delivered, or (what the check prevents) superseded by the forgery.
        let after = await harness.status.waitFor { $0.delivered + $0.superseded == 2 }
        #expect(after.delivered == 2 && after.superseded == 0)
        #expect(transport.requests.count == 2)
        await engine.stop()
    }
}
