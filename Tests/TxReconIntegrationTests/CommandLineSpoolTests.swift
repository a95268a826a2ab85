// What status, list and show say about the spool itself: one that is not
// there, and a daemon that is not running.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommandLineSpoolTests {
    @Test func statusListAndShowNameTheMissingSpoolAndWhatMakesIt() async throws {
        let fixture = try DaemonFixture()
        let root = fixture.layout.root
        let remedy = "(systemctl start txrecon), or run systemd-tmpfiles --create\n"
        for arguments in [["status"], ["list"], ["list", "hold"], ["show", "2000000123456789"]] {
            let answer = try await fixture.cli(arguments)
            #expect(answer.status == 1, "\(arguments)")
            #expect(answer.stderr == "txrecon: \(arguments[0]): the spool \(root) does not exist; is Directory= right in "
                + "\(fixture.configPath)? the daemon creates it at start " + remedy, "\(arguments)")
        }
        #expect(mkdir(root, 0o750) == 0)
        for (arguments, directory) in [(["status"], "new"), (["list", "rejected"], "rejected"), (["show", "1"], "queue")] {
            let answer = try await fixture.cli(arguments)
            #expect(answer.status == 1, "\(arguments)")
            #expect(answer.stderr == "txrecon: \(arguments[0]): the spool \(root) has no \(directory)/; "
                + "the daemon creates its directories at start " + remedy, "\(arguments)")
        }
    }

    @Test func whenTheDaemonIsNotRunningStatusShowsTheLastStatusItWroteAndWhen() async throws {
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        let never = try await fixture.cli(["status"])
        #expect(never.stdout.contains("\ndaemon:   not running\n"), "no status file: nothing more to say")
        let neverJSON = try JSONValue.parse(try await fixture.cli(["status", "--json"]).stdout)
        #expect(neverJSON["daemonRunning"] == .bool(false) && neverJSON["daemon"] == .null && neverJSON["lastDaemonStatus"] == .null)

        let daemon = try await fixture.start()
        let running = try JSONValue.parse(try await fixture.cli(["status", "--json"]).stdout)
        #expect(running["daemonRunning"] == .bool(true) && running["lastDaemonStatus"] == .null)
        #expect(running["daemon"]?["pid"]?.int64Value == Int64(daemon.pid))
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(10)) == 0)

        let stopped = try await fixture.cli(["status"])
        #expect(stopped.status == 0, "\(stopped.stderr)")
        let line = try #require(stopped.stdout.split(separator: "\n").first { $0.hasPrefix("daemon:") })
        #expect(line.hasPrefix("daemon:   not running; its last status, written 20"), "\(line)")
        #expect(line.contains(" ago): stopping: 0 queued, 0 delivering"), "\(line)")
        let json = try JSONValue.parse(try await fixture.cli(["status", "--json"]).stdout)
        #expect(json["daemonRunning"] == .bool(false) && json["daemon"] == .null)
        let last = try #require(json["lastDaemonStatus"])
        #expect(last["pid"]?.int64Value == Int64(daemon.pid))
        #expect(last["phase"]?.stringValue == "stopping")
        #expect(last["writtenAt"]?.stringValue.map { line.contains("written \($0) ") } == true,
                "the same time in text and JSON")
    }
}
