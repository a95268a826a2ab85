// ctl/ as a hostile member of group txrecon can fill it: names that are
// not items, and entries that are not requests. The built daemon answers
// each, never moves a directory, and never leaves an entry to be read again
// at every pass.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct ControlDirectoryTests {
    @Test func requeueingTheEmptyNameIsRefusedAndRejectedKeepsWorking() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        try fixture.drop("not json", name: "junk")
        #expect(await fixture.eventually { fixture.names("rejected") == ["junk", "junk.reason"] })
        for name in ["", ".", "..", "a/b", "junk.reason"] {
            let answer = try await fixture.cli(["requeue-rejected", name])
            #expect(answer.status == 1, "\(name)")
            #expect(answer.stderr == "\(name): skipped: not a valid name\n", "\(name)")
        }
        #expect(fixture.names("ctl").isEmpty, "nothing the daemon would refuse is sent")
        #expect(fixture.names("rejected") == ["junk", "junk.reason"])
        #expect(fixture.names("new").isEmpty)
        // A request written by hand is checked by the daemon too.
        let client = ControlClient(layout: fixture.layout)
        let name = try client.submit(ControlRequest(.requeueRejected, targets: ["", "junk"]))
        let result = try #require(client.result(of: name, timeout: .seconds(20)))
        #expect(result.skipped.map(\.target) == [""])
        #expect(result.skipped.first?.reason == "not a valid name")
        #expect(result.applied == ["junk"])
        // Rejection still works: rejected/ is where it was.
        #expect(await fixture.eventually { fixture.names("rejected") == ["junk", "junk.reason"] })
        let status = try await fixture.cli(["list", "rejected"])
        #expect(status.status == 0, "\(status.stderr)")
    }

    /// An answer nobody read (the command gave up, or could not remove it
    /// from the sticky ctl/) is removed once a day old, at a scan of ctl/;
    /// a fresh one waits for its command.
    @Test func anAnswerNobodyReadIsRemovedOnceADayOld() async throws {
        let fixture = try DaemonFixture()
        try fixture.layout.createMissingDirectories()
        let old = fixture.layout.ctl + "/1.2.3.retry.result"
        let fresh = fixture.layout.ctl + "/4.5.6.retry.result"
        try SystemCall.writeNewFile(old, Array("{}".utf8), sync: false,
                                    modifiedAt: Timestamp.nowMilliseconds() - 2 * ControlChannel.answerRetention)
        try SystemCall.writeNewFile(fresh, Array("{}".utf8), sync: false)
        try await fixture.start()
        #expect(await fixture.eventually { fixture.names("ctl") == ["4.5.6.retry.result"] }, "\(fixture.names("ctl"))")
    }

    @Test func entriesInCtlThatAreNotRequestsAreAnsweredAndSetAside() async throws {
        let fixture = try DaemonFixture()
        try await fixture.start()
        let ctl = fixture.layout.ctl
        _ = fixture.directory.write(String(repeating: " ", count: 2 << 20), to: "spool/tmp/big")
        #expect(symlink(fixture.directory.path + "/txrecon.conf", fixture.layout.tmp + "/link") == 0)
        #expect(mkdir(fixture.layout.tmp + "/dir", 0o700) == 0)
        for name in ["big", "link", "dir"] {
            #expect(rename(fixture.layout.tmp + "/" + name, ctl + "/" + name) == 0)
        }
        #expect(await fixture.eventually {
            fixture.names("ctl") == [".rejected-big", ".rejected-dir", ".rejected-link",
                                     "big.result", "dir.result", "link.result"]
        })
        for (name, problem) in [("big", "is larger than 1048576 bytes"), ("link", "is a symbolic link, not a regular file"),
                                ("dir", "is a directory, not a regular file")] {
            let answer = try #require(ControlResult(json: try SystemCall.readFile(ctl + "/" + name + ".result", limit: 4096)))
            #expect(answer.skipped.first?.reason == "not a request txrecon can read: it " + problem, "\(name)")
        }
        let log = fixture.daemon?.stderr ?? ""
        #expect(log.contains("ctl/big is not a request txrecon can read (it is larger than 1048576 bytes); "
                             + "answered and set aside as ctl/.rejected-big"), "\(log)")
        // The daemon goes on answering real requests.
        let retried = try await fixture.cli(["retry", "--all"])
        #expect(retried.status == 0, "\(retried.stderr)")
    }
}
