import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct LogSinksTests {
    @Test func aDestinationsEntriesAreNamedOnceAndItsMessagesWhenThereAreSeveral() {
        let recorded = RecordingLogSink()
        let single = DestinationLogSink(inner: recorded, name: "backend", namesMessages: false)
        single.write(LogEntry(.info, "k: delivered", fields: [("TXRECON_ID", "k")]))
        let several = DestinationLogSink(inner: recorded, name: "analytics", namesMessages: true)
        several.write(LogEntry(.info, "k: delivered", fields: [("TXRECON_DESTINATION", "sandbox")]))
        #expect(recorded.entries.map(\.message) == ["k: delivered", "analytics: k: delivered"])
        #expect(recorded.entries.map { $0.fields.map(\.name) }
            == [["TXRECON_ID", "TXRECON_DESTINATION"], ["TXRECON_DESTINATION"]])
        #expect(recorded.entries.map { $0.field("TXRECON_DESTINATION") } == ["backend", "sandbox"])
    }

    @Test func stderrMatchingJournalStreamGetsJournalEntries() throws {
        let file = try OpenFile()
        let sink = LogSinks.standard(environment: ["JOURNAL_STREAM": file.journalStream], standardError: file.descriptor)
        #expect(sink is JournalLogSink)
    }

    @Test func journalStreamNamingAnotherInodeGetsLines() throws {
        let file = try OpenFile()
        let other = try OpenFile()
        let sink = LogSinks.standard(environment: ["JOURNAL_STREAM": other.journalStream], standardError: file.descriptor)
        #expect(sink is StderrLogSink)
    }

    @Test func missingJournalStreamGetsLines() throws {
        let file = try OpenFile()
        #expect(LogSinks.standard(environment: [:], standardError: file.descriptor) is StderrLogSink)
    }

    @Test func malformedJournalStreamNeverMatches() throws {
        let file = try OpenFile()
        for value in ["", file.journalStream + ":1", "x:1", ":" , file.journalStream.replacingColonWithSpace] {
            #expect(!LogSinks.isJournalStream(value, descriptor: file.descriptor), "\(value)")
        }
    }

    @Test func closedDescriptorNeverMatches() throws {
        let journalStream = try OpenFile().journalStream
        #expect(!LogSinks.isJournalStream(journalStream, descriptor: -1))
    }
}

/// A fresh file held open, and its "<dev>:<ino>" as systemd would write it.
private final class OpenFile {
    let directory = TemporaryDirectory()
    let descriptor: Int32
    let journalStream: String

    init() throws {
        descriptor = open(directory.path + "/stream", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        var status = stat()
        guard descriptor >= 0, fstat(descriptor, &status) == 0 else { throw OpenFileError(errno: errno) }
        journalStream = "\(status.st_dev):\(status.st_ino)"
    }

    deinit { close(descriptor) }
}

private struct OpenFileError: Error {
    let errno: Int32
}

private extension String {
    var replacingColonWithSpace: String { String(map { $0 == ":" ? " " : $0 }) }
}
