// DeliveryEngine's upkeep of done/ (the state is DoneUpkeep's): the index
// of the keys done/ may hold, rebuilt from its names off this thread, and
// the failure records of retried items, which follow them into done/ here
// (see UntidiedRecords), in batches on this thread while no attempt is due.
// Until then such a record is one of a key no longer queued: nothing reads
// it, a crash leaves an orphan that the next start removes, and a new
// snapshot of the key moves it first (`place`).

extension DeliveryEngine {
    /// Has a new index of done/ built from its names, off this thread; the
    /// current one (if any) serves until the new one arrives.
    func rebuildDoneIndex() {
        done.rebuild(from: spool, on: executor) { built in await self.adoptDoneIndex(built) }
    }

    fileprivate func adoptDoneIndex(_ built: sending Result<DoneIndex, SpoolError>) {
        if let warning = done.built(built) { log.write(warning) }
    }

    /// Waits until a build of the index that is running has arrived (tests).
    func waitForDoneIndex() async {
        await done.runningBuild?.value
    }

    /// Whether fresh drops are checked against an index of done/ (tests).
    var hasDoneIndex: Bool { done.keys.index != nil }

    /// Has the next batch of failure records moved once no attempt is due.
    func tidyWhenIdle() {
        guard !done.untidied.isEmpty, !done.untidied.scheduled, mayTidy else { return }
        done.untidied.scheduled = true
        // A plain call queued behind the work at hand: no task per batch.
        executor.submit { self.assumeIsolated { $0.tidyBatch() } }
    }

    fileprivate func tidyBatch() {
        done.untidied.scheduled = false
        guard mayTidy else { return }
        for key in done.untidied.nextBatch() { tidy(key) }
        tidyWhenIdle()
    }

    func tidy(_ key: ItemKey) {
        do {
            try spool.retireState(key)
        } catch {
            log.write(LogEntry(.warning, "\(key): its failure record queue/\(key.fileName).state could not be moved "
                               + "into done/: \(error); the next start removes it"))
        }
    }

    /// Running, and no attempt may start now (waiting for room or about
    /// to start), unless too many records wait.
    fileprivate var mayTidy: Bool {
        guard isRunning else { return false }
        let now = clock.now
        return (nextStart(now: now).map { $0 > now } ?? true) || done.untidied.overLimit
    }
}
