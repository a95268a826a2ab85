// Every name in an operator request is checked in one place
// (ControlRequest.isValid) before anything moves: no request, from the CLI
// or written into ctl/ by hand, moves a directory or what is not an item.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.timeLimit(.minutes(1)))
struct ControlRequestValidationTests {
    static let invalidFileNames = ["", ".", "..", "a/b", "/etc/passwd", "../queue", ".hidden", ".tmp-x", "x.reason",
                                   "a\u{0}b", String(repeating: "x", count: 256)]

    @Test func aRejectedFileNameIsAPlainVisibleNameThatIsNotAReason() {
        for name in ControlRequestValidationTests.invalidFileNames {
            #expect(!ControlRequest.isValid(name, for: .requeueRejected), "\(name)")
        }
        for name in ["drop-1", "x.json", "_.hidden", "x.reason.input", "é", String(repeating: "x", count: 255)] {
            #expect(ControlRequest.isValid(name, for: .requeueRejected), "\(name)")
        }
    }

    @Test func aKeyIsOneToOneHundredTwentyEightBytesOfAnything() {
        for command in [ControlRequest.Command.release, .retry, .replay] {
            #expect(!ControlRequest.isValid("", for: command))
            #expect(!ControlRequest.isValid(String(repeating: "k", count: 129), for: command))
            // Keys are encoded into file names: . and / are safe in them.
            for key in ["2000001032604840", "..", "a/b", ".", String(repeating: "k", count: 128)] {
                #expect(ControlRequest.isValid(key, for: command), "\(key)")
            }
        }
    }

    static func requeue(_ request: ControlRequest, in harness: EngineHarness) -> ControlResult {
        RejectedRequeue.perform(request, spool: harness.spool, events: ItemEvents(sink: RecordingLogSink()))
    }

    @Test func requeueingAnInvalidNameIsSkippedAndRejectedStaysWhole() async throws {
        let harness = try EngineHarness()
        try harness.layout.createMissingDirectories()
        _ = harness.directory.write("junk", to: "spool/rejected/kept")
        _ = harness.directory.write("why", to: "spool/rejected/kept.reason")
        let result = Self.requeue(ControlRequest(.requeueRejected, targets: ControlRequestValidationTests.invalidFileNames),
                                  in: harness)
        #expect(result.applied.isEmpty)
        #expect(result.skipped.map(\.target) == ControlRequestValidationTests.invalidFileNames)
        #expect(result.skipped.allSatisfy { $0.reason == "not a valid name" })
        #expect(harness.names(in: "rejected") == ["kept", "kept.reason"])
        #expect(harness.names(in: "new") == [])
    }

    @Test func aDirectorySetAsideInRejectedIsNeverMovedBack() async throws {
        let harness = try EngineHarness()
        #expect(mkdir(harness.layout.rejected + "/dir", 0o700) == 0)
        _ = harness.directory.write("x", to: "spool/rejected/dir/inside")
        for request in [ControlRequest(.requeueRejected, targets: ["dir"]), ControlRequest(.requeueRejected, all: true)] {
            let result = Self.requeue(request, in: harness)
            #expect(result.applied.isEmpty)
            #expect(result.skipped.map(\.target) == ["dir"])
            #expect(result.skipped.first?.reason.hasPrefix("not a regular file") == true)
        }
        #expect(harness.names(in: "rejected") == ["dir"])
        #expect(harness.names(in: "new") == [])
    }

    /// requeue-rejected --all on a rejected/ that cannot be listed says so,
    /// rather than "rejected/ holds no file" and exit 0.
    @Test func aRejectedThatCannotBeListedIsNamedNotTakenForEmpty() async throws {
        let harness = try EngineHarness()
        try harness.layout.createMissingDirectories()
        #expect(rmdir(harness.layout.rejected) == 0)
        _ = harness.directory.write("not a directory", to: "spool/rejected")
        let result = Self.requeue(ControlRequest(.requeueRejected, all: true), in: harness)
        #expect(result.applied.isEmpty)
        #expect(result.skipped.map(\.target) == ["rejected/"])
        #expect(result.skipped.first?.reason.contains("cannot be listed") == true, "\(result.skipped)")
    }

    @Test func anEmptyOrOverlongKeyIsSkippedWithTheSameAnswer() async throws {
        let harness = try EngineHarness()
        let engine = try await harness.startedEngine()
        for command in [ControlRequest.Command.release, .retry] {
            let result = await engine.perform(ControlRequest(command, targets: ["", String(repeating: "k", count: 129)]))
            #expect(result.skipped.map(\.reason) == ["not a valid name", "not a valid name"])
        }
    }
}
