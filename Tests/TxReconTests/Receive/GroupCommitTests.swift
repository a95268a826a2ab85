// Group commit's promise, with the directory fsync replaced by one the test
// controls: a request returns only after an fsync of new/ that began once
// its file was renamed there, concurrent requests share one, and a failed
// fsync fails every request that waited for it. Real files in a temporary
// spool; the waits are on semaphores the test opens (bounded only so that a
// broken commit fails instead of hanging), never on time.
import Dispatch
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1))) struct GroupCommitTests {
    let directory = TemporaryDirectory("txrecon-group-commit")
    var layout: SpoolLayout { SpoolLayout(root: directory.path) }

    /// A directory fsync that records what new/ held when it began and
    /// waits until the test releases it.
    final class ControlledSync: Sendable {
        let began = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let seen = Mutex<[[String]]>([])
        let fails = Mutex(false)

        func sync(_ path: String) throws(SpoolError) {
            let names = (try? SystemCall.listDirectory(path)) ?? []
            seen.withLock { $0.append(names.sorted()) }
            began.signal()
            release.wait()
            if fails.withLock({ $0 }) { throw SpoolError("fsync", path, EIO) }
        }
    }

    func commit(_ body: String, with group: GroupCommit) throws -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        try DedicatedThread.start(name: "test-commit") { _ = try? group.commit(Array(body.utf8)); done.signal() }
        return done
    }

    @Test func aFailedFsyncOfNewStillNamesTheFilePlacedThere() throws {
        try layout.createMissingDirectories()
        let group = try GroupCommit(layout: layout, syncDirectory: { path throws(SpoolError) in
            throw SpoolError("fsync", path, EIO)
        })
        var placed: String?
        #expect(throws: SpoolError.self) { try group.commit(Array("one".utf8)) { placed = $0 } }
        let name = try #require(placed, "the caller learns the name before the fsync fails")
        #expect(try SystemCall.listDirectory(layout.new) == [name], "and the body is in new/, bound for the daemon")
    }

    @Test func aRequestReturnsOnlyAfterAnFsyncThatBeganOnceItsFileWasInNew() throws {
        try layout.createMissingDirectories()
        let sync = ControlledSync()
        let group = try GroupCommit(layout: layout, syncDirectory: { path throws(SpoolError) in try sync.sync(path) })
        let result = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        try DedicatedThread.start(name: "test-commit") {
            result.withLock { $0 = try? group.commit(Array("one".utf8)) }
            done.signal()
        }
        try #require(sync.began.wait(timeout: .now() + .seconds(30)) == .success, "new/ was never synced")
        // The fsync is under way and held: the request must still be waiting
        // (asked without waiting: the answer may come only after the release).
        #expect(done.wait(timeout: .now()) == .timedOut, "no answer while new/ is not synced")
        sync.release.signal()
        done.wait()
        let name = try #require(result.withLock { $0 })
        #expect(sync.seen.withLock { $0 } == [[name]], "the fsync began with the file renamed into new/")
    }

    @Test func requestsRenamedDuringAnFsyncShareTheNextOne() throws {
        try layout.createMissingDirectories()
        let sync = ControlledSync()
        let group = try GroupCommit(layout: layout, syncDirectory: { path throws(SpoolError) in try sync.sync(path) })
        let first = try commit("first", with: group)
        // The first fsync runs; these three arrive meanwhile.
        try #require(sync.began.wait(timeout: .now() + .seconds(30)) == .success, "new/ was never synced")
        let others = try (0..<3).map { try commit("other-\($0)", with: group) }
        // Until all three are renamed into new/ (and so waiting for the next fsync).
        while try SystemCall.listDirectory(layout.new).count < 4 { sched_yield() }
        sync.release.signal()
        first.wait()
        try #require(sync.began.wait(timeout: .now() + .seconds(30)) == .success, "no second fsync")
        sync.release.signal()
        for done in others { done.wait() }
        let seen = sync.seen.withLock { $0 }
        #expect(seen.count == 2, "two fsyncs for four requests: \(seen)")
        #expect(seen.last?.count == 4)
    }

    @Test func theWatchdogCanTellHowLongTheOldestCommitHasWaited() throws {
        try layout.createMissingDirectories()
        let sync = ControlledSync()
        let group = try GroupCommit(layout: layout, syncDirectory: { path throws(SpoolError) in try sync.sync(path) })
        #expect(group.longestUnderWay() == nil)
        let done = try commit("stuck", with: group)
        try #require(sync.began.wait(timeout: .now() + .seconds(30)) == .success, "new/ was never synced")
        let waited = try #require(group.longestUnderWay(at: .now + .seconds(60)))
        #expect(waited >= .seconds(60), "the fsync held: a minute later it still counts")
        sync.release.signal()
        done.wait()
        #expect(group.longestUnderWay() == nil)
    }

    @Test func aFailedFsyncFailsEveryRequestThatWaitedForIt() throws {
        try layout.createMissingDirectories()
        let sync = ControlledSync()
        sync.fails.withLock { $0 = true }
        let group = try GroupCommit(layout: layout, syncDirectory: { path throws(SpoolError) in try sync.sync(path) })
        let failures = Failures()
        let done = DispatchSemaphore(value: 0)
        for index in 0..<2 {
            try DedicatedThread.start(name: "test-commit") { [failures] in
                do throws(SpoolError) {
                    _ = try group.commit(Array("body-\(index)".utf8))
                } catch {
                    failures.count.withLock { $0 += 1 }
                }
                done.signal()
            }
        }
        // One fsync for both, or one each: let up to two through.
        sync.release.signal()
        sync.release.signal()
        done.wait()
        done.wait()
        #expect(failures.count.withLock { $0 } == 2)
    }

    final class Failures: Sendable {
        let count = Mutex(0)
    }
}
