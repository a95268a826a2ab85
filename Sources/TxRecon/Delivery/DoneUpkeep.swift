// DoneUpkeep: what the engine keeps up about done/ as it delivers, one
// owned value: which keys done/ may hold a delivered snapshot of
// (DeliveredKeys, whose index is rebuilt from done/'s names by a task off
// the engine's jobs), and the failure records of retried items that have
// yet to follow them there (UntidiedRecords; the engine moves them). Reports
// nothing: a failed build is returned as the entry for the engine to log.

struct DoneUpkeep {
    /// The keys done/ may hold a delivered snapshot of.
    private(set) var keys = DeliveredKeys()
    /// Keys delivered after failing whose queue/KEY.state is still in queue/.
    var untidied = UntidiedRecords()
    private let build: DoneIndexBuilder
    /// The build of a new index while one runs (for `waitForIndex`).
    private var indexing: Task<Void, Never>?

    init(build: @escaping DoneIndexBuilder) {
        self.build = build
    }

    /// Whether done/ may hold `key`: no when the index rules it out.
    func mayHold(_ key: ItemKey) -> Bool { keys.mayHold(key) }

    /// Starts a build of a new index of done/ from its names, as a task
    /// preferring `executor`, which hands the result to `adopt` (the
    /// engine, which passes it to `built`); the current index (if any)
    /// serves until then. Nothing when a build runs already.
    mutating func rebuild(from spool: Spool, on executor: ThreadExecutor,
                          adopt: @escaping @Sendable (sending Result<DoneIndex, SpoolError>) async -> Void) {
        guard keys.buildStarts() else { return }
        let build = self.build
        indexing = Task(executorPreference: executor) {
            await adopt(await build(spool))
        }
    }

    /// A build's result; the warning to log when it failed.
    mutating func built(_ result: sending Result<DoneIndex, SpoolError>) -> LogEntry? {
        indexing = nil
        switch result {
        case let .success(index):
            keys.built(index)
            return nil
        case let .failure(error):
            keys.buildFailed()
            return LogEntry(.warning, "cannot list done/: \(error); every new snapshot "
                            + (keys.index == nil ? "is" : "not in the older index is")
                            + " checked against done/ by reading it, which is slower")
        }
    }

    /// done/`key` now holds a delivered snapshot; true when the index
    /// should be rebuilt (DeliveredKeys.delivered).
    mutating func delivered(_ key: ItemKey) -> Bool { keys.delivered(key) }

    /// The build that runs, if any (tests wait for it).
    var runningBuild: Task<Void, Never>? { indexing }
}
