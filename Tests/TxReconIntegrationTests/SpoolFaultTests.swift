// The spool's own faults, against the built binary: a file system that fills
// up (a small tmpfs), and directories or files the daemon may not read. Tests
// run as root, which no permission stops, so the permission tests run the
// daemon as nobody (uid 65534) with setpriv on a spool nobody owns.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

extension DaemonFixture {
    static let nobody: uid_t = 65534

    /// Runs a command that must succeed (mount, chown, …).
    /// Blocks briefly: these commands end at once, and teardown cannot await.
    func must(_ command: String...) throws {
        let process = try DaemonProcess(command: command, stderrPath: directory.path + "/must-\(UInt32.random(in: 0...UInt32.max)).err")
        let status = process.waitBlocking(timeout: .seconds(30)) ?? -1
        guard status == 0 else {
            throw FixtureError("\(command.joined(separator: " ")) exited \(status): \(process.stderr)")
        }
    }

    /// Where nobody's copies of the binary and the root certificate live:
    /// the checkout may sit where nobody cannot enter (a `mktemp -d`
    /// directory, root's home), the fixture's directory is opened to it.
    var unprivilegedDirectory: String { directory.path + "/nobody" }

    /// `setpriv` and the copied binary, as nobody.
    var asNobody: [String] {
        let id = "\(DaemonFixture.nobody)"
        return ["/usr/bin/setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups", unprivilegedDirectory + "/txrecon"]
    }

    /// Starts the daemon as nobody on a spool nobody owns, and waits until
    /// it is ready (READY=1 on a notify socket nobody may write to). The
    /// daemon reads only copies nobody may read: its binary, its root
    /// certificate, its configuration.
    @discardableResult
    func startAsNobody() async throws -> DaemonProcess {
        try layout.createMissingDirectories()
        chmod(directory.path, 0o755)
        try must("/bin/mkdir", "-m", "0755", "-p", unprivilegedDirectory)
        try must("/bin/cp", DaemonProcess.binary, unprivilegedDirectory + "/txrecon")
        let root = unprivilegedDirectory + "/AppleRootCA-G3.cer"
        let receiptRoot = unprivilegedDirectory + "/AppleIncRootCertificate.cer"
        try must("/bin/cp", DaemonIntegrationTests.repositoryRoot + "/Config/AppleRootCA-G3.cer", root)
        try must("/bin/cp", DaemonIntegrationTests.repositoryRoot + "/Config/AppleIncRootCertificate.cer", receiptRoot)
        chmod(root, 0o644)
        chmod(receiptRoot, 0o644)
        try writeConfig("", verification: DaemonFixture.sampleVerification(roots: root, receiptRoots: receiptRoot))
        try must("/bin/chown", "-R", "\(DaemonFixture.nobody):\(DaemonFixture.nobody)", layout.root)
        let socketDirectory = String(notify.path[..<notify.path.lastIndex(of: "/")!])
        chmod(socketDirectory, 0o755)
        chmod(notify.path, 0o777)
        chmod(configPath, 0o644)
        let process = try DaemonProcess(command: asNobody + ["run", "--config", configPath],
                                        environment: ["NOTIFY_SOCKET": notify.path],
                                        stderrPath: directory.path + "/nobody-\(notify.messages.count).log")
        adopt(process)
        let ready = await notify.waitFor({ $0.senderPID == process.pid && $0.contains("READY=1") }, timeout: .seconds(30))
        guard ready != nil else { throw FixtureError("no READY=1 from the daemon run as nobody:\n\(process.stderr)") }
        return process
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

@Suite(.serialized, .timeLimit(.minutes(2)), .enabled(if: getuid() == 0, "needs root: mount, chown, setpriv"))
struct SpoolFaultTests {
    @Test func aFullSpoolPausesIntakeWithoutTakingPartialFilesAndResumesWhenSpaceIsFree() async throws {
        let fixture = try DaemonFixture()
        try SystemCall.makeDirectory(fixture.layout.root, mode: 0o755)
        try fixture.must("/bin/mount", "-t", "tmpfs", "-o", "size=2m,mode=0755", "tmpfs", fixture.layout.root)
        defer {
            fixture.daemon?.terminate()
            try? fixture.must("/bin/umount", "-l", fixture.layout.root)
        }
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("before", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["before"] })

        // Written while there is room; moved into new/ once there is none.
        _ = fixture.directory.write("{broken", to: "spool/tmp/broken", mode: 0o640)
        _ = fixture.directory.write(fixture.envelope("during", version: 1), to: "spool/tmp/during", mode: 0o640)
        try fill(fixture.layout.root + "/filler")

        #expect(rename(fixture.layout.tmp + "/broken", fixture.layout.new + "/broken") == 0)
        #expect(await fixture.eventually { daemon.stderr.contains("intake paused: the spool's file system refused a write") })
        #expect(await fixture.eventually { fixture.statusLines.last?.contains("intake paused:") == true },
                "\(fixture.statusLines.last ?? "")")
        #expect(rename(fixture.layout.tmp + "/during", fixture.layout.new + "/during") == 0)

        // A well-behaved producer fails and leaves nothing; one writing in
        // place leaves an empty file, which must never become an item.
        _ = fixture.directory.write(fixture.envelope("submitted", version: 1), to: "submitted.json")
        let submitted = try await fixture.cli(["submit", fixture.directory.path + "/submitted.json"])
        #expect(submitted.status != 0)
        #expect(submitted.stderr.contains("No space left on device"), "\(submitted.stderr)")
        #expect(fixture.names("tmp") == [])
        let partial = open(fixture.layout.new + "/partial", O_WRONLY | O_CREAT | O_EXCL, 0o640)
        let bytes = Array(fixture.envelope("partial", version: 1).utf8)
        #expect(write(partial, bytes, bytes.count) < bytes.count)
        close(partial)

        #expect(unlink(fixture.layout.root + "/filler") == 0)
        #expect(await fixture.eventually(timeout: .seconds(40)) { daemon.stderr.contains("intake resumed after") })
        #expect(await fixture.eventually { fixture.statusLines.last?.contains("intake paused") == false })
        #expect(await fixture.eventually { fixture.doneItems() == ["before", "during"] })
        // The empty file written in place is young: it settles first (5 s).
        #expect(await fixture.eventually { fixture.names("rejected") == ["broken", "broken.reason", "partial", "partial.reason"] })
        #expect(fixture.rejectionCode("partial") == "empty-file")
        #expect(fixture.names("new") == [])
        #expect(!fixture.server.requests.contains { $0.header("Idempotency-Key")?.hasPrefix("partial") == true })
    }

    /// The ledger's file system fills up: its history stops growing, its
    /// deliveries do not; the journal and STATUS say so; and once there is
    /// room again (here: at the next start) what was delivered meanwhile is
    /// caught up from done/, which kept it.
    @Test func aLedgerWhoseFileSystemFillsCostsItsHistoryNeverADelivery() async throws {
        let fixture = try DaemonFixture()
        let state = fixture.directory.path + "/state"
        try SystemCall.makeDirectory(state, mode: 0o700)
        try fixture.must("/bin/mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", state)
        defer {
            fixture.daemon?.terminate()
            try? fixture.must("/bin/umount", "-l", state)
        }
        try fixture.writeConfig("")
        let first = try await fixture.start()
        try fixture.drop(fixture.envelope("before", version: 1))
        #expect(await fixture.eventually { fixture.doneItems() == ["before"] })
        try fill(state + "/filler")
        for index in 1...20 { try fixture.drop(fixture.envelope("during-\(index)", version: 1)) }
        #expect(await fixture.eventually { fixture.doneItems().count == 21 }, "delivery goes on")
        #expect(await fixture.eventually { first.stderr.contains("cannot be used: its file system is full") },
                "\(first.stderr)")
        #expect(await fixture.eventually { fixture.statusLines.last?.contains("ledger unavailable") == true },
                "\(fixture.statusLines.last ?? "")")

        first.signal(SIGTERM)
        #expect(await first.wait(timeout: .seconds(30)) == 0)
        #expect(unlink(state + "/filler") == 0)
        let second = try await fixture.start()
        #expect(await fixture.eventually { second.stderr.contains("the ledger caught up from done/") },
                "\(second.stderr)")
        let history = try await fixture.cli(["history", "--json"])
        let rows = try #require(try JSONValue.parse(Array(history.stdout.utf8)).arrayValue)
        #expect(Set(rows.compactMap { $0["id"]?.stringValue }).count == 21, "every delivery is in the ledger")
        #expect(fixture.server.requests.count == 21, "and none was sent twice")
    }

    @Test func newMadeInaccessibleEndsTheDaemonWithStatus1AndAClearMessage() async throws {
        let fixture = try DaemonFixture()
        let daemon = try await fixture.startAsNobody()
        #expect(chmod(fixture.layout.new, 0o000) == 0)
        #expect(await daemon.wait(timeout: .seconds(10)) == 1)
        #expect(daemon.stderr.contains("/new is no longer readable and writable by txrecon (Permission denied)"))
        #expect(daemon.stderr.contains("exiting so that systemd restarts txrecon"))
        let again = try DaemonProcess(command: fixture.asNobody + ["run", "--config", fixture.configPath],
                                      stderrPath: fixture.directory.path + "/again.log")
        #expect(await again.wait(timeout: .seconds(10)) == 1, "a restart fails the same clear way until the operator repairs it")
        #expect(again.stderr.contains("Permission denied"))
    }

    @Test func aFileAnotherUserKeepsToItselfIsRejectedAndOneItSharesIsDelivered() async throws {
        let fixture = try DaemonFixture()
        try await fixture.startAsNobody()
        for (name, mode) in [("private", mode_t(0o600)), ("shared", mode_t(0o644))] {
            _ = fixture.directory.write(fixture.envelope(name, version: 1), to: "spool/tmp/" + name, mode: mode)
            #expect(chown(fixture.layout.tmp + "/" + name, 4242, 4242) == 0)
            #expect(rename(fixture.layout.tmp + "/" + name, fixture.layout.new + "/" + name) == 0)
        }
        #expect(await fixture.eventually { fixture.doneItems() == ["shared"] })
        #expect(await fixture.eventually { fixture.names("rejected") == ["private", "private.reason"] })
        let reason = try SystemCall.readFile(fixture.layout.rejected + "/private.reason", limit: 65536)
        #expect(String(decoding: reason, as: UTF8.self).hasPrefix("unreadable: "))
    }

    @Test func aRequestTheDaemonMayNotReadIsAnsweredAndSetAside() async throws {
        let fixture = try DaemonFixture()
        try await fixture.startAsNobody()
        let request = ControlRequest(.retry, all: true).json.serializedString
        _ = fixture.directory.write(request, to: "spool/tmp/private", mode: 0o600)
        #expect(chown(fixture.layout.tmp + "/private", 4242, 4242) == 0)
        #expect(rename(fixture.layout.tmp + "/private", fixture.layout.ctl + "/private") == 0)
        #expect(await fixture.eventually { fixture.names("ctl") == [".rejected-private", "private.result"] })
        let answer = try #require(ControlResult(json: try SystemCall.readFile(fixture.layout.ctl + "/private.result",
                                                                                limit: 4096)))
        #expect(answer.skipped.first?.reason == "not a request txrecon can read: it cannot be read: Permission denied")
    }

    /// Writes zeros to `path` until the file system is full.
    private func fill(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard descriptor >= 0 else { throw FixtureError("open \(path): errno \(errno)") }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 65536)
        while write(descriptor, chunk, chunk.count) > 0 {}
        let small = [UInt8](repeating: 0, count: 1)
        while write(descriptor, small, 1) > 0 {}
    }
}
