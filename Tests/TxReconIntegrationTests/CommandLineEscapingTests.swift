// What the command line prints cannot be forged by what producers write:
// keys, file names, reasons and status lines holding escape sequences and
// line breaks reach the terminal escaped, in text and in JSON.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

/// Retitles the terminal, clears the screen, starts a line of its own,
/// does both again with a C1 CSI and a Unicode line separator, and makes
/// what follows read backwards (a right-to-left override, an isolate, a mark).
private let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2J\n<forged line>\u{9B}2J\u{2028}<forged too>"
    + "\u{202E}exe.fdp\u{2066}\u{200F}"
/// `hostile` as the command line prints it.
private let escaped = #"\x1b]0;pwned\x07\x1b[2J\n<forged line>\u009b2J\u2028<forged too>\u202eexe.fdp\u2066\u200f"#

/// Unicode's bidirectional formatting characters (UAX #9): the marks, the
/// embeddings and overrides, the isolates.
private func isBidirectionalControl(_ scalar: Unicode.Scalar) -> Bool {
    [0x061C, 0x200E, 0x200F].contains(scalar.value) || (0x202A...0x202E).contains(scalar.value)
        || (0x2066...0x2069).contains(scalar.value)
}

/// Expects `output` to hold no character a terminal acts on (a line break
/// ends a line and nothing else) and no line of its own begun by `hostile`.
private func expectHarmless(_ output: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let acting = output.unicodeScalars.filter {
        ($0.value < 0x20 && $0 != "\n") || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029
            || isBidirectionalControl($0)
    }
    #expect(acting.isEmpty, "\(what) holds \(acting.map { String($0.value, radix: 16) })", sourceLocation: sourceLocation)
    let forged = output.split(separator: "\n").filter { $0.drop { $0 == " " }.hasPrefix("<forged") }
    #expect(forged.isEmpty, "\(what) has forged lines \(forged)", sourceLocation: sourceLocation)
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommandLineEscapingTests {
    @Test func listShowAndTheDaemonsAnswersPrintKeysFileNamesAndReasonsEscaped() async throws {
        let fixture = try DaemonFixture { request in
            let key = request.header("Idempotency-Key") ?? ""
            return key.hasPrefix("held") ? .status(422, body: "refused " + hostile) : .status(503)
        }
        try await fixture.start()
        let held = "held" + hostile, queued = "queued" + hostile
        for id in [held, queued] {
            let envelope = JSONValue.object([("id", .string(id)), ("version", .integer(1)), ("payload", .object([]))])
            try fixture.drop(envelope.serializedString)
        }
        try fixture.drop("junk", name: "rejected" + hostile)
        #expect(await fixture.eventually {
            fixture.names("hold").count == 2 && fixture.names("rejected").count == 2
                && fixture.names("queue").contains { $0.hasSuffix(".state") }
        })

        let queue = try await fixture.cli(["list"])
        expectHarmless(queue.stdout, "list")
        #expect(queue.stdout.hasPrefix("queued" + escaped + "  "))
        let hold = try await fixture.cli(["list", "hold"])
        expectHarmless(hold.stdout, "list hold")
        #expect(hold.stdout.hasPrefix("held" + escaped + "  "))
        #expect(hold.stdout.contains("HTTP 422: refused " + escaped))
        let rejected = try await fixture.cli(["list", "rejected"])
        expectHarmless(rejected.stdout, "list rejected")
        #expect(rejected.stdout.hasPrefix("rejected" + escaped + "  "))
        for prefix in ["held", "queued"] {
            let shown = try await fixture.cli(["show", prefix + hostile])
            #expect(shown.status == 0, "\(shown.stderr)")
            expectHarmless(shown.stdout, "show \(prefix)")
            #expect(shown.stdout.contains("key:        " + prefix + escaped + "\n"))
        }
        let unknown = try await fixture.cli(["show", "gone" + hostile])
        expectHarmless(unknown.stderr, "show's error")

        for (directory, name) in [("queue", queued), ("hold", held), ("rejected", "rejected" + hostile)] {
            let listing = try await fixture.cli(["list", directory, "--json"])
            expectHarmless(listing.stdout, "list \(directory) --json")
            let rows = try JSONValue.parse(listing.stdout).arrayValue
            #expect(rows?.first?["name"]?.stringValue == name, "the JSON holds the name as it is")
        }

        // The daemon's answers name the items as they were asked for.
        let released = try await fixture.cli(["release", held])
        expectHarmless(released.stdout, "release")
        #expect(released.stdout == "held" + escaped + ": released\n", "\(released.stderr)")
        let requeued = try await fixture.cli(["requeue-rejected", "rejected" + hostile])
        expectHarmless(requeued.stdout, "requeue-rejected")
        #expect(requeued.stdout == "rejected" + escaped + ": requeued\n", "\(requeued.stderr)")
    }

    @Test func theDaemonsLogLinesOnItsStandardErrorEscapeWhatTheCommandLineEscapes() async throws {
        // Run in the foreground (`txrecon run`, `receive`, `sweep` on a
        // terminal), the log goes to stderr as lines: the name of a file a
        // producer dropped is in the message and in TXRECON_FILE.
        let fixture = try DaemonFixture()
        let daemon = try await fixture.start()
        try fixture.drop("junk", name: "dropped" + hostile)
        #expect(await fixture.eventually { fixture.names("rejected").count == 2 })
        #expect(await fixture.eventually { daemon.stderr.contains("TXRECON_FILE=") })
        let lines = daemon.stderr.split(separator: "\n").filter { $0.contains("dropped") }
        #expect(!lines.isEmpty, "\(daemon.stderr)")
        expectHarmless(daemon.stderr, "the daemon's stderr")
        #expect(lines.allSatisfy { $0.contains("dropped" + escaped) }, "\(lines)")
    }

    @Test func statusPrintsTheDaemonsStatusLineEscaped() async throws {
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        // This process stands in for the daemon: it holds the lock and
        // wrote the status file.
        let lock = try SpoolLock.acquire(fixture.layout)
        defer { withExtendedLifetime(lock) {} }
        let document = JSONValue.object([("pid", .integer(Int64(getpid()))), ("status", .string("3 queued" + hostile))])
        fixture.directory.write(document.serializedString, to: "spool/txrecon.status")

        let status = try await fixture.cli(["status"])
        #expect(status.status == 0, "\(status.stderr)")
        expectHarmless(status.stdout, "status")
        #expect(status.stdout.contains("daemon:   running (pid \(getpid())), 3 queued" + escaped + "\n"))
        let json = try await fixture.cli(["status", "--json"])
        expectHarmless(json.stdout, "status --json")
        #expect(try JSONValue.parse(json.stdout)["daemon"]?["status"]?.stringValue == "3 queued" + hostile)
    }

    /// `history --json` prints JSON whatever a key holds: DEL (0x7F), which
    /// the serializer leaves raw, escaped as JSON escapes it, never as `\x7f`.
    @Test func historyAsJSONIsJSONWhateverAKeyHolds() async throws {
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        _ = fixture.directory.write("", to: "state/.keep")
        let key = try #require(ItemKey("k\u{7F}" + hostile))
        let ledger = try SQLiteLedger(path: fixture.ledgerPath)
        try ledger.record([LedgerRecord(destination: "backend", key: key, version: ItemVersion(primary: 1),
                                        confirmedAt: 1_800_000_000_000, attempt: 1, confirmation: "HTTP 204",
                                        kind: .envelope, identity: LedgerRecord.Identity())],
                          replacingEqual: true)
        let history = try await fixture.cli(["history", "--destination", "backend", "--json"])
        #expect(history.status == 0, "\(history.stderr)")
        expectHarmless(history.stdout, "history --json")
        let rows = try JSONValue.parse(history.stdout).arrayValue
        #expect(rows?.first?["id"]?.stringValue == key.rawValue, "\(history.stdout)")
    }
}
