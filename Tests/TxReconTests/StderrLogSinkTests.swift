import Dispatch
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct StderrLogSinkTests {
    private func line(_ entry: LogEntry) -> String {
        String(decoding: StderrLogSink.line(for: entry), as: UTF8.self)
    }

    @Test func lineIsThePriorityWordAndTheMessage() {
        let entry = LogEntry(.warning, "item 2000000123 held (HTTP 409)")
        #expect(line(entry) == "warning: item 2000000123 held (HTTP 409)\n")
    }

    @Test func fieldsFollowTheMessageAsNameValuePairsInOrder() {
        let entry = LogEntry(.info, "delivered", messageID: MessageID.delivered,
                             fields: [("TXRECON_ID", "2000000123"), ("TXRECON_ATTEMPT", "3")])
        #expect(line(entry) == "info: delivered TXRECON_ID=2000000123 TXRECON_ATTEMPT=3\n")
    }

    @Test func fieldValuesWithBlanksQuotesOrBackslashesAreQuotedAndEscaped() {
        let entry = LogEntry(.error, "rejected",
                             fields: [("TXRECON_REASON", #"not "JSON" at a\b"#), ("TXRECON_EMPTY", "")])
        #expect(line(entry)
            == #"error: rejected TXRECON_REASON="not \"JSON\" at a\\b" TXRECON_EMPTY="""# + "\n")
    }

    @Test func controlCharactersAreEscapedSoAnEntryStaysOneLine() {
        let entry = LogEntry(.notice, "first\nsecond\u{1B}", fields: [("TXRECON_BODY", "a\r\nb\tc")])
        #expect(line(entry) == #"notice: first\nsecond\x1b TXRECON_BODY="a\r\nb\tc""# + "\n")
    }

    @Test func textBeyondASCIIPassesUnchangedAndDELIsEscaped() {
        let entry = LogEntry(.info, "Überweisung für 東京", fields: [("TXRECON_REASON", "naïve\u{7F}"), ("TXRECON_NAME", "ß")])
        #expect(line(entry) == #"info: Überweisung für 東京 TXRECON_REASON="naïve\x7f" TXRECON_NAME=ß"# + "\n")
    }

    @Test func c1ControlsLineSeparatorsAndBidiControlsAreEscapedAsTheCommandLineEscapesThem() {
        // A key or a file name that would read backwards on a terminal, or
        // start a line of its own in a viewer; LogText's set, as \uNNNN.
        let entry = LogEntry(.warning, "new/invoice\u{202E}fdp.exe rejected\u{9B}2J\u{2028}<forged>",
                             fields: [("TXRECON_FILE", "a\u{2066}b\u{2069}\u{200F}\u{061C}\u{85}"),
                                      ("TXRECON_ID", "\u{202A}\u{202B}\u{202C}\u{202D}\u{2067}\u{2068}\u{200E}\u{2029}")])
        #expect(line(entry) == #"warning: new/invoice\u202efdp.exe rejected\u009b2J\u2028<forged> "#
            + #"TXRECON_FILE="a\u2066b\u2069\u200f\u061c\u0085" "#
            + #"TXRECON_ID="\u202a\u202b\u202c\u202d\u2067\u2068\u200e\u2029""# + "\n")
    }

    @Test func charactersThatShareALeadByteWithAnEscapedOnePassUnchanged() {
        // U+00A0, U+0600 and U+2014 begin with the bytes of U+0085, U+061C
        // and U+202E (0xC2, 0xD8, 0xE2) and control nothing.
        let entry = LogEntry(.info, "\u{A0}\u{600}—€…", fields: [("TXRECON_NAME", "—\u{A0}\u{2030}")])
        #expect(line(entry) == "info: \u{A0}\u{600}—€… TXRECON_NAME=—\u{A0}\u{2030}\n")
    }

    /// The line of an entry that needs no escape is built apart, a word at
    /// a time: for any text it must be the line the escaping path writes.
    @Test func thePlainPathWritesWhatTheEscapingPathWrites() {
        // Seeded: the same 3,000 entries on every run, so that the count of
        // plain lines below is a property of the test, not of the draw.
        var generator = SeededGenerator(seed: 0x7478_7265_636F_6E31)
        let alphabet: [String] = ["a", "Z", "0", "_", "-", ":", "/", " ", "\"", "\\", "=", "\n", "\t", "\u{1}", "\u{1F}",
                                  "\u{7F}", "é", "€", "😀", "\r", "\u{85}", "\u{A0}", "\u{202E}", "\u{2066}",
                                  "\u{200F}", "\u{061C}", "\u{2028}", "—"]
        func text(_ length: Int) -> String {
            (0..<length).map { _ in
                // Mostly plain text, as real entries are, so both paths run.
                Int.random(in: 0..<4, using: &generator) == 0 ? alphabet.randomElement(using: &generator)!
                    : String(alphabet[Int.random(in: 0..<7, using: &generator)])
            }.joined()
        }
        var plain = 0
        for _ in 0..<3000 {
            let fields = (0..<Int.random(in: 0...6, using: &generator)).map { index in
                ("TXRECON_F\(index)", text(Int.random(in: 0...20, using: &generator)))
            }
            let entry = LogEntry(LogPriority(rawValue: Int.random(in: 0...7, using: &generator))!,
                                 text(Int.random(in: 0...40, using: &generator)), fields: fields)
            let line = StderrLogSink.line(for: entry)
            #expect(line == StderrLogSink.escapedLine(for: entry), "\(entry)")
            if !line.contains(UInt8(ascii: "\\")) && !line.contains(UInt8(ascii: "\"")) { plain += 1 }
        }
        #expect(plain > 100, "the plain path ran (\(plain) lines without escapes)")
    }

    @Test func everyPriorityHasItsSyslogWord() {
        let words = (0...7).map { LogPriority(rawValue: $0)!.word }
        #expect(words == ["emergency", "alert", "critical", "error", "warning", "notice", "info", "debug"])
    }

    @Test func sinkWritesTheLineToItsDescriptor() async throws {
        let pipe = try Pipe()
        StderrLogSink(descriptor: pipe.writeEnd).write(LogEntry(.info, "hello", fields: [("TXRECON_ID", "7")]))
        pipe.closeWriteEnd()
        #expect(await pipe.readAll() == "info: hello TXRECON_ID=7\n")
    }

    @Test func linesFromConcurrentWritersNeverInterleave() async throws {
        // A line longer than the pipe's capacity (64 KiB) makes the kernel
        // release the pipe mid-write, so only the sink's own serialisation
        // keeps the lines whole.
        let pipe = try Pipe()
        let sink = StderrLogSink(descriptor: pipe.writeEnd)
        let writers = 4, linesPerWriter = 4
        let bodies = (0..<writers).map { String(repeating: Character(Unicode.Scalar(UInt8(65 + $0))), count: 200_000) }
        let reading = Task { await pipe.readAll() }
        await onDedicatedThreads(writers) { writer in
            for _ in 0..<linesPerWriter { sink.write(LogEntry(.info, bodies[writer])) }
        }
        pipe.closeWriteEnd()
        let lines = await reading.value.split(separator: "\n")
        let whole = lines.count { line in bodies.contains { line == "info: " + $0 } }
        #expect(lines.count == writers * linesPerWriter)
        #expect(whole == writers * linesPerWriter)
    }
}

/// Runs `body(0..<count)` on as many new threads at once (Dispatch's pool
/// would run only as many as there are cores) and returns when all are done.
private func onDedicatedThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
    final class Work: Sendable {
        let index: Int
        let body: @Sendable (Int) -> Void
        init(index: Int, body: @escaping @Sendable (Int) -> Void) { self.index = index; self.body = body }
    }
    let threads = (0..<count).map { index in
        var thread = pthread_t()
        let work = Unmanaged.passRetained(Work(index: index, body: body)).toOpaque()
        let started = pthread_create(&thread, nil, { work in
            let work = Unmanaged<Work>.fromOpaque(work!).takeRetainedValue()
            work.body(work.index)
            return nil
        }, work)
        precondition(started == 0, "pthread_create failed: \(started)")
        return thread
    }
    await BlockingWork.run { for thread in threads { pthread_join(thread, nil) } }
}

/// A pipe whose read end is drained on a thread of its own, off the cooperative pool.
private final class Pipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() throws {
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw PipeError(errno: errno) }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit { close(readEnd) }

    func closeWriteEnd() { close(writeEnd) }

    /// Everything written until the write end closes.
    func readAll() async -> String {
        await BlockingWork.run { [readEnd] in
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(readEnd, &chunk, chunk.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                bytes += chunk[..<count]
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}

private struct PipeError: Error {
    let errno: Int32
}
