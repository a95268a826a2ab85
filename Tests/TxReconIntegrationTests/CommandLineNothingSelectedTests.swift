// A command that did nothing says so: `release`, `retry` and
// `requeue-rejected` with --all on a spool that has nothing for them print
// what they found (none), with the built CLI and daemon. (A replay's empty
// and reversed windows: ReplayIntegrationTests, which need root.)
import Testing
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommandLineNothingSelectedTests {
    @Test func anAllThatFindsNothingSaysWhatItLookedFor() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        for (command, answer) in [("release", "nothing released: no item is held\n"),
                                  ("retry", "nothing made due: no item is queued\n"),
                                  ("requeue-rejected", "nothing requeued: rejected/ holds no file\n")] {
            let result = try await fixture.cli([command, "--all"])
            #expect(result.status == 0 && result.stdout == answer && result.stderr.isEmpty, "\(command): \(result)")
        }
    }
}
