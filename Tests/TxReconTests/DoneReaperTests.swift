// done/ cleanup after DoneRetention=, on real files; the scan is told what
// time it is, so nothing waits for real.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct DoneReaperTests {
    let directory = TemporaryDirectory("txrecon-done")

    func names() -> [String] { ((try? SystemCall.listDirectory(directory.path)) ?? []).sorted() }

    @Test func nothingIsRemovedBeforeTheRetentionAndTheNextScanIsArmed() throws {
        _ = directory.write("x", to: "a")
        let now = Timestamp.nowMilliseconds()
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        reaper.reap(asOf: now)
        #expect(names() == ["a"])
        let next = try #require(reaper.nextScanAt)
        #expect(next >= now + 3_600_000 - 1000 && next <= now + 3_600_000 + 1000)
        reaper.stop()
    }

    @Test func everythingPastTheRetentionIsRemovedAndNothingStaysArmed() {
        _ = directory.write("x", to: "a")
        _ = directory.write("x", to: "b.superseded-1-2")
        let reaper = DoneReaper(directory: directory.path, retention: .seconds(3600), log: RecordingLogSink())
        reaper.reap(asOf: Timestamp.nowMilliseconds() + 7_200_000)
        #expect(names() == [])
        #expect(reaper.nextScanAt == nil)
    }
}
