// Hostile and broken input against the built binary. For each kind of file:
// the daemon stays up, the file ends in rejected/ with a reason (or is
// delivered when it is valid), and valid neighbours keep flowing.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

extension DaemonFixture {
    /// The first line of rejected/NAME.reason.
    func rejectionCode(_ name: String) -> String? {
        guard let bytes = try? SystemCall.readFile(layout.rejected + "/" + name + ".reason", limit: 65536) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: ":").first.map(String.init)
    }

    /// Drops `bytes` into new/ the Maildir way.
    func drop(bytes: [UInt8], name: String) {
        _ = directory.write(bytes, to: "spool/tmp/" + name, mode: 0o640)
        rename(layout.tmp + "/" + name, layout.new + "/" + name)
    }

    /// Drops a valid envelope after a hostile file and expects it delivered:
    /// intake kept flowing.
    func expectNeighbourDelivered(_ key: String) async throws {
        try drop(envelope(key, version: 1))
        #expect(await eventually { doneItems().contains(key) }, "the valid neighbour \(key) was delivered")
        #expect(await daemon?.wait(timeout: .zero) == nil, "the daemon is still running")
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct HostileInputTests {
    @Test func emptyBinaryInvalidUTF8AndDeeplyNestedFilesAreRejectedWithTheirReasons() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        // A nil code: any reason will do (junk bytes with a '.' read as a broken JWS).
        let inputs: [(name: String, bytes: [UInt8], code: String?)] = [
            ("empty", [], "empty-file"),
            ("whitespace", Array(" \n\t\r\n".utf8), "empty-file"),
            ("binary", (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }, nil),
            ("invalid-utf8", Array(#"{"id":"a","version":1,"payload":""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8), "not-json"),
            ("nested", Array(String(repeating: "[", count: 100_000).utf8), "not-json"),
            ("nested-object", Array((String(repeating: #"{"a":"#, count: 5000) + "1" + String(repeating: "}", count: 5000)).utf8), "not-json"),
            ("nul", [0, 0, 0, 0], "not-json"),
        ]
        for input in inputs { fixture.drop(bytes: input.bytes, name: input.name) }
        try await fixture.expectNeighbourDelivered("after-junk")
        #expect(await fixture.eventually { fixture.names("rejected").count == 2 * inputs.count })
        for input in inputs {
            let code = fixture.rejectionCode(input.name)
            #expect(code != nil && (input.code == nil || code == input.code), "\(input.name): \(code ?? "no reason")")
        }
    }

    @Test func aSparseOneGigabyteFileIsRejectedUnread() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        let path = fixture.layout.tmp + "/huge"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o640)
        #expect(ftruncate(descriptor, 1 << 30) == 0)
        close(descriptor)
        // What the daemon read meanwhile, by the kernel's count (not by
        // the time it took, which a busy host stretches): less than the
        // 8 MiB MaxFileSize= a bounded read would take before giving up.
        let pid = try #require(fixture.daemon?.pid)
        let readBefore = try #require(Self.bytesRead(by: pid))
        #expect(rename(path, fixture.layout.new + "/huge") == 0)
        #expect(await fixture.eventually { fixture.rejectionCode("huge") == "too-large" })
        let read = try #require(Self.bytesRead(by: pid)) - readBefore
        #expect(read < 1 << 20, "refused by its size, not read: \(read) bytes read meanwhile")
        try await fixture.expectNeighbourDelivered("after-huge")
    }

    /// The bytes process `pid` has read so far (/proc/PID/io's rchar:
    /// every read(2), cached or not).
    static func bytesRead(by pid: pid_t) -> Int? {
        guard let bytes = try? SystemCall.readFile("/proc/\(pid)/io", limit: 4096) else { return nil }
        let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").first { $0.hasPrefix("rchar:") }
        return line.flatMap { Int($0.dropFirst("rchar:".count).trimmingPrefix(" ")) }
    }

    @Test func aFileStillBeingWrittenInPlaceIsNotTakenHalfWritten() async throws {
        let fixture = try DaemonFixture()
        let bytes = Array(fixture.envelope("slowly", version: 1).utf8)
        let half = bytes.count / 2
        // Written while the daemon runs: taken when its writer closes it.
        try await fixture.start()
        let running = open(fixture.layout.new + "/written-in-place", O_WRONLY | O_CREAT | O_EXCL, 0o640)
        _ = write(running, bytes, half)
        try await Task.sleep(for: .milliseconds(500))
        #expect(fixture.names("rejected") == [] && fixture.names("queue") == [])
        _ = bytes[half...].withUnsafeBytes { write(running, $0.baseAddress, $0.count) }
        close(running)
        #expect(await fixture.eventually { fixture.doneItems() == ["slowly"] })

        // Half-written when the daemon starts: its start-up scan must wait
        // for the writer, who goes on writing a little at a time.
        fixture.daemon?.signal(SIGTERM)
        #expect(await fixture.daemon?.wait(timeout: .seconds(10)) == 0)
        let later = Array(fixture.envelope("across-start", version: 1).utf8)
        let writer = open(fixture.layout.new + "/across-start", O_WRONLY | O_CREAT | O_EXCL, 0o640)
        _ = write(writer, later, later.count / 2)
        try await fixture.start()
        for offset in stride(from: later.count / 2, to: later.count, by: 4) {
            try await Task.sleep(for: .milliseconds(100))
            _ = later[offset..<min(offset + 4, later.count)].withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        }
        close(writer)
        #expect(await fixture.eventually { fixture.doneItems() == ["across-start", "slowly"] })
        #expect(fixture.names("rejected") == [])
    }

    @Test func aWriterThatPausesTenSecondsInPlaceHasItsFileTakenWhenItClosesIt() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        let bytes = Array(fixture.envelope("paused", version: 1).utf8)
        let half = bytes.count / 2
        let writer = open(fixture.layout.new + "/paused-writer", O_WRONLY | O_CREAT | O_EXCL, 0o640)
        _ = write(writer, bytes, half)
        // Twice the settle time a file found by a scan gets: the writer
        // pausing is the case under test, not a wait for the daemon.
        try await Task.sleep(for: .seconds(10))
        #expect(fixture.names("rejected") == [], "half a file is not rejected while its writer holds it")
        #expect(fixture.names("new") == ["paused-writer"])
        _ = bytes[half...].withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        close(writer)
        #expect(await fixture.eventually { fixture.doneItems() == ["paused"] })
        #expect(fixture.names("rejected") == [])

        // A writer that closes its file half-written (it crashed, say)
        // has it taken at that close, and rejected.
        let crashed = open(fixture.layout.new + "/crashed-writer", O_WRONLY | O_CREAT | O_EXCL, 0o640)
        _ = write(crashed, bytes, half)
        close(crashed)
        #expect(await fixture.eventually { fixture.rejectionCode("crashed-writer") != nil })
    }

    @Test func aSymlinkToAFileOutsideTheSpoolIsRejectedAndItsTargetLeftAlone() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        let target = fixture.directory.write(fixture.envelope("outside", version: 1), to: "outside.json")
        #expect(symlink(target, fixture.layout.new + "/link") == 0)
        #expect(await fixture.eventually { fixture.rejectionCode("link") == "not-a-regular-file" })
        #expect(access(target, F_OK) == 0)
        #expect(!fixture.server.requests.contains { $0.header("Idempotency-Key") == "outside:1" })
        try await fixture.expectNeighbourDelivered("after-link")
    }

    @Test func aFIFONeverBlocksIntake() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        #expect(mkfifo(fixture.layout.new + "/fifo-in-place", 0o640) == 0)
        #expect(mkfifo(fixture.layout.tmp + "/fifo-renamed", 0o640) == 0)
        #expect(rename(fixture.layout.tmp + "/fifo-renamed", fixture.layout.new + "/fifo-renamed") == 0)
        try await fixture.expectNeighbourDelivered("after-fifo")
        #expect(await fixture.eventually {
            fixture.rejectionCode("fifo-in-place") == "not-a-regular-file" && fixture.rejectionCode("fifo-renamed") == "not-a-regular-file"
        })
    }

    @Test func aHardLinkIsRejectedAndTheOtherNameKept() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        let original = fixture.directory.write(fixture.envelope("linked", version: 1), to: "original.json", mode: 0o644)
        #expect(link(original, fixture.layout.new + "/hard-link") == 0)
        #expect(await fixture.eventually { fixture.rejectionCode("hard-link") == "hard-linked" })
        #expect(access(original, F_OK) == 0)
        try await fixture.expectNeighbourDelivered("after-link")
    }

    @Test func aDropThatIsAlsoItsDeliveredItemInDoneIsNeitherSentAgainNorRejected() async throws {
        // What a stop between a delivery's link into done/ and the unlink of
        // its name in new/ leaves behind.
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        try fixture.drop(fixture.envelope("linked", version: 1), name: "interrupted")
        #expect(link(fixture.layout.new + "/interrupted", fixture.layout.done + "/linked") == 0)
        try await fixture.start()
        try await fixture.expectNeighbourDelivered("after-link")
        #expect(await fixture.eventually { fixture.names("new").isEmpty })
        #expect(fixture.names("rejected").isEmpty)
        #expect(fixture.names("done").contains { $0.hasPrefix("linked.superseded-1") })
        #expect(!fixture.server.requests.contains { $0.header("Idempotency-Key") == "linked:1" })
    }

    @Test func namesWithNewlinesAndDotsAreTakenAndRejectedNamesStayVisible() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        fixture.drop(bytes: Array(fixture.envelope("newline", version: 1).utf8), name: "line\nbreak")
        fixture.drop(bytes: Array(fixture.envelope("dots", version: 1).utf8), name: "a..b")
        fixture.drop(bytes: Array("junk".utf8), name: "..hidden")
        fixture.drop(bytes: Array("junk".utf8), name: ".tmp-like-ours")
        #expect(await fixture.eventually { fixture.doneItems() == ["dots", "newline"] })
        #expect(await fixture.eventually { fixture.names("rejected") == ["_..hidden", "_..hidden.reason", "_.tmp-like-ours", "_.tmp-like-ours.reason"] })
        // A restart removes the daemon's own temporaries, never these.
        fixture.daemon?.signal(SIGTERM)
        #expect(await fixture.daemon?.wait(timeout: .seconds(10)) == 0)
        try await fixture.start()
        #expect(fixture.names("rejected").count == 4)
        let listing = try await fixture.cli(["list", "rejected"])
        #expect(listing.stdout.contains("_.tmp-like-ours"))
    }

    @Test func namesThatAreNotUTF8AreRenamedAndThenTaken() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        let odd: [(name: [UInt8], content: String)] = [([0x76, 0xFF, 0x61], fixture.envelope("latin1-named", version: 1)),
                                                        ([0x6A, 0xC3], "junk")]
        for (bytes, content) in odd {
            let path = Array((fixture.layout.tmp + "/x").utf8).map { CChar(bitPattern: $0) }
            _ = fixture.directory.write(content, to: "spool/tmp/x", mode: 0o640)
            let target = Array((fixture.layout.new + "/").utf8).map { CChar(bitPattern: $0) } + bytes.map { CChar(bitPattern: $0) }
            #expect(rename(path + [0], target + [0]) == 0)
        }
        #expect(await fixture.eventually { fixture.doneItems() == ["latin1-named"] })
        #expect(await fixture.eventually { fixture.rejectionCode("j\u{FFFD}.not-utf8") == "not-json" })
        #expect(fixture.names("new") == [])
        try await fixture.expectNeighbourDelivered("after-odd-names")
    }

    @Test func aDirectoryDroppedIntoNewIsSetAsideWhole() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        #expect(mkdir(fixture.layout.new + "/made-here", 0o750) == 0)
        _ = fixture.directory.write(fixture.envelope("inner", version: 1), to: "moved/inner.json")
        #expect(rename(fixture.directory.path + "/moved", fixture.layout.new + "/moved") == 0)
        #expect(await fixture.eventually {
            fixture.rejectionCode("made-here") == "not-a-regular-file" && fixture.rejectionCode("moved") == "not-a-regular-file"
        })
        #expect(access(fixture.layout.rejected + "/moved/inner.json", F_OK) == 0, "its content is kept")
        try await fixture.expectNeighbourDelivered("after-directory")
    }
}

/// Apart from HostileInputTests for its time limit. TXRECON_BURST_FILES sets
/// the size of the burst, a multiple of 100 (default 20,000, above the default
/// fs.inotify.max_queued_events of 16,384); `make soak` runs it with 100,000
/// against the release binary, which takes minutes with the debug one.
@Suite(.serialized, .timeLimit(.minutes(10)))
struct InboxBurstTests {
    static var fileCount: Int {
        getenv("TXRECON_BURST_FILES").flatMap { Int(String(cString: $0)) } ?? 20_000
    }

    @Test func aBurstOfFilesOverflowsInotifyAndEveryOneIsTaken() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start()
        // Newest first, so that every later file is superseded at once:
        // the test measures intake, not thousands of HTTP round trips.
        let keys = 100, versions = max(1, InboxBurstTests.fileCount / 100)
        // Thousands of files written on a thread of their own: on one of the
        // cooperative pool's two threads, they held up every other test.
        var files: [(name: String, text: String)] = []
        files.reserveCapacity(keys * versions)
        for version in stride(from: versions, through: 1, by: -1) {
            for key in 0..<keys {
                files.append(("burst-\(key)-\(version)", fixture.envelope("burst-\(key)", version: version)))
            }
        }
        let directory = fixture.directory, written = files
        await BlockingWork.run {
            for file in written { _ = directory.write(file.text, to: "spool/tmp/" + file.name, mode: 0o640) }
        }
        let names = files.map(\.name)
        // Stopped, the daemon reads no events while all arrive at once: the
        // kernel's queue overflows for any burst larger than it.
        daemon.signal(SIGSTOP)
        for name in names { rename(fixture.layout.tmp + "/" + name, fixture.layout.new + "/" + name) }
        daemon.signal(SIGCONT)
        let deadline = ContinuousClock.now + .seconds(500)
        while ContinuousClock.now < deadline, !(fixture.names("new").isEmpty && fixture.names("queue").isEmpty) {
            try await Task.sleep(for: .seconds(1))
        }
        #expect(fixture.names("new") == [] && fixture.names("queue") == [])
        // Each file was delivered or superseded (kept under its own name).
        let done = fixture.doneItems()
        #expect(done.filter { !$0.contains(".superseded-") }.count == keys)
        #expect(done.filter { $0.contains(".superseded-") }.count == keys * (versions - 1))
        #expect(fixture.names("rejected") == [])
        let delivered = Set(fixture.server.requests.compactMap { $0.header("Idempotency-Key") })
        #expect(delivered == Set((0..<keys).map { "burst-\($0):\(versions)" }))
        #expect(daemon.stderr.contains("rescanning new/ and ctl/"), "the burst overflowed inotify's queue")
        try await fixture.expectNeighbourDelivered("after-burst")
        print("burst: \(keys * versions) files taken")
    }
}
