// The ledger in SQLite: what it keeps per destination and key, that no
// confirmation moves a key back (a row at a time or many in one run), the
// queries `txrecon history` makes, the retention, the migration of an older
// schema, and how it fails (a damaged file, a newer schema, a reader that
// must not create).
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct SQLiteLedgerTests {
    let directory = TemporaryDirectory("txrecon-ledger")
    var path: String { directory.path + "/ledger.sqlite3" }

    static func record(_ key: String, version: Int64, destination: String = "backend", at: Int64 = 1_800_000_000_000,
                       revoked: Bool = false, original: String? = "1000", token: String? = nil,
                       product: String? = "com.example.monthly") -> LedgerRecord {
        LedgerRecord(destination: destination, key: ItemKey(key)!,
                     version: ItemVersion(primary: version, revoked: revoked), confirmedAt: at, attempt: 2,
                     confirmation: "HTTP 200", kind: .transaction,
                     identity: LedgerRecord.Identity(transactionId: key, originalTransactionId: original,
                                                     appTransactionId: "7001", appAccountToken: token,
                                                     productId: product, bundleId: "com.example.app",
                                                     environment: "Sandbox", expiresDate: 1_800_000_600_000,
                                                     webOrderLineItemId: "9001"))
    }

    @Test func aRecordedConfirmationIsFoundWithEverythingItSaid() throws {
        let ledger = try SQLiteLedger(path: path)
        let record = Self.record("2000000001", version: 10, token: "b1c2")
        try ledger.record([record])
        #expect(try ledger.confirmedVersion(at: "backend", of: ItemKey("2000000001")!) == ItemVersion(primary: 10))
        #expect(try ledger.confirmedVersion(at: "analytics", of: ItemKey("2000000001")!) == nil, "per destination")
        #expect(try ledger.confirmedVersion(at: "backend", of: ItemKey("2000000002")!) == nil)
        #expect(try ledger.records(of: ItemKey("2000000001")!) == [record])
    }

    @Test func aKeysRecordsAreEveryDestinationsInDestinationOrder() throws {
        let ledger = try SQLiteLedger(path: path)
        let rows = ["stream", "analytics", "backend"].map { Self.record("2000000001", version: 10, destination: $0) }
        try ledger.record(rows + [Self.record("2000000002", version: 11, destination: "audit")])
        #expect(try ledger.records(of: ItemKey("2000000001")!).map(\.destination) == ["analytics", "backend", "stream"])
        #expect(try ledger.records(of: ItemKey("2000000003")!).isEmpty)
        #expect(try SQLiteLedger(path: directory.path + "/empty.sqlite3").records(of: ItemKey("2000000001")!).isEmpty)
    }

    /// A reconcile judges each snapshot against its key's records: a scan of
    /// the table per snapshot took a second at three million rows.
    @Test func aKeysRecordsAreFoundThroughThePrimaryKeyNotByAScan() throws {
        _ = try SQLiteLedger(path: path)
        let database = try SQLiteDatabase(path: path, access: .readOnly)
        let plan = try database.prepare("EXPLAIN QUERY PLAN " + SQLiteLedger.recordsOfKey)
        var steps: [String] = []
        while try plan.step() { steps.append(plan.string(3) ?? "") }
        #expect(steps.contains { $0.hasPrefix("SEARCH confirmations USING PRIMARY KEY (destination=? AND key=?)") },
                "\(steps)")
        #expect(!steps.contains { $0.hasPrefix("SCAN confirmations") }, "\(steps)")
    }

    @Test func aConfirmationNeverMovesAKeyBackToAnOlderVersion() throws {
        let ledger = try SQLiteLedger(path: path)
        try ledger.record([Self.record("k", version: 20, revoked: true)])
        try ledger.record([Self.record("k", version: 20), Self.record("k", version: 5)])
        #expect(try ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 20, revoked: true),
                "a refund (revoked) stays newer than the purchase snapshot of the same signedDate")
        try ledger.record([Self.record("k", version: 21)])
        #expect(try ledger.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 21))
    }

    @Test func aBatchOfManyRunsKeepsEachKeysNewestVersionAndEverythingItSaid() throws {
        let ledger = try SQLiteLedger(path: path)
        // 100 rows (three runs of 32 and four single ones), each key's
        // versions out of order, within one run and across runs.
        let versions: [Int64] = [7, 3, 9, 1, 5, 8, 2, 10, 4, 6]
        let batch = (0..<100).map { index in
            Self.record("k\(index % 10)", version: versions[(index / 10 + index) % 10] * 10 + Int64(index % 10),
                        token: "t\(index % 10)")
        }
        try ledger.record(batch)
        for key in 0..<10 {
            let newest = try #require(batch.filter { $0.key.rawValue == "k\(key)" }.max { $0.version < $1.version })
            #expect(try ledger.records(of: ItemKey("k\(key)")!) == [newest])
        }
        #expect(try ledger.statistics().rows == 10)
    }

    @Test func anEqualVersionConfirmedAgainIsTheKeysLastConfirmation() throws {
        let ledger = try SQLiteLedger(path: path)
        try ledger.record([Self.record("k", version: 20, at: 1_000)])
        try ledger.record([Self.record("k", version: 20, at: 9_000)])
        #expect(try ledger.records(of: ItemKey("k")!).map(\.confirmedAt) == [9_000], "a replay counts for retention")
    }

    /// A batch is written in key order (pages changed once each), which
    /// must not reorder the confirmations of one key: the later of two at
    /// one version is the key's last, in any run of the upsert.
    @Test func withinABatchTheLaterConfirmationOfAnEqualVersionIsTheLastWord() throws {
        let ledger = try SQLiteLedger(path: path)
        // 100 rows, keys out of order, each key confirmed ten times at one version.
        let batch = (0..<100).map { index in
            Self.record("k\((index * 7) % 10)", version: 20, at: 1_000 + Int64(index))
        }
        try ledger.record(batch)
        for key in 0..<10 {
            let last = try #require(batch.last { $0.key.rawValue == "k\(key)" })
            #expect(try ledger.records(of: ItemKey("k\(key)")!).map(\.confirmedAt) == [last.confirmedAt])
        }
    }

    @Test func historyFindsACustomerByEachIdentityAndWindow() throws {
        let ledger = try SQLiteLedger(path: path)
        try ledger.record([
            Self.record("a1", version: 1, at: 1_000, original: "A", token: "tok-a"),
            Self.record("a2", version: 1, at: 2_000, original: "A", token: "tok-a", product: "com.example.yearly"),
            Self.record("a2", version: 1, destination: "analytics", at: 2_500, original: "A", token: "tok-a",
                        product: "com.example.yearly"),
            Self.record("b1", version: 1, at: 3_000, original: "B", token: nil),
        ])
        func keys(_ query: LedgerQuery) throws -> [String] {
            try ledger.history(query).map { "\($0.destination)/\($0.key.rawValue)" }
        }
        #expect(try keys(LedgerQuery(originalTransactionId: "A")) == ["backend/a1", "backend/a2", "analytics/a2"])
        #expect(try keys(LedgerQuery(appAccountToken: "tok-a", destination: "backend")) == ["backend/a1", "backend/a2"])
        #expect(try keys(LedgerQuery(productId: "com.example.yearly")) == ["backend/a2", "analytics/a2"])
        #expect(try keys(LedgerQuery(appTransactionId: "7001", since: 2_000, until: 3_000))
                == ["backend/a2", "analytics/a2"])
        #expect(try keys(LedgerQuery(limit: 2)) == ["backend/a1", "backend/a2"])
        #expect(try keys(LedgerQuery(originalTransactionId: "nobody")).isEmpty)
    }

    @Test func pruningForgetsKeysLastConfirmedBeforeTheCutOff() throws {
        let ledger = try SQLiteLedger(path: path)
        try ledger.record([Self.record("old", version: 1, at: 1_000), Self.record("new", version: 1, at: 5_000)])
        #expect(try ledger.prune(confirmedBefore: 5_000) == 1)
        #expect(try ledger.confirmedVersion(at: "backend", of: ItemKey("old")!) == nil)
        #expect(try ledger.statistics().rows == 1)
    }

    /// The writer counts the rows once and keeps the count as it writes:
    /// checked against a reader's count after every batch of seeded random
    /// keys, new ones, held ones at older, equal and newer versions, one
    /// key twice in a run, full runs and single rows, after pruning, and
    /// after another connection deleted rows.
    @Test func theRowCountKeptByTheWriterIsTheTablesCount() throws {
        do {
            let earlier = try SQLiteLedger(path: path)
            try earlier.record([Self.record("held", version: 5)])
        }
        let ledger = try SQLiteLedger(path: path)
        let reader = try SQLiteLedger(path: path, access: .readOnly)
        #expect(try ledger.statistics().rows == 1, "counted at the first look")
        var generator = SeededGenerator(seed: 42)
        var most: Int64 = 0
        for round in 0..<40 {
            let batch = (0..<Int.random(in: 1...80, using: &generator)).map { _ in
                Self.record("k\(Int.random(in: 0..<150, using: &generator))",
                            version: Int64.random(in: 1...4, using: &generator),
                            destination: Bool.random(using: &generator) ? "backend" : "analytics",
                            at: Int64(round) * 1_000)
            }
            try ledger.record(batch, replacingEqual: Bool.random(using: &generator))
            if round % 10 == 9 { _ = try ledger.prune(confirmedBefore: Int64(round - 5) * 1_000) }
            let counted = try reader.statistics().rows
            #expect(try ledger.statistics().rows == counted, "round \(round)")
            most = max(most, counted)
        }
        let left = try reader.statistics().rows
        #expect(most > 100 && left < most, "keys written again and pruned, enough to tell")
        // Another connection's commit (an operator's sqlite3, say) is counted again.
        let other = try SQLiteLedger(path: path)
        #expect(try other.prune(confirmedBefore: .max) == Int(left))
        #expect(try ledger.statistics().rows == reader.statistics().rows)
        #expect(try ledger.statistics().rows == 0 && left > 0)
    }

    @Test func theFileIsMadeReadableByItsOwnerAloneAndSurvivesAReopen() throws {
        do {
            let ledger = try SQLiteLedger(path: path)
            try ledger.record([Self.record("k", version: 3)])
            try ledger.setCatchUpMark(42)
        }
        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600, "it holds appAccountTokens: no producer in group txrecon reads it")
        let reopened = try SQLiteLedger(path: path)
        #expect(try reopened.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 3))
        #expect(try reopened.catchUpMark() == 42)
        #expect(try reopened.statistics().bytes > 0)
    }

    @Test func aReaderNeverCreatesTheLedger() {
        #expect(throws: LedgerError.self) { try SQLiteLedger(path: path, access: .readOnly) }
        #expect(access(path, F_OK) != 0)
    }

    @Test func aReaderSeesWhatTheWriterCommitted() throws {
        let writer = try SQLiteLedger(path: path)
        try writer.record([Self.record("k", version: 3)])
        let reader = try SQLiteLedger(path: path, access: .readOnly)
        #expect(try reader.records(of: ItemKey("k")!).count == 1)
        try writer.record([Self.record("k", version: 4)])
        #expect(try reader.confirmedVersion(at: "backend", of: ItemKey("k")!) == ItemVersion(primary: 4))
    }

    @Test func aFileThatIsNoDatabaseIsReportedAsCorruption() throws {
        _ = directory.write(String(repeating: "not a database, ", count: 512), to: "ledger.sqlite3")
        do {
            _ = try SQLiteLedger(path: path)
            Issue.record("opened a file that is no database")
        } catch {
            #expect(error.isCorruption, "\(error)")
        }
    }

    @Test func aLedgerOfSchemaOneIsMigratedKeepingItsRowsAndMark() throws {
        // Version 1 as the first release made it: an idempotency_key column.
        do {
            let database = try SQLiteDatabase(path: path, access: .readWriteCreate)
            try database.execute("""
                CREATE TABLE confirmations (
                    destination TEXT NOT NULL, key TEXT NOT NULL, version_primary INTEGER NOT NULL,
                    version_revoked INTEGER NOT NULL, version_secondary INTEGER NOT NULL,
                    confirmed_at INTEGER NOT NULL, attempt INTEGER NOT NULL, idempotency_key TEXT NOT NULL,
                    confirmation TEXT NOT NULL, kind TEXT NOT NULL, transaction_id TEXT,
                    original_transaction_id TEXT, app_transaction_id TEXT, app_account_token TEXT,
                    product_id TEXT, bundle_id TEXT, environment TEXT, expires_date INTEGER,
                    web_order_line_item_id TEXT, notification_type TEXT, subtype TEXT,
                    PRIMARY KEY (destination, key)
                ) WITHOUT ROWID;
                CREATE INDEX confirmations_by_original_transaction
                    ON confirmations (original_transaction_id) WHERE original_transaction_id IS NOT NULL;
                CREATE INDEX confirmations_by_time ON confirmations (confirmed_at);
                CREATE TABLE marks (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
                INSERT INTO confirmations VALUES ('backend', '2000000001', 10, 1, 0, 1800000000000, 2,
                    '2000000001:10r', 'HTTP 200', 'appstore.transaction', '2000000001', '1000', '7001', 'b1c2',
                    'com.example.monthly', 'com.example.app', 'Sandbox', 1800000600000, '9001', NULL, NULL);
                INSERT INTO marks VALUES ('catch-up', 42);
                PRAGMA user_version = 1;
                """)
        }
        let ledger = try SQLiteLedger(path: path)
        var kept = Self.record("2000000001", version: 10, revoked: true, token: "b1c2")
        #expect(try ledger.records(of: ItemKey("2000000001")!) == [kept])
        #expect(try ledger.records(of: ItemKey("2000000001")!).first?.idempotencyKey == "2000000001:10r",
                "the key it was sent under, now derived")
        #expect(try ledger.history(LedgerQuery(originalTransactionId: "1000")) == [kept])
        #expect(try ledger.catchUpMark() == 42)
        kept.version = ItemVersion(primary: 11)
        try ledger.record([kept, Self.record("2000000001", version: 9)])
        #expect(try ledger.confirmedVersion(at: "backend", of: ItemKey("2000000001")!) == ItemVersion(primary: 11))
        #expect(try SQLiteLedger(path: path, access: .readOnly).records(of: ItemKey("2000000001")!) == [kept],
                "a reader of this release reads the migrated file")
    }

    @Test func theContentDigestsConfirmedAreKeptAndReplacedWithTheirVersion() throws {
        let ledger = try SQLiteLedger(path: path)
        var record = Self.record("2000000001", version: 10)
        record.identity.transactionDigest = -4_611_686_018_427_387_904
        record.identity.renewalDigest = 77
        try ledger.record([record])
        #expect(try ledger.records(of: ItemKey("2000000001")!) == [record])
        var newer = Self.record("2000000001", version: 11)
        newer.identity.transactionDigest = 5
        try ledger.record([newer])
        #expect(try ledger.records(of: ItemKey("2000000001")!).first?.identity.renewalDigest == nil,
                "a newer confirmation without renewal info says nothing of one")
        #expect(try ledger.records(of: ItemKey("2000000001")!).first?.identity.transactionDigest == 5)
    }

    @Test func aLedgerOfSchemaTwoGainsTheDigestColumnsAndKeepsItsRows() throws {
        do {
            let ledger = try SQLiteLedger(path: path)
            try ledger.record([Self.record("2000000001", version: 10)])
        }
        do {
            // Schema 2 as the release before made it: no digest columns.
            let database = try SQLiteDatabase(path: path, access: .readWriteCreate)
            try database.execute("""
                ALTER TABLE confirmations DROP COLUMN transaction_digest;
                ALTER TABLE confirmations DROP COLUMN renewal_digest;
                PRAGMA user_version = 2;
                """)
        }
        #expect(throws: LedgerError.self, "a reader does not migrate") {
            try SQLiteLedger(path: path, access: .readOnly)
        }
        let ledger = try SQLiteLedger(path: path)
        #expect(try ledger.records(of: ItemKey("2000000001")!) == [Self.record("2000000001", version: 10)])
        var record = Self.record("2000000002", version: 3)
        record.identity.transactionDigest = 9
        try ledger.record([record])
        #expect(try ledger.records(of: ItemKey("2000000002")!) == [record])
    }

    @Test func aLedgerOfANewerSchemaIsRefusedNotRewritten() throws {
        do {
            let database = try SQLiteDatabase(path: path, access: .readWriteCreate)
            try database.execute("PRAGMA user_version = 99")
        }
        do {
            _ = try SQLiteLedger(path: path)
            Issue.record("opened a ledger of a later release")
        } catch {
            #expect(error.message.contains("newer"), "\(error)")
        }
    }
}
