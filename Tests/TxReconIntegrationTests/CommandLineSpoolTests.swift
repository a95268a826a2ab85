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
}
