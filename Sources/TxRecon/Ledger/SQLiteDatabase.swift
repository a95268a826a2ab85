// SQLiteDatabase: one connection to an SQLite database (Debian's libsqlite3),
// as thin as the ledger needs: open with the pragmas it runs under, run
// statements, prepared statements with typed binds and columns, and
// transactions. No SQL of the ledger's own lives here (SQLiteLedger).
//
// A connection is used by one thread at a time (opened SQLITE_OPEN_NOMUTEX,
// the library's multi-thread mode): not Sendable on purpose; whoever shares
// one serialises its use. Failures are thrown as `LedgerError` with SQLite's
// own message and the file's path; nothing is logged here.
import CSQLite

/// Why a ledger operation failed: what was done, SQLite's result code and
/// message, and the database's path.
package struct LedgerError: Error, Sendable, Equatable, CustomStringConvertible {
    var operation: String
    package var path: String
    /// SQLite's (extended) result code; 0 for a failure of txrecon's own.
    var code: Int32
    var message: String

    package var description: String { "\(operation) \(path): \(message)" }

    /// The primary result code (SQLITE_BUSY, SQLITE_CORRUPT, …).
    var primary: Int32 { code & 0xFF }

    /// The file is not a database, or is damaged: rebuild it from done/.
    var isCorruption: Bool { primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB }
    /// Another process holds a lock on it longer than the busy timeout.
    var isBusy: Bool { primary == SQLITE_BUSY || primary == SQLITE_LOCKED }
    /// The file system is full (or over quota): retry once there is room.
    var isFull: Bool { primary == SQLITE_FULL }
    /// The file could not be opened: missing (a reader never creates it)
    /// or not permitted.
    package var isUnopenable: Bool { primary == SQLITE_CANTOPEN || primary == SQLITE_PERM }
}

package final class SQLiteDatabase {
    package enum Access: Sendable {
        /// Created when missing (the daemon).
        case readWriteCreate
        /// Read only, never created (the command line while the daemon runs).
        case readOnly
        /// Read only, and written nowhere, not even the write-ahead log's
        /// index beside the file (SQLite's `immutable`): what the file holds
        /// as last checkpointed, for a dry run that must leave no file owned
        /// by whoever ran it.
        case snapshot
    }

    let path: String
    private var handle: OpaquePointer?

    /// SQLite's process-wide settings, made once before the first
    /// connection opens (a static's initializer runs once, thread-safely):
    /// no memory statistics. Their cost, measured: bench/FINDINGS.md.
    private static let configuredOnce: Void = { _ = txrecon_sqlite_disable_memory_statistics() }()

    /// Opens `path`. `busyTimeout`: how long a statement waits for another
    /// connection's lock before failing with SQLITE_BUSY.
    init(path: String, access: Access, busyTimeout: Duration = .seconds(5)) throws(LedgerError) {
        _ = Self.configuredOnce
        self.path = path
        var flags = SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE
        switch access {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readOnly, .snapshot: flags |= SQLITE_OPEN_READONLY
        }
        var name = path
        if access == .snapshot {
            flags |= SQLITE_OPEN_URI
            let escaped = path.replacingPercentEncodable()
            name = "file:\(escaped)?immutable=1"
        }
        var opened: OpaquePointer?
        let result = sqlite3_open_v2(name, &opened, flags, nil)
        handle = opened
        guard result == SQLITE_OK else {
            let error = failure("open", result)
            sqlite3_close_v2(opened)
            handle = nil
            throw error
        }
        sqlite3_extended_result_codes(opened, 1)
        sqlite3_busy_timeout(opened, Int32(clamping: busyTimeout.milliseconds))
    }

    deinit {
        // Statements are finalized by their owners first (they hold the
        // database); close_v2 closes for good once the last one is.
        sqlite3_close_v2(handle)
    }

    /// Runs `sql`, one or more statements without results.
    func execute(_ sql: String) throws(LedgerError) {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite3_exec(handle, sql, nil, nil, &message)
        defer { sqlite3_free(message) }
        guard result == SQLITE_OK else {
            throw LedgerError(operation: "run SQL on", path: path, code: result,
                              message: message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(result)))
        }
    }

    /// The single integer a query such as `PRAGMA page_count` answers.
    func integer(_ sql: String) throws(LedgerError) -> Int64 {
        let statement = try prepare(sql)
        guard try statement.step() else { return 0 }
        return statement.int64(0)
    }

    /// The statement for `sql` from `statements`, reset for a new use, or
    /// prepared once and kept there: for a connection's repeated statements.
    func statement(_ sql: String, cachedIn statements: inout [String: Statement]) throws(LedgerError) -> Statement {
        if let prepared = statements[sql] {
            prepared.reset()
            return prepared
        }
        let prepared = try prepare(sql)
        statements[sql] = prepared
        return prepared
    }

    func prepare(_ sql: String) throws(LedgerError) -> Statement {
        var prepared: OpaquePointer?
        let result = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard result == SQLITE_OK, let prepared else { throw failure("prepare a statement for", result) }
        return Statement(prepared, database: self)
    }

    /// Runs `body` in one transaction (BEGIN IMMEDIATE: the write lock is
    /// taken at once, so a busy database fails here, not half-way through);
    /// rolled back if it throws.
    func transaction<T>(_ body: () throws(LedgerError) -> T) throws(LedgerError) -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            // ignored: the error that made us roll back is the one to report
            _ = try? execute("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the last statement.
    var changes: Int { Int(sqlite3_changes(handle)) }

    fileprivate func failure(_ operation: String, _ result: Int32) -> LedgerError {
        let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(result))
        return LedgerError(operation: operation, path: path, code: handle.map { sqlite3_extended_errcode($0) } ?? result,
                           message: message)
    }

    /// A prepared statement; bind, step through its rows, reset to run it
    /// again. Holds its database open.
    final class Statement {
        private let statement: OpaquePointer
        private let database: SQLiteDatabase
        /// Where text parameters are copied once and bound in place
        /// (SQLITE_STATIC), so SQLite does not copy each into memory of its
        /// own (a malloc and a free per value: a tenth of the writer's CPU
        /// per row). Empty until `reserveText`; a value that does not fit is
        /// bound as a copy, as before.
        private var text = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        private var textUsed = 0

        fileprivate init(_ statement: OpaquePointer, database: SQLiteDatabase) {
            self.statement = statement
            self.database = database
        }

        deinit {
            // Finalized first: its bindings point into `text`.
            sqlite3_finalize(statement)
            text.deallocate()
        }

        /// Room for `bytes` of UTF-8 that the text parameters bound from now
        /// on are copied into, replacing the previous run's: bind every text
        /// parameter anew before the next step.
        func reserveText(_ bytes: Int) {
            textUsed = 0
            guard bytes > text.count else { return }
            // Bindings into the old room would dangle: none survive it.
            sqlite3_clear_bindings(statement)
            text.deallocate()
            text = .allocate(byteCount: max(bytes, 2 * text.count), alignment: 1)
        }

        /// Parameters are numbered from 1, as SQLite numbers them.
        func bind(_ index: Int32, _ value: Int64?) {
            if let value { sqlite3_bind_int64(statement, index, value) } else { sqlite3_bind_null(statement, index) }
        }

        func bind(_ index: Int32, _ value: String?) {
            guard let value else { sqlite3_bind_null(statement, index); return }
            value.withUTF8Bytes { bytes in
                let count = bytes.count
                if let room = text.baseAddress, textUsed + count <= text.count {
                    let start = room + textUsed
                    if let source = bytes.baseAddress { start.copyMemory(from: source, byteCount: count) }
                    textUsed += count
                    // nil is SQLITE_STATIC: the bytes stay where they are until the next reserveText.
                    sqlite3_bind_text(statement, index, start.assumingMemoryBound(to: CChar.self), Int32(count), nil)
                } else {
                    _ = bytes.withMemoryRebound(to: CChar.self) {
                        sqlite3_bind_text(statement, index, $0.baseAddress, Int32($0.count),
                                          txrecon_sqlite_transient())
                    }
                }
            }
        }

        /// Runs the statement to its next row; false when it is done.
        func step() throws(LedgerError) -> Bool {
            let result = sqlite3_step(statement)
            switch result {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw database.failure("query", result)
            }
        }

        /// Runs a statement that returns no rows.
        func run() throws(LedgerError) {
            while try step() {}
        }

        /// Ready to run again; bindings are kept until set anew.
        func reset() {
            sqlite3_reset(statement)
        }

        /// Columns are numbered from 0, as SQLite numbers them.
        func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }

        func optionalInt64(_ column: Int32) -> Int64? {
            sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
        }

        func string(_ column: Int32) -> String? {
            guard let text = sqlite3_column_text(statement, column) else { return nil }
            let count = Int(sqlite3_column_bytes(statement, column))
            return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
        }
    }
}

extension String {
    /// This path with the characters an SQLite URI gives a meaning (`%`,
    /// `?`, `#`) percent-encoded.
    fileprivate func replacingPercentEncodable() -> String {
        var text = ""
        for character in self {
            switch character {
            case "%": text += "%25"
            case "?": text += "%3f"
            case "#": text += "%23"
            default: text.append(character)
            }
        }
        return text
    }
}
