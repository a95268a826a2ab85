// SQLiteLedger: the Ledger in one SQLite file (WAL mode), the embedded
// database every operator can open with `sqlite3`.
//
// One row per destination and key, the last version confirmed: a
// WITHOUT ROWID table on (destination, key), so the supersede check is one
// B-tree descent; partial indexes on the identities `txrecon history`
// searches by (only rows that have them pay), and one on the confirmation
// time for --since/--until and LedgerRetention=. Writes are upserts that
// never move a key back to an older version, 32 rows a run. A row keeps no
// idempotency key: it follows from key and version (LedgerRecord). A
// connection counts the rows once and then keeps the count as it writes,
// counting again only when another connection committed meanwhile (a count
// reads a whole index: at ten million rows 0.2 s from the OS's cache,
// seconds from disk, and the writer ran it once a minute).
// synchronous=FULL: a committed batch is on disk when `record` returns,
// which is what lets DoneReaper remove the done/ files it covers. The page
// cache is bounded per connection (`Cache`: 2 MiB for the writer, 1 MiB for
// intake's look-ups, 256 KiB for a scan, 8 MiB for a command's queries),
// and memory-mapped I/O is off, so the daemon's RSS does not grow with the
// ledger: at ten million rows its indexes alone are gigabytes, and a
// look-up of a random key misses any cache the daemon could afford (the
// OS's page cache keeps what is hot).
//
// A connection is used by one thread at a time. Reports: LedgerError.
import Glibc

package final class SQLiteLedger: Ledger {
    /// The schema this release writes; an older file is migrated at open,
    /// a newer one refused (a downgrade: the older release rebuilds its own).
    /// 2: no idempotency_key column (it follows from key and version).
    /// 3: transaction_digest and renewal_digest (ContentDigest), for reconciliation.
    static let schemaVersion: Int64 = 3
    /// SQLite's page cache of one connection, by what it is for, in KiB.
    package enum Cache: Int {
        /// The daemon's writer: the upserts' paths down the B-trees.
        case writer = 2048
        /// Intake's supersede look-ups (most are answered by the key filter).
        case lookup = 1024
        /// One pass over an index (the key filter's build): nothing is read twice.
        case scan = 256
        /// A command's queries (`history`, `show`, `status`), which end with it.
        case command = 8192
    }

    package let path: String
    private let database: SQLiteDatabase
    private var statements: [String: SQLiteDatabase.Statement] = [:]
    /// The hot paths' statements, held rather than found by their text
    /// (hashing a kilobyte of SQL per call cost a microsecond).
    private var upserts: [UpsertShape: SQLiteDatabase.Statement] = [:]
    /// Inserts of new keys only, by rows per run.
    private var inserts: [Int: SQLiteDatabase.Statement] = [:]
    /// The rows the table holds, once counted: kept by `record` and
    /// `prune`, and counted again when `PRAGMA data_version` says another
    /// connection committed since (an operator's `sqlite3`, say).
    private var rowCount: (rows: Int64, dataVersion: Int64)?
    private var lookup: SQLiteDatabase.Statement?

    /// Opens (creating it, mode 0600, when `access` allows) the ledger at
    /// `path` and checks its schema.
    package init(path: String, access: SQLiteDatabase.Access = .readWriteCreate,
                 cache: Cache = .command) throws(LedgerError) {
        self.path = path
        if access == .readWriteCreate { try SQLiteLedger.createPrivately(path) }
        database = try SQLiteDatabase(path: path, access: access)
        try database.execute("PRAGMA cache_size = -\(cache.rawValue); PRAGMA mmap_size = 0;")
        if access == .readWriteCreate {
            try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
            try migrate()
        } else {
            let version = try database.integer("PRAGMA user_version")
            guard version == SQLiteLedger.schemaVersion else {
                throw LedgerError(operation: "read", path: path, code: 0,
                                  message: "its schema is version \(version), this txrecon reads \(SQLiteLedger.schemaVersion)")
            }
        }
    }

    /// The file, created 0600 before SQLite opens it (SQLite would create
    /// it with the process's umask): it holds appAccountTokens, personal
    /// data no producer in group txrecon may read.
    private static func createPrivately(_ path: String) throws(LedgerError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            throw LedgerError(operation: "create", path: path, code: 0, message: String(cString: strerror(errno)))
        }
        close(fd)
    }

    private func migrate() throws(LedgerError) {
        let version = try database.integer("PRAGMA user_version")
        guard version <= SQLiteLedger.schemaVersion else {
            throw LedgerError(operation: "open", path: path, code: 0,
                              message: "its schema is version \(version), newer than this txrecon's "
                                  + "\(SQLiteLedger.schemaVersion) (written by a later release)")
        }
        guard version < SQLiteLedger.schemaVersion else { return }
        try database.transaction { () throws(LedgerError) in
            if version == 1 {
                // Rewrites the table once (seconds per million rows,
                // on the writer's thread: look-ups answer from done/ meanwhile).
                try database.execute("ALTER TABLE confirmations DROP COLUMN idempotency_key")
            }
            if version == 1 || version == 2 {
                // A nullable column rewrites no row: the rows of earlier
                // releases read as "content not known".
                try database.execute("""
                    ALTER TABLE confirmations ADD COLUMN transaction_digest INTEGER;
                    ALTER TABLE confirmations ADD COLUMN renewal_digest INTEGER;
                    """)
            }
            try database.execute("""
                CREATE TABLE IF NOT EXISTS confirmations (
                    destination TEXT NOT NULL,
                    key TEXT NOT NULL,
                    version_primary INTEGER NOT NULL,
                    version_revoked INTEGER NOT NULL,
                    version_secondary INTEGER NOT NULL,
                    confirmed_at INTEGER NOT NULL,
                    attempt INTEGER NOT NULL,
                    confirmation TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    transaction_id TEXT,
                    original_transaction_id TEXT,
                    app_transaction_id TEXT,
                    app_account_token TEXT,
                    product_id TEXT,
                    bundle_id TEXT,
                    environment TEXT,
                    expires_date INTEGER,
                    web_order_line_item_id TEXT,
                    notification_type TEXT,
                    subtype TEXT,
                    transaction_digest INTEGER,
                    renewal_digest INTEGER,
                    PRIMARY KEY (destination, key)
                ) WITHOUT ROWID;
                CREATE INDEX IF NOT EXISTS confirmations_by_original_transaction
                    ON confirmations (original_transaction_id) WHERE original_transaction_id IS NOT NULL;
                CREATE INDEX IF NOT EXISTS confirmations_by_app_account_token
                    ON confirmations (app_account_token) WHERE app_account_token IS NOT NULL;
                CREATE INDEX IF NOT EXISTS confirmations_by_app_transaction
                    ON confirmations (app_transaction_id) WHERE app_transaction_id IS NOT NULL;
                CREATE INDEX IF NOT EXISTS confirmations_by_product
                    ON confirmations (product_id, confirmed_at) WHERE product_id IS NOT NULL;
                CREATE INDEX IF NOT EXISTS confirmations_by_time ON confirmations (confirmed_at);
                CREATE TABLE IF NOT EXISTS marks (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
                PRAGMA user_version = \(SQLiteLedger.schemaVersion);
                """)
        }
    }

    /// The statement for `sql`, prepared once per connection.
    private func statement(_ sql: String) throws(LedgerError) -> SQLiteDatabase.Statement {
        try database.statement(sql, cachedIn: &statements)
    }

    private static let columnNames = [
        "destination", "key", "version_primary", "version_revoked", "version_secondary", "confirmed_at", "attempt",
        "confirmation", "kind", "transaction_id", "original_transaction_id", "app_transaction_id",
        "app_account_token", "product_id", "bundle_id", "environment", "expires_date", "web_order_line_item_id",
        "notification_type", "subtype", "transaction_digest", "renewal_digest",
    ]
    private static let columns = columnNames.joined(separator: ", ")

    /// Rows one run of the upsert inserts: SQLite opens the table's and
    /// every index's cursors once per run, which for one row cost as much
    /// as the row itself. A batch's rest is written a row at a time.
    private static let rowsPerRun = 32

    /// An upsert statement: how many rows one run takes, and whether an
    /// equal version replaces the row.
    private struct UpsertShape: Hashable {
        var rows: Int
        var replacingEqual: Bool
    }

    /// Writes `records` in one transaction, in the table's key order: keys
    /// come in no order, and in order each page of the B-tree is changed
    /// once by the rows that fall into it, and is not spilled from the
    /// page cache into the WAL before a later row changes it again. Rows
    /// of one key keep their order (the later one is the last word).
    func record(_ records: [LedgerRecord], replacingEqual: Bool = true) throws(LedgerError) {
        guard !records.isEmpty else { return }
        // The order as indices: a sorted copy of the records would hold a
        // second batch in memory while it is written.
        let order = records.indices.sorted { a, b in
            (records[a].destination, records[a].key, a) < (records[b].destination, records[b].key, b)
        }
        var inserted: Int64 = 0
        try database.transaction { () throws(LedgerError) in
            var start = order.startIndex
            while start < order.endIndex {
                let rows = order.endIndex - start >= Self.rowsPerRun ? Self.rowsPerRun : 1
                let run = order[start..<start + rows]
                // A run of new keys (a drain's, nearly every one) is
                // inserted, which counts the rows it adds; one with a key
                // the table holds is then written again as upserts.
                try write(run, of: records, with: try insertStatement(rows: rows))
                let added = database.changes
                if added < rows {
                    try write(run, of: records,
                              with: try upsertStatement(UpsertShape(rows: rows, replacingEqual: replacingEqual)))
                }
                inserted += Int64(added)
                start += rows
            }
        }
        rowCount?.rows += inserted
    }

    /// Runs `statement` once with the rows `run` picks out of `records`.
    private func write(_ run: ArraySlice<Int>, of records: [LedgerRecord],
                       with statement: SQLiteDatabase.Statement) throws(LedgerError) {
        statement.reset()
        statement.reserveText(run.reduce(0) { $0 + Self.textBytes(of: records[$1]) })
        for (row, index) in run.enumerated() {
            bind(records[index], to: statement, from: Int32(row * Self.columnNames.count))
        }
        try statement.run()
    }

    /// Inserts `rows` rows a run, leaving a key the table holds as it is.
    private func insertStatement(rows: Int) throws(LedgerError) -> SQLiteDatabase.Statement {
        if let prepared = inserts[rows] { return prepared }
        let insert = try database.prepare("""
            INSERT INTO confirmations (\(SQLiteLedger.columns)) VALUES \(Self.valueRows(rows))
            ON CONFLICT (destination, key) DO NOTHING
            """)
        inserts[rows] = insert
        return insert
    }

    /// `(?1, …, ?22), (?23, …)`: the parameters of `rows` rows.
    private static func valueRows(_ rows: Int) -> String {
        let width = columnNames.count
        return (0..<rows).map { row in "(" + (1...width).map { "?\(row * width + $0)" }.joined(separator: ", ") + ")" }
            .joined(separator: ", ")
    }

    private func upsertStatement(_ shape: UpsertShape) throws(LedgerError) -> SQLiteDatabase.Statement {
        if let prepared = upserts[shape] { return prepared }
        // An equal version replaces the row too: a replay's confirmation is
        // the key's last, which LedgerRetention= counts from. A key twice in
        // one run is two rows in turn, as in two runs.
        let upsert = try database.prepare("""
            INSERT INTO confirmations (\(SQLiteLedger.columns))
            VALUES \(Self.valueRows(shape.rows))
            ON CONFLICT (destination, key) DO UPDATE SET
                version_primary = excluded.version_primary, version_revoked = excluded.version_revoked,
                version_secondary = excluded.version_secondary, confirmed_at = excluded.confirmed_at,
                attempt = excluded.attempt, confirmation = excluded.confirmation, kind = excluded.kind,
                transaction_id = excluded.transaction_id,
                original_transaction_id = excluded.original_transaction_id,
                app_transaction_id = excluded.app_transaction_id, app_account_token = excluded.app_account_token,
                product_id = excluded.product_id, bundle_id = excluded.bundle_id,
                environment = excluded.environment, expires_date = excluded.expires_date,
                web_order_line_item_id = excluded.web_order_line_item_id,
                notification_type = excluded.notification_type, subtype = excluded.subtype,
                transaction_digest = excluded.transaction_digest, renewal_digest = excluded.renewal_digest
            WHERE (excluded.version_primary, excluded.version_revoked, excluded.version_secondary)
                \(shape.replacingEqual ? ">=" : ">") (version_primary, version_revoked, version_secondary)
            """)
        upserts[shape] = upsert
        return upsert
    }

    /// The UTF-8 bytes of `record`'s text columns: what `bind` copies.
    private static func textBytes(of record: LedgerRecord) -> Int {
        func count(_ text: String?) -> Int { text?.utf8.count ?? 0 }
        let identity = record.identity
        return count(record.destination) + count(record.key.rawValue) + count(record.confirmation)
            + count(record.kind.rawValue) + count(identity.transactionId)
            + count(identity.originalTransactionId) + count(identity.appTransactionId)
            + count(identity.appAccountToken) + count(identity.productId) + count(identity.bundleId)
            + count(identity.environment) + count(identity.webOrderLineItemId) + count(identity.notificationType)
            + count(identity.subtype)
    }

    /// Binds `record` to the parameters after `offset` (its row's in a run).
    private func bind(_ record: LedgerRecord, to statement: SQLiteDatabase.Statement, from offset: Int32) {
        statement.bind(offset + 1, record.destination)
        statement.bind(offset + 2, record.key.rawValue)
        statement.bind(offset + 3, record.version.primary)
        statement.bind(offset + 4, record.version.revoked ? 1 : 0)
        statement.bind(offset + 5, record.version.secondary)
        statement.bind(offset + 6, record.confirmedAt)
        statement.bind(offset + 7, Int64(record.attempt))
        statement.bind(offset + 8, record.confirmation)
        statement.bind(offset + 9, record.kind.rawValue)
        let identity = record.identity
        statement.bind(offset + 10, identity.transactionId)
        statement.bind(offset + 11, identity.originalTransactionId)
        statement.bind(offset + 12, identity.appTransactionId)
        statement.bind(offset + 13, identity.appAccountToken)
        statement.bind(offset + 14, identity.productId)
        statement.bind(offset + 15, identity.bundleId)
        statement.bind(offset + 16, identity.environment)
        statement.bind(offset + 17, identity.expiresDate)
        statement.bind(offset + 18, identity.webOrderLineItemId)
        statement.bind(offset + 19, identity.notificationType)
        statement.bind(offset + 20, identity.subtype)
        statement.bind(offset + 21, identity.transactionDigest)
        statement.bind(offset + 22, identity.renewalDigest)
    }

    func confirmedVersion(at destination: String, of key: ItemKey) throws(LedgerError) -> ItemVersion? {
        let lookup: SQLiteDatabase.Statement
        if let prepared = self.lookup {
            lookup = prepared
        } else {
            lookup = try database.prepare("""
                SELECT version_primary, version_revoked, version_secondary, kind, expires_date FROM confirmations
                WHERE destination = ?1 AND key = ?2
                """)
            self.lookup = lookup
        }
        lookup.bind(1, destination)
        lookup.bind(2, key.rawValue)
        defer { lookup.reset() }
        guard try lookup.step() else { return nil }
        let recorded = ItemVersion(primary: lookup.int64(0), revoked: lookup.int64(1) != 0, secondary: lookup.int64(2))
        // A kind this txrecon does not know is no receipt's purchase.
        guard let kind = lookup.string(3).flatMap(ItemKind.init(rawValue:)) else { return recorded }
        return ReceiptItems.confirmedVersion(recorded: recorded, kind: kind, expiresDate: lookup.optionalInt64(4))
    }

    package func records(of key: ItemKey) throws(LedgerError) -> [LedgerRecord] {
        let query = try statement(SQLiteLedger.recordsOfKey)
        query.bind(1, key.rawValue)
        return try rows(of: query)
    }

    /// Every destination's row of key ?1, in destination order. The primary
    /// key leads with the destination, so `WHERE key = ?1` alone scans the
    /// whole table (a second at three million rows, once per snapshot a
    /// reconcile judges): the destinations are walked instead, each found
    /// from the last by one search of the primary key (d), and each
    /// destination's row by another.
    static let recordsOfKey = """
        WITH RECURSIVE d(destination) AS (
            SELECT MIN(destination) FROM confirmations
            UNION ALL
            SELECT (SELECT MIN(c.destination) FROM confirmations c WHERE c.destination > d.destination)
            FROM d WHERE d.destination IS NOT NULL
        )
        SELECT \(columns) FROM confirmations
        WHERE destination IN (SELECT destination FROM d WHERE destination IS NOT NULL) AND key = ?1
        ORDER BY destination
        """

    package func history(_ query: LedgerQuery) throws(LedgerError) -> [LedgerRecord] {
        // Only the conditions given, each written out: "?1 IS NULL OR x = ?1"
        // would serve every query with one statement, but SQLite's planner
        // then uses none of the indexes and scans every row (seconds at ten
        // million). The statement for each combination is prepared once.
        let conditions: [(column: String, comparison: String, text: String?, number: Int64?)] = [
            ("original_transaction_id", "=", query.originalTransactionId, nil),
            ("app_account_token", "=", query.appAccountToken, nil),
            ("app_transaction_id", "=", query.appTransactionId, nil),
            ("product_id", "=", query.productId, nil),
            ("destination", "=", query.destination, nil),
            ("confirmed_at", ">=", nil, query.since),
            ("confirmed_at", "<", nil, query.until),
        ].filter { $0.text != nil || $0.number != nil }
        let filter = conditions.enumerated().map { "\($1.column) \($1.comparison) ?\($0 + 1)" }
        let select = try statement("SELECT \(SQLiteLedger.columns) FROM confirmations"
                                   + (filter.isEmpty ? "" : " WHERE " + filter.joined(separator: " AND "))
                                   + " ORDER BY confirmed_at, destination, key LIMIT ?\(conditions.count + 1)")
        for (index, condition) in conditions.enumerated() {
            if let text = condition.text { select.bind(Int32(index + 1), text) } else { select.bind(Int32(index + 1), condition.number) }
        }
        select.bind(Int32(conditions.count + 1), Int64(query.limit))
        return try rows(of: select)
    }

    private func rows(of query: SQLiteDatabase.Statement) throws(LedgerError) -> [LedgerRecord] {
        defer { query.reset() }
        var records: [LedgerRecord] = []
        while try query.step() {
            guard let destination = query.string(0), let key = query.string(1).flatMap({ ItemKey($0) }),
                  let kind = query.string(8).flatMap(ItemKind.init(rawValue:)) else {
                throw LedgerError(operation: "read", path: path, code: 0,
                                  message: "a row holds a destination, key or kind this txrecon cannot read")
            }
            let identity = LedgerRecord.Identity(
                transactionId: query.string(9), originalTransactionId: query.string(10),
                appTransactionId: query.string(11), appAccountToken: query.string(12), productId: query.string(13),
                bundleId: query.string(14), environment: query.string(15), expiresDate: query.optionalInt64(16),
                webOrderLineItemId: query.string(17), notificationType: query.string(18), subtype: query.string(19),
                transactionDigest: query.optionalInt64(20), renewalDigest: query.optionalInt64(21))
            records.append(LedgerRecord(
                destination: destination, key: key,
                version: ItemVersion(primary: query.int64(2), revoked: query.int64(3) != 0, secondary: query.int64(4)),
                confirmedAt: query.int64(5), attempt: Int(query.int64(6)),
                confirmation: query.string(7) ?? "", kind: kind, identity: identity))
        }
        return records
    }

    package func forEachSubscription(bundleID: String, environment: String,
                                     _ body: (KnownSubscription) -> Void) throws(LedgerError) {
        // One pass over the originalTransactionId index, then a sort of the
        // subscriptions (SQLite's temporary B-tree), so that a customer's
        // come one after another (by appTransactionId, those without one
        // first): about 8 s a million subscriptions. MAX ignores the rows
        // that lack a value.
        let scan = try statement("""
            SELECT original_transaction_id, MAX(app_transaction_id), MAX(expires_date) FROM confirmations
            WHERE original_transaction_id IS NOT NULL AND expires_date IS NOT NULL
                AND bundle_id = ?1 AND environment = ?2
            GROUP BY original_transaction_id ORDER BY 2, 1
            """)
        scan.bind(1, bundleID)
        scan.bind(2, environment)
        defer { scan.reset() }
        while try scan.step() {
            guard let original = scan.string(0) else { continue }
            body(KnownSubscription(originalTransactionId: original, appTransactionId: scan.string(1),
                                   expiresDate: scan.int64(2)))
        }
    }

    func forEachKey(_ body: (_ destination: String, _ key: ItemKey) -> Void) throws(LedgerError) {
        // The time index holds every row's destination and key and is the
        // smallest that does: a tenth of the table's pages.
        let scan = try statement("SELECT destination, key FROM confirmations INDEXED BY confirmations_by_time")
        defer { scan.reset() }
        while try scan.step() {
            if let destination = scan.string(0), let key = scan.string(1).flatMap({ ItemKey($0) }) { body(destination, key) }
        }
    }

    func prune(confirmedBefore before: Int64) throws(LedgerError) -> Int {
        let delete = try statement("DELETE FROM confirmations WHERE confirmed_at < ?1")
        delete.bind(1, before)
        try delete.run()
        let removed = database.changes
        rowCount?.rows -= Int64(removed)
        return removed
    }

    package func statistics() throws(LedgerError) -> LedgerStatistics {
        // Read before the count: a commit between the two is counted
        // again next time, never missed.
        let version = try statement("PRAGMA data_version")
        let dataVersion = try version.step() ? version.int64(0) : 0
        version.reset()
        let rows: Int64
        if let kept = rowCount, kept.dataVersion == dataVersion {
            rows = kept.rows
        } else {
            let count = try statement("SELECT count(*) FROM confirmations")
            defer { count.reset() }
            rows = try count.step() ? count.int64(0) : 0
            rowCount = (rows, dataVersion)
        }
        var bytes: Int64 = 0
        for file in [path, path + "-wal"] {
            var info = stat()
            if stat(file, &info) == 0 { bytes += Int64(info.st_size) }
        }
        return LedgerStatistics(rows: rows, bytes: bytes)
    }

    func catchUpMark() throws(LedgerError) -> Int64 {
        let select = try statement("SELECT value FROM marks WHERE name = 'catch-up'")
        defer { select.reset() }
        return try select.step() ? select.int64(0) : 0
    }

    func setCatchUpMark(_ mark: Int64) throws(LedgerError) {
        let upsert = try statement("""
            INSERT INTO marks (name, value) VALUES ('catch-up', ?1)
            ON CONFLICT (name) DO UPDATE SET value = excluded.value
            """)
        upsert.bind(1, mark)
        try upsert.run()
    }
}
