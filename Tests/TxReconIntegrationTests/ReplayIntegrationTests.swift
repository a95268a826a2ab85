// `txrecon replay` end to end: the built daemon and CLI, a loopback
// backend. A delivered item goes out again with its Idempotency-Key on
// root's request; a replay asked for by anyone else is refused.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: getuid() == 0, "a replay is root's to ask for"))
struct ReplayIntegrationTests {
    func deliveries(of key: String, _ fixture: DaemonFixture) -> Int {
        fixture.server.requests.filter { $0.header("Idempotency-Key") == key + ":1" }.count
    }

    @Test func aDeliveredItemGoesOutAgainWithItsIdempotencyKeyAndStaysInDone() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        try fixture.drop(fixture.envelope("r1", version: 1))
        try fixture.drop(fixture.envelope("r2", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["r1", "r2"] })

        let replayed = try await fixture.cli(["replay", "r1", "never-delivered"])
        #expect(replayed.status == 1, "one key was not in done/: \(replayed.stderr)")
        #expect(replayed.stdout == "r1: replayed, due now\n")
        #expect(replayed.stderr.contains("never-delivered: skipped: not in done/"))
        #expect(await fixture.eventually { deliveries(of: "r1", fixture) == 2 })
        #expect(await fixture.eventually { fixture.names("queue").isEmpty })
        #expect(fixture.doneItems() == ["r1", "r2"] && deliveries(of: "r2", fixture) == 1)

        // A window alone replays everything delivered in it.
        let window = try await fixture.cli(["replay", "--since", "1h"])
        #expect(window.status == 0, "\(window.stderr)")
        #expect(await fixture.eventually { deliveries(of: "r1", fixture) == 3 && deliveries(of: "r2", fixture) == 2 })
        let none = try await fixture.cli(["replay", "--until", "2000-01-01T00:00:00Z"])
        #expect(none.status == 0, "nothing was received before 2000: \(none.stderr)")
        #expect(none.stdout == "nothing replayed: no delivered item in done/ received before 2000-01-01T00:00:00.000Z\n")
        // A key named with a window it falls outside is answered, not passed over.
        let named = try await fixture.cli(["replay", "--until", "2000-01-01T00:00:00Z", "r2"])
        #expect(named.status == 1, "\(named.stdout) \(named.stderr)")
        #expect(named.stderr.contains("r2: skipped: its delivered snapshot was received "), "\(named.stderr)")
        #expect(fixture.daemon?.stderr.contains("r1: replay requested by the operator") == true)
    }

    @Test func aReversedWindowIsRefusedAsAUsageErrorAndNothingIsAsked() async throws {
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        for window in [["--since", "2026-12-02T00:00:00Z", "--until", "2026-12-01T00:00:00Z"],
                       ["--since", "1h", "--until", "2h"], ["--since", "2026-12-01T00:00:00Z", "--until", "2026-12-01T00:00:00Z"]] {
            let reversed = try await fixture.cli(["replay"] + window)
            #expect(reversed.status == 2 && reversed.stdout.isEmpty, "\(window): \(reversed)")
            #expect(reversed.stderr.hasPrefix("txrecon: replay: --since \(window[1]) ("), "\(reversed.stderr)")
            #expect(reversed.stderr.contains("is not before --until \(window[3]) ("), "\(reversed.stderr)")
            #expect(reversed.stderr.hasSuffix("the window holds no time and would replay nothing; give --since the earlier time\n"))
        }
        #expect(fixture.names("ctl").isEmpty, "no request was written")
    }

    @Test func aReplayWhoseAnswerCannotBeWrittenRunsOnce() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        try fixture.drop(fixture.envelope("r4", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["r4"] })
        // A member of group txrecon saw the CLI's name and put a directory
        // where the answer goes.
        #expect(mkdir(fixture.layout.ctl + "/blocked.result", 0o750) == 0)
        let temporary = fixture.layout.tmp + "/.ctl-blocked"
        try SystemCall.writeNewFile(temporary, ControlRequest(.replay, targets: ["r4"]).json.serialized, mode: 0o640,
                                    sync: false)
        #expect(chmod(temporary, 0o640) == 0, "as the CLI writes it, whatever the umask")
        #expect(rename(temporary, fixture.layout.ctl + "/blocked") == 0)
        #expect(await fixture.eventually { deliveries(of: "r4", fixture) == 2 })
        #expect(await fixture.eventually { !fixture.names("ctl").contains("blocked") },
                "the request is removed, not run again at each scan")
        #expect(fixture.daemon?.stderr.contains("the replay ran (1 applied, 0 skipped)") == true)
        // Anything that makes intake scan ctl/ again finds nothing to replay.
        try fixture.drop(fixture.envelope("r5", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["r4", "r5"] })
        let idle = try await fixture.cli(["retry", "--all"])
        #expect(idle.status == 0, "\(idle.stderr)")
        #expect(deliveries(of: "r4", fixture) == 2)
    }

    @Test func aReplayAskedForByAnyoneButRootIsRefused() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        try fixture.drop(fixture.envelope("r3", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["r3"] })
        // As a member of group txrecon would: a request file of its own.
        let request = ControlRequest(.replay, all: true)
        let temporary = fixture.layout.tmp + "/.ctl-by-nobody"
        try SystemCall.writeNewFile(temporary, request.json.serialized, mode: 0o660, sync: false)
        #expect(chown(temporary, 65534, 65534) == 0)
        #expect(rename(temporary, fixture.layout.ctl + "/by-nobody") == 0)
        let client = ControlClient(layout: fixture.layout)
        let result = try #require(client.result(of: "by-nobody", timeout: .seconds(20)))
        #expect(result.applied.isEmpty)
        #expect(result.skipped.map(\.reason) == ["only root may ask for a replay; ctl/by-nobody belongs to uid 65534"])
        #expect(fixture.names("queue").isEmpty && deliveries(of: "r3", fixture) == 1)

        // Root's, but group txrecon could have rewritten it; root's, with a
        // second name a producer could put back into ctl/ later.
        let writable = fixture.layout.tmp + "/.ctl-writable"
        try SystemCall.writeNewFile(writable, request.json.serialized, mode: 0o660, sync: false)
        #expect(chmod(writable, 0o660) == 0 && rename(writable, fixture.layout.ctl + "/writable") == 0)
        let linked = fixture.layout.tmp + "/.ctl-linked"
        try SystemCall.writeNewFile(linked, request.json.serialized, mode: 0o640, sync: false)
        #expect(link(linked, fixture.layout.tmp + "/kept") == 0 && rename(linked, fixture.layout.ctl + "/linked") == 0)
        let refusedWritable = try #require(client.result(of: "writable", timeout: .seconds(20)))
        #expect(refusedWritable.skipped.map(\.reason)
                == ["only root may ask for a replay; ctl/writable is writable by others than root (mode 660)"])
        let refusedLinked = try #require(client.result(of: "linked", timeout: .seconds(20)))
        #expect(refusedLinked.skipped.map(\.reason) == ["only root may ask for a replay; ctl/linked has 2 names"])
        #expect(fixture.names("queue").isEmpty && deliveries(of: "r3", fixture) == 1)
    }

    @Test func anAnswerOnlyTheDaemonCouldHaveWrittenIsTakenAndARequestRunsOnce() async throws {
        let fixture = try DaemonFixture()
        let client = ControlClient(layout: fixture.layout)
        try fixture.layout.createMissingDirectories()
        // A producer's made-up answer, there before the daemon answers.
        let forged = fixture.layout.ctl + "/made-up.result"
        _ = fixture.directory.write(#"{"applied":["everything"],"skipped":[]}"#, to: "spool/ctl/made-up.result")
        #expect(chown(forged, 65534, 65534) == 0)
        #expect(client.result(of: "made-up", timeout: .milliseconds(200)) == nil)

        // The CLI's own request (no daemon runs yet): mode 0640 whatever
        // the umask, so group txrecon can neither rewrite nor link it.
        let previous = umask(0)
        let name = try client.submit(ControlRequest(.retry, all: true))
        umask(previous)
        let mode = try #require(try SystemCall.linkStatus(fixture.layout.ctl + "/" + name)).st_mode
        #expect(mode & 0o777 == 0o640)

        // An answer that cannot be written (a directory at its name): the
        // request ran, and is removed rather than run at every scan.
        try await fixture.start()
        try fixture.drop(fixture.envelope("r6", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["r6"] })
        #expect(mkdir(fixture.layout.ctl + "/blocked.result", 0o755) == 0)
        _ = fixture.directory.write("x", to: "spool/ctl/blocked.result/inside")
        let request = ControlRequest(.retry, all: true)
        _ = fixture.directory.write(String(decoding: request.json.serialized, as: UTF8.self), to: "spool/ctl/blocked",
                                    mode: 0o640)
        #expect(await fixture.eventually { !fixture.names("ctl").contains("blocked") })
        let log = fixture.daemon?.stderr ?? ""
        #expect(log.contains("cannot answer ctl/blocked") && log.contains("is removed so that it does not run again"),
                "\(log)")
    }
}
