// How the command line answers a missing or mistyped command: usage errors
// exit 2 and say what to type instead.
import Testing
import TxReconTestSupport

@Suite(.timeLimit(.minutes(2)))
struct CommandLineUsageTests {
    @Test func noCommandPrintsTheOverviewToStandardErrorAndExits2() async throws {
        let directory = TemporaryDirectory("txrecon-usage")
        let bare = try await DaemonProcess.run([], in: directory.path)
        #expect(bare.status == 2)
        #expect(bare.stdout.isEmpty)
        #expect(bare.stderr.contains("Usage: txrecon COMMAND"))
        #expect(bare.stderr.contains("  status "))
    }

    @Test func askingForHelpPrintsTheOverviewToStandardOutputAndExits0() async throws {
        let directory = TemporaryDirectory("txrecon-usage")
        for word in ["--help", "-h", "help"] {
            let help = try await DaemonProcess.run([word], in: directory.path)
            #expect(help.status == 0, "\(word)")
            #expect(help.stdout.contains("Usage: txrecon COMMAND"), "\(word)")
            #expect(help.stderr.isEmpty, "\(word)")
        }
    }

    @Test func anUnknownCommandIsAnsweredWithTheNearestKnownOne() async throws {
        let directory = TemporaryDirectory("txrecon-usage")
        let typo = try await DaemonProcess.run(["stauts"], in: directory.path)
        #expect(typo.status == 2)
        #expect(typo.stderr == "txrecon: unknown command 'stauts'; did you mean 'status'? see 'txrecon --help'\n")
        let unknown = try await DaemonProcess.run(["frobnicate"], in: directory.path)
        #expect(unknown.status == 2)
        #expect(unknown.stderr == "txrecon: unknown command 'frobnicate'; see 'txrecon --help'\n")
    }
}
