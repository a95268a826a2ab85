// CoalescedWriter, the one writer of the status and metrics files: what a
// write is given, what it remembers, how a failure is reported, and that
// nothing is written after the final snapshot. Writes are forced with
// flushNow(), so no test waits for the coalescing timer.
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct CoalescedWriterTests {
    struct Refused: Error, CustomStringConvertible { var description: String { "refused" } }

    /// What the writes saw, and whether the next one fails.
    final class Target: Sendable {
        let writes = Mutex<[(Int, Bool, String)]>([])
        let failing = Atomic<Bool>(false)
    }

    let log = RecordingLogSink()
    let target = Target()

    func writer(initial: Int? = nil) -> CoalescedWriter<Int> {
        CoalescedWriter(label: "txrecon.test-writer", interval: .seconds(3600), initial: initial,
                        clock: ManualClock(), log: log,
                        failed: { LogEntry(.warning, "cannot write: \($0)") },
                        recovered: LogEntry(.notice, "written again")) { [target] snapshot, running, written in
            target.writes.withLock { $0.append((snapshot, running, written)) }
            if target.failing.load(ordering: .relaxed) { throw Refused() }
            written = "\(snapshot)"
        }
    }

    @Test func theNewestSnapshotIsWrittenWithWhatTheLastSuccessfulWriteLeft() {
        let writer = writer()
        writer.publish(1)
        writer.publish(2)
        writer.flushNow()
        writer.update { $0 = ($0 ?? 0) + 10 }
        writer.flushNow()
        let writes = target.writes.withLock { $0 }
        #expect(writes.last.map { [$0.0] } == [12])
        #expect(writes.last?.2 == "2")
        #expect(writes.allSatisfy { $0.1 })
    }

    @Test func aFailureIsReportedOnceAndItsEndOnce() {
        let writer = writer(initial: 0)
        target.failing.store(true, ordering: .relaxed)
        writer.publish(1)
        writer.flushNow()
        writer.publish(2)
        writer.flushNow()
        #expect(log.entries.map(\.message) == ["cannot write: refused"])
        // A failed write leaves what was written before for the next.
        #expect(target.writes.withLock { $0.last?.2 } == "")
        target.failing.store(false, ordering: .relaxed)
        writer.publish(3)
        writer.flushNow()
        writer.publish(4)
        writer.flushNow()
        #expect(log.entries.map(\.message) == ["cannot write: refused", "written again"])
    }

    @Test func theFinalSnapshotIsWrittenAsNotRunningAndLaterChangesAreIgnored() {
        let writer = writer(initial: 0)
        writer.publish(1)
        writer.stop(final: 7)
        let count = target.writes.withLock { $0.count }
        writer.publish(8)
        writer.flushNow()
        let writes = target.writes.withLock { $0 }
        #expect(writes[count - 1].0 == 7 && writes[count - 1].1 == false)
        #expect(writes.count == count + 1 && writes.last?.0 == 7)
        #expect(writer.latest == 7)
    }
}
