// ReconcileState: `<spool>/reconcile/`, where `txrecon reconcile` keeps its
// state between runs:
//
//   state.sqlite3   when each customer was last checked, and the marks
//                   (first run; the start of an --all run not yet finished)
//   last-run        the last run's `ReconcileReport` (JSON), for `txrecon status`
//   import-checkpoint   where `txrecon import` is in its input (ImportCheckpoint)
//   lock            flock(2)ed for the whole run: one reconcile or import at a time
//
// Beside the sweep's state, for the same reasons (status finds it from the
// configuration alone; one ReadWritePaths= covers it). A customer is marked
// checked only after everything spooled for it is durable in new/, so a
// kill at any instant leaves it due: the next run asks again, and what was
// already spooled compares as the same snapshot (the daemon's supersede
// rule absorbs a copy). The database is 0600 (it names customers); the
// commits are not fsynced one by one (synchronous=NORMAL): a power cut may
// forget the last few marks, which costs those customers one more request.
//
// Failures are `SweepStop`s naming the path and what to do. Blocks on disk
// I/O: the reconcile's thread only.
import Glibc

/// What the reconcile remembers; the production store is
/// `ReconcileStateDirectory`.
protocol ReconcileStateStore: AnyObject {
    /// When `customer` was last checked, ms since 1970.
    func lastChecked(_ customer: String) throws(SweepStop) -> Int64?
    func markChecked(_ customer: String, at: Int64) throws(SweepStop)
    /// The named mark (`first-run`, `all-started`), ms since 1970.
    func mark(_ name: String) throws(SweepStop) -> Int64?
    func setMark(_ name: String, _ value: Int64?) throws(SweepStop)
}

/// The state as a dry run sees it: read from the database as last
/// checkpointed (SQLite's `immutable`: no lock taken, no file written), or
/// empty when there is none; nothing it is told is kept.
final class ReconcileStateSnapshot: ReconcileStateStore {
    private let database: SQLiteDatabase?

    init(layout: SpoolLayout) {
        let file = ReconcileStateDirectory.path(of: layout) + "/state.sqlite3"
        database = access(file, F_OK) == 0 ? try? SQLiteDatabase(path: file, access: .snapshot) : nil
    }

    func lastChecked(_ customer: String) throws(SweepStop) -> Int64? {
        try value("SELECT checked_at FROM checked WHERE customer = ?1", customer)
    }

    func markChecked(_ customer: String, at: Int64) {}

    func mark(_ name: String) throws(SweepStop) -> Int64? {
        try value("SELECT value FROM marks WHERE name = ?1", name)
    }

    func setMark(_ name: String, _ value: Int64?) {}

    private func value(_ sql: String, _ key: String) throws(SweepStop) -> Int64? {
        guard let database else { return nil }
        do {
            let select = try database.prepare(sql)
            select.bind(1, key)
            return try select.step() ? select.int64(0) : nil
        } catch {
            throw SweepStop(kind: .failed, reason: "the reconcile's state: \(error)")
        }
    }
}

final class ReconcileStateDirectory: ReconcileStateStore {
    let path: String
    private let lockDescriptor: Int32
    private let database: SQLiteDatabase
    private var statements: [String: SQLiteDatabase.Statement] = [:]

    var lastRunPath: String { path + "/last-run" }
    var importCheckpointPath: String { path + "/import-checkpoint" }
    var databasePath: String { path + "/state.sqlite3" }

    /// `<spool>/reconcile`, or `<spool>/apps/NAME/reconcile` for an app of apps/.
    static func path(of layout: SpoolLayout) -> String { layout.stateRoot + "/reconcile" }

    /// Creates the directory and database if needed and takes the lock.
    init(layout: SpoolLayout) throws(SweepStop) {
        path = Self.path(of: layout)
        do {
            try layout.createStateRoot()
            try SpoolLayout.makeDirectory(path, mode: 0o2750)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot create the reconcile's state directory: \(error); "
                + "the spool \(layout.root) must exist and be writable by the reconcile's user")
        }
        let lockPath = path + "/lock"
        do {
            lockDescriptor = try LockFile.acquire(lockPath)
        } catch where error.code == EWOULDBLOCK {
            throw SweepStop(kind: .temporary, reason: "another txrecon reconcile or import is running on this "
                + "spool (it holds \(lockPath)); this run does nothing")
        } catch {
            throw SweepStop(kind: .failed, reason: "\(error)")
        }
        let file = path + "/state.sqlite3"
        do {
            let fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            if fd >= 0 { close(fd) }
            database = try SQLiteDatabase(path: file, access: .readWriteCreate)
            try database.execute("""
                PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
                CREATE TABLE IF NOT EXISTS checked (customer TEXT PRIMARY KEY, checked_at INTEGER NOT NULL)
                    WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS marks (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
                """)
        } catch {
            LockFile.release(lockDescriptor)
            throw SweepStop(kind: .failed, reason: "cannot open \(file): \(error); move it aside to start over "
                + "(the next runs then check every customer once more, spread over FullCycle=)")
        }
    }

    deinit {
        statements.removeAll()
        LockFile.release(lockDescriptor)
    }

    private func statement(_ sql: String) throws(LedgerError) -> SQLiteDatabase.Statement {
        try database.statement(sql, cachedIn: &statements)
    }

    private func failure(_ error: LedgerError) -> SweepStop {
        SweepStop(kind: .failed, reason: "the reconcile's state: \(error)")
    }

    func lastChecked(_ customer: String) throws(SweepStop) -> Int64? {
        do {
            let select = try statement("SELECT checked_at FROM checked WHERE customer = ?1")
            select.bind(1, customer)
            defer { select.reset() }
            return try select.step() ? select.int64(0) : nil
        } catch {
            throw failure(error)
        }
    }

    func markChecked(_ customer: String, at: Int64) throws(SweepStop) {
        do {
            let upsert = try statement("""
                INSERT INTO checked (customer, checked_at) VALUES (?1, ?2)
                ON CONFLICT (customer) DO UPDATE SET checked_at = excluded.checked_at
                """)
            upsert.bind(1, customer)
            upsert.bind(2, at)
            try upsert.run()
        } catch {
            throw failure(error)
        }
    }

    func mark(_ name: String) throws(SweepStop) -> Int64? {
        do {
            let select = try statement("SELECT value FROM marks WHERE name = ?1")
            select.bind(1, name)
            defer { select.reset() }
            return try select.step() ? select.int64(0) : nil
        } catch {
            throw failure(error)
        }
    }

    func setMark(_ name: String, _ value: Int64?) throws(SweepStop) {
        do {
            if let value {
                let upsert = try statement("""
                    INSERT INTO marks (name, value) VALUES (?1, ?2)
                    ON CONFLICT (name) DO UPDATE SET value = excluded.value
                    """)
                upsert.bind(1, name)
                upsert.bind(2, value)
                try upsert.run()
            } else {
                let delete = try statement("DELETE FROM marks WHERE name = ?1")
                delete.bind(1, name)
                try delete.run()
            }
        } catch {
            throw failure(error)
        }
    }

    /// Where the import of `input` (its digest) is; the start when the
    /// checkpoint is of another input, missing or unreadable.
    func importCheckpoint(input: String) -> ImportCheckpoint {
        guard let bytes = try? SystemCall.readFile(importCheckpointPath, limit: 1 << 20),
              let checkpoint = ImportCheckpoint(json: bytes), checkpoint.input == input
        else { return ImportCheckpoint(input: input) }
        return checkpoint
    }

    /// Makes `checkpoint` durable; nil removes it (the import is done).
    func saveImportCheckpoint(_ checkpoint: ImportCheckpoint?) throws(SweepStop) {
        do {
            if let checkpoint {
                try SystemCall.replaceFile(importCheckpointPath, checkpoint.serialized,
                                           temporaryName: importCheckpointPath + ".tmp", sync: true, mode: 0o640)
            } else {
                try SystemCall.unlinkIfPresent(importCheckpointPath)
            }
            try SystemCall.syncDirectory(path)
        } catch {
            throw SweepStop(kind: .failed, reason: "cannot save the import's checkpoint: \(error); the next run "
                + "imports this customer again")
        }
    }

    /// Records `report` for `txrecon status`.
    func saveLastRun(_ report: ReconcileReport) throws(SpoolError) {
        try SystemCall.replaceFile(lastRunPath, report.json.serialized, temporaryName: lastRunPath + ".tmp",
                                   sync: true, mode: 0o640)
        try SystemCall.syncDirectory(path)
    }
}
