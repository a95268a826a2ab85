// LedgerLookups: intake's connection to the ledger, for the supersede
// rule's "what did this destination last confirm?", and what happens when
// a look-up fails.
//
// A look-up that fails answers "not known", and the supersede rule reads
// done/ alone, which forgets what is older than DoneRetention=: a stale
// snapshot of a key whose done/ entry is reaped would go out as new. So a
// failure must cost as few look-ups as possible, and never all of them:
// the failed one is asked again on a fresh connection at once (a transient
// error, a connection left in a bad state), and when that fails too the
// connection is reopened by the first look-up `retryInterval` later. The
// writer's failures are not this type's: a lock or a full disk that stops
// the writer does not stop a reader, so look-ups go on answering from the
// file as it is; only a file set aside to be rebuilt closes the connection.
// Look-ups wait for the writer's first open, which creates, migrates or
// rebuilds the file: one answered before it (intake's scan at start runs
// beside it) would say "not known" of every key, and a stale snapshot of a
// key whose done/ entry is reaped would go out as new. That wait is
// milliseconds, or a migration's time (seconds per million rows) once after
// an upgrade; intake takes nothing meanwhile.
// Reports: an error entry when look-ups stop working, a notice when they
// work again.
import Dispatch
import Glibc
import Synchronization

final class LedgerLookups: Sendable {
    /// How long look-ups answer "not known" after a connection failed
    /// twice in a row, before the next one opens it again.
    static let retryInterval: Int64 = 5_000

    private enum Connection {
        /// Not connected: the next look-up connects, once the file exists
        /// (until the writer makes it, nothing was recorded).
        case closed
        case open(SQLiteLedger)
        /// Failed at `since` (ms since 1970) for `reason`.
        case failed(since: Int64, reason: String)
    }

    private let path: String
    private let log: any LogSink
    private let now: @Sendable () -> Int64
    // A Mutex holds the non-Sendable connection: one look-up at a time uses it.
    private let connection = Mutex(Connection.closed)
    /// The writer's first open was tried (or the writer is gone).
    private let opened = Atomic<Bool>(false)
    /// Signalled once then; each look-up that waited passes it on.
    private let firstOpen = DispatchSemaphore(value: 0)
    /// Told when a look-up found the file damaged (the writer rebuilds it),
    /// with the file found so, as the path named it just after.
    private let damaged = Mutex<(@Sendable (LedgerError, FileIdentity?) -> Void)?>(nil)

    init(path: String, log: any LogSink, now: @escaping @Sendable () -> Int64) {
        self.path = path
        self.log = log
        self.now = now
    }

    /// The writer tried its first open, or ended: look-ups stop waiting.
    func writerOpened() {
        guard !opened.exchange(true, ordering: .acquiringAndReleasing) else { return }
        firstOpen.signal()
    }

    /// Calls `handler` when a look-up, asked again on a new connection,
    /// finds the file damaged: a broken page that only look-ups read would
    /// otherwise have them answer "not known" of its keys for good.
    func onDamage(_ handler: @escaping @Sendable (LedgerError, FileIdentity?) -> Void) {
        damaged.withLock { $0 = handler }
    }

    /// Opens the connection (the writer opened the ledger).
    func open() {
        connection.withLock { connection in
            if case .open = connection { return }
            switch connect() {
            case .success(let ledger): connection = .open(ledger)
            case .failure(let error): connection = failed(error)
            }
        }
    }

    /// Closes it (the writer sets the file aside, or stopped).
    func close() {
        connection.withLock { $0 = .closed }
    }

    /// The last version `destination` confirmed for `key`, as far as the
    /// ledger knows; nil when it does not, or cannot say now.
    func confirmedVersion(at destination: String, of key: ItemKey) -> ItemVersion? {
        if !opened.load(ordering: .acquiring) {
            firstOpen.wait()
            firstOpen.signal()
        }
        var damage: LedgerError?
        var damagedFile: FileIdentity?
        defer {
            if let damage, let handler = damaged.withLock({ $0 }) { handler(damage, damagedFile) }
        }
        /// Notes `error` when it says the file is damaged, with the file the
        /// path names now (while the connection is held).
        func note(_ error: LedgerError) {
            guard error.isCorruption else { return }
            (damage, damagedFile) = (error, (try? FileIdentity.of(path)) ?? nil)
        }
        return connection.withLock { connection -> ItemVersion? in
            switch connection {
            case .closed:
                guard access(path, F_OK) == 0 else { return nil }
                switch askAnew(destination, key, into: &connection) {
                case let .success(answer): return answer
                case let .failure(error):
                    note(error)
                    connection = failed(error)
                    return nil
                }
            case .open(let ledger):
                do throws(LedgerError) {
                    return try ledger.confirmedVersion(at: destination, of: key)
                } catch {
                    // Asked once more on a new connection before done/ answers alone.
                    let again = askAnew(destination, key, into: &connection)
                    guard case .success(let answer) = again else {
                        if case let .failure(error) = again { note(error) }
                        connection = failed(error)
                        return nil
                    }
                    log.write(LogEntry(.warning, "a look-up in the ledger \(path) failed (\(error.message)) and was "
                                       + "answered on a new connection", fields: [("TXRECON_REASON", error.message)]))
                    return answer
                }
            case .failed(let since, let reason):
                let now = self.now()
                // A wall clock stepped back is no reason to wait longer.
                guard now - since >= Self.retryInterval || now < since else { return nil }
                let again = askAnew(destination, key, into: &connection)
                guard case .success(let answer) = again else {
                    if case let .failure(error) = again { note(error) }
                    connection = .failed(since: now, reason: reason)
                    return nil
                }
                log.write(LogEntry(.notice, "look-ups in the ledger \(path) work again (they did not: \(reason))"))
                return answer
            }
        }
    }

    /// Asks on a new connection, which becomes `connection` when it answers.
    private func askAnew(_ destination: String, _ key: ItemKey,
                         into connection: inout Connection) -> Result<ItemVersion?, LedgerError> {
        do throws(LedgerError) {
            let fresh = try connect().get()
            let answer = try fresh.confirmedVersion(at: destination, of: key)
            connection = .open(fresh)
            return .success(answer)
        } catch {
            return .failure(error)
        }
    }

    /// Read only, never created: a ledger file removed under the running
    /// daemon fails the look-ups (and says so) rather than being made
    /// again, empty, beside the file the writer still writes.
    private func connect() -> Result<SQLiteLedger, LedgerError> {
        do {
            return .success(try SQLiteLedger(path: path, access: .readOnly, cache: .lookup))
        } catch {
            return .failure(error)
        }
    }

    /// `.failed`, logged.
    private func failed(_ error: LedgerError) -> Connection {
        log.write(LogEntry(.error, "a look-up in the ledger \(path) failed: \(error.message). Until it works again "
                           + "(tried every \(Self.retryInterval / 1000) s), the supersede rule reads done/ alone, "
                           + "which forgets what is older than DoneRetention=",
                           fields: [("TXRECON_REASON", error.message)]))
        return .failed(since: now(), reason: error.message)
    }
}
