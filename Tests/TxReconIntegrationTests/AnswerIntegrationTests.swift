// The outbox end to end: the real daemon delivering to a loopback backend
// writes Apple's answers into outbox/new/ (the backend's consumption
// information, Finish Transaction for a purchase it confirmed), and the
// built `txrecon answer` sends them to the App Store Server API stand-in
// (MockAppStoreServerAPI: bearer JWT checked as for the sweep). Real
// clocks; the tests wait for events, never for a fixed time.
//
// The test PKI's leaf expired on 2026-01-01, so what the daemon verifies
// is signed inside its validity, long before today: a consumption request
// the daemon takes is past Apple's 12 hours by the time `answer` sees it
// (that rule is tested here for real). The sending itself is tested with
// entries written as the daemon writes them, requested a minute ago.
import Glibc
import Synchronization
import Testing
@testable import TxRecon
import TxReconTestSupport

final class AnswerFixture {
    private let base: ReconcileFixture
    var api: MockAppStoreServerAPI { base.api }
    var daemon: DaemonFixture { base.daemon }
    var outbox: Outbox { Outbox(spool: daemon.layout.root) }

    init(outbox: String = "FinishTransactions=yes") throws {
        base = try ReconcileFixture(extraConfig: "[Outbox]\n" + outbox)
    }

    /// A CONSUMPTION_REQUEST for transaction `id`, signed inside the test
    /// PKI's validity (500 ms after the transaction), as Apple posts it.
    static func consumptionRequest(_ id: String) -> String {
        let transaction = TestPKI.sign(payload: TestJWS.transactionPayload(transactionId: id,
                                                                           signedDate: TestPKI.insideLeafValidity))
        let request = TestPKI.sign(payload: TestJWS.notificationPayload(
            notificationType: "CONSUMPTION_REQUEST", signedDate: TestPKI.insideLeafValidity + 500,
            signedTransactionInfo: transaction))
        return String(decoding: TestDrop.notificationBody(request), as: UTF8.self)
    }

    static let information: JSONValue = .object([
        ("customerConsented", .bool(true)), ("consumptionPercentage", .integer(25_000)),
        ("deliveryStatus", .string("DELIVERED")), ("refundPreference", .string("DECLINE")),
        ("sampleContentProvided", .bool(false)),
    ])

    /// Writes an entry into outbox/new/ as the daemon does.
    @discardableResult
    func write(_ kind: OutboxEntry.Kind, _ id: String, requestedAgo: Int64 = 60_000,
               information: JSONValue = AnswerFixture.information) throws -> String {
        try outbox.prepare()
        let now = WallTime.nowMilliseconds
        let entry = OutboxEntry(kind: kind, transactionId: id, environment: .sandbox, bundleId: ReconcileFixture.bundleID,
                                requestedAt: kind == .consumption ? now - requestedAgo : nil, confirmedAt: now,
                                destination: "backend",
                                consumptionInformation: kind == .consumption ? information : nil)
        #expect(try outbox.write(entry) == .written)
        return entry.fileName
    }

    func answer() async throws -> (status: Int32, stdout: String, stderr: String) {
        try await daemon.cli(["answer"])
    }

    func names(_ directory: String) -> [String] { daemon.names("outbox/" + directory) }
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct AnswerIntegrationTests {
    @Test func theBackendsConsumptionInformationReachesTheOutboxAndALateOneIsSetAsideNotSent() async throws {
        let fixture = try AnswerFixture()
        let answer = JSONValue.object([("consumptionInformation", AnswerFixture.information)]).serializedString
        fixture.daemon.server.setHandler { request in
            request.bodyText.contains("CONSUMPTION_REQUEST")
                ? .status(200, headers: [("Content-Type", "application/json")], body: answer) : .status(200)
        }
        try await fixture.daemon.start()
        try fixture.daemon.drop(AnswerFixture.consumptionRequest("5100"))
        let name = "consumption.Sandbox.5100.\(TestPKI.insideLeafValidity + 500).json"
        #expect(await fixture.daemon.eventually { fixture.daemon.doneItems() == ["5100"] })
        #expect(fixture.names("new") == [name], "written before the item was finished")
        let entry = try OutboxEntry(json: fixture.outbox.read(name, in: fixture.outbox.new))
        #expect(entry.consumptionInformation == AnswerFixture.information)
        #expect(fixture.api.answers.isEmpty && fixture.api.tokensSeen.isEmpty, "the daemon never talks to Apple")

        let run = try await fixture.answer()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("set aside") && run.stderr.contains("too late"), "\(run.stderr)")
        #expect(fixture.names("aside") == [name, name + ".reason"])
        #expect(fixture.api.answers.isEmpty, "past its 12 hours it is never sent")
        let list = try await fixture.daemon.cli(["list", "outbox"])
        #expect(list.stdout.contains(name) && list.stdout.contains("too late"), "\(list.stdout)")
        let status = try await fixture.daemon.cli(["status"])
        #expect(status.stdout.contains("outbox:   0 waiting for txrecon answer, 1 set aside, 0 sent"),
                "\(status.stdout)")
    }

    @Test func applesFailureIsRetriedAndTheAnswerSentOnce() async throws {
        let fixture = try AnswerFixture()
        let name = try fixture.write(.consumption, "5200")
        fixture.api.inject(.serverError(503))
        let run = try await fixture.answer()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(fixture.api.answers.map(\.status) == [503, 202], "sent again after the 503, then once")
        #expect(fixture.api.answers.allSatisfy { $0.kind == "consumption" && $0.transactionId == "5200" })
        #expect(try JSONValue.parse(fixture.api.answers[1].body) == AnswerFixture.information)
        #expect(fixture.names("sent") == [name] && fixture.names("new").isEmpty && fixture.names("queue").isEmpty)
        #expect(fixture.api.problems == [])
        let again = try await fixture.answer()
        #expect(again.status == 0 && fixture.api.answers.count == 2, "nothing is sent twice")
        let metrics = String(decoding: try SystemCall.readFile(fixture.daemon.directory.path
                                                               + "/metrics/txrecon-answer.prom", limit: 65536),
                             as: UTF8.self)
        #expect(metrics.contains("txrecon_outbox_entries{state=\"sent\"} 1\n"), "\(metrics)")
    }

    /// Without a usable key the run ends 78, having taken outbox/new/ into
    /// queue/: txrecon-answer.path starts a run while new/ holds anything,
    /// and would otherwise start it again and again until systemd's start
    /// limit failed it. Once the key is back, the timer's run sends it.
    @Test func withoutAKeyTheEntriesWaitInTheQueueAndTheRunSaysWhy() async throws {
        let fixture = try AnswerFixture()
        let name = try fixture.write(.consumption, "5300")
        let key = fixture.daemon.directory.path + "/appstore-key.p8"
        let pem = try SystemCall.readFile(key, limit: 1 << 16)
        #expect(unlink(key) == 0)
        let run = try await fixture.answer()
        #expect(run.status == 78, "stderr: \(run.stderr)")
        #expect(fixture.names("new").isEmpty && fixture.names("queue") == [name], "taken out of new/, not sent")
        #expect(fixture.api.answers.isEmpty)
        try SystemCall.writeNewFile(key, pem, mode: 0o600, sync: false)
        let again = try await fixture.answer()
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(fixture.names("sent") == [name] && fixture.api.answers.count == 1)
    }

    @Test func aRateLimitIsWaitedOutUntilApplesRetryAfter() async throws {
        let fixture = try AnswerFixture()
        try fixture.write(.finish, "5300")
        let retryAt = WallTime.nowMilliseconds + 1500
        fixture.api.inject(.rateLimited(retryAfter: String(retryAt)))
        let run = try await fixture.answer()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        let answers = fixture.api.answers
        #expect(answers.map(\.status) == [429, 200])
        #expect(answers.count == 2 && answers[1].at >= retryAt, "nothing sent before Retry-After")
        #expect(answers.last?.kind == "finish" && fixture.names("sent") == ["finish.Sandbox.5300.json"])
    }

    @Test func consumptionWithoutTheCustomersConsentIsSetAsideAndNeverSent() async throws {
        let fixture = try AnswerFixture()
        var refused = AnswerFixture.information
        refused = refused.merging([("customerConsented", .bool(false))])
        let name = try fixture.write(.consumption, "5400", information: refused)
        let run = try await fixture.answer()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(run.stderr.contains("customerConsented is not true"), "\(run.stderr)")
        #expect(fixture.api.answers.isEmpty)
        #expect(fixture.names("aside") == [name, name + ".reason"])
        let again = try await fixture.answer()
        #expect(again.status == 0 && fixture.api.answers.isEmpty, "set aside, not sent forever")
    }

    @Test func applesRefusalSetsTheEntryAsideAnd401ExitsForTheConfiguration() async throws {
        let fixture = try AnswerFixture()
        let refused = try fixture.write(.finish, "5500")
        fixture.api.inject(.refused(404, errorCode: 4_040_010))
        let run = try await fixture.answer()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(fixture.names("aside") == [refused, refused + ".reason"])
        #expect(run.stderr.contains("Apple does not know transaction 5500"), "\(run.stderr)")

        let kept = try fixture.write(.finish, "5501")
        fixture.api.refuseCredentials()
        let denied = try await fixture.answer()
        #expect(denied.status == 78, "stderr: \(denied.stderr)")
        #expect(denied.stderr.contains("answer: 0 sent, 0 set aside, 1 waiting"), "\(denied.stderr)")
        #expect(fixture.names("queue") == [kept], "kept for the next run")
    }

    @Test func aPurchaseIsFinishedOnlyOnceTheBackendConfirmedIt() async throws {
        let fixture = try AnswerFixture()
        let confirmed = Mutex(false)
        fixture.daemon.server.setHandler { _ in confirmed.withLock { $0 } ? .status(200) : .status(503) }
        try await fixture.daemon.start()
        let purchase = TestPKI.sign(payload: TestJWS.transactionPayload(transactionId: "5600",
                                                                        signedDate: TestPKI.insideLeafValidity))
        try fixture.daemon.drop(purchase)
        #expect(await fixture.daemon.eventually { fixture.daemon.server.requests.count >= 2 })
        #expect(fixture.names("new").isEmpty && fixture.daemon.doneItems().isEmpty,
                "nothing to finish while the backend answers 503")
        let before = try await fixture.answer()
        #expect(before.status == 0 && fixture.api.answers.isEmpty)

        confirmed.withLock { $0 = true }
        #expect(await fixture.daemon.eventually { fixture.daemon.doneItems() == ["5600"] })
        #expect(fixture.names("new") == ["finish.Sandbox.5600.json"])
        let run = try await fixture.answer()
        #expect(run.status == 0, "stderr: \(run.stderr)")
        #expect(fixture.api.answers.map(\.kind) == ["finish"] && fixture.api.answers.first?.transactionId == "5600")
        #expect(fixture.api.problems == [])
    }

    @Test func aDaemonKilledOnceTheAnswerIsWrittenLosesNothingAndWritesItOnce() async throws {
        let fixture = try AnswerFixture()
        let answer = JSONValue.object([("consumptionInformation", AnswerFixture.information)]).serializedString
        fixture.daemon.server.setHandler { _ in
            .status(200, headers: [("Content-Type", "application/json")], body: answer)
        }
        let first = try await fixture.daemon.start()
        try fixture.daemon.drop(AnswerFixture.consumptionRequest("5700"))
        // SIGKILL the moment the entry is in new/: between the backend's 2xx
        // and the item's move into done/, or just after it.
        #expect(await fixture.daemon.eventually(timeout: .seconds(20)) { !fixture.names("new").isEmpty })
        #expect(kill(first.pid, SIGKILL) == 0)
        _ = await first.wait(timeout: .seconds(10))
        try await fixture.daemon.start()
        #expect(await fixture.daemon.eventually { fixture.daemon.doneItems() == ["5700"] })
        #expect(await fixture.daemon.eventually { fixture.daemon.names("destinations/backend/new").isEmpty })
        let name = "consumption.Sandbox.5700.\(TestPKI.insideLeafValidity + 500).json"
        #expect(fixture.names("new") == [name], "one entry, whether the item was delivered again or not")
        #expect((1...2).contains(fixture.daemon.server.requests.count))
    }

    @Test func anAnswerRunKilledMidSendSendsTheEntryOnceMoreAtMost() async throws {
        let fixture = try AnswerFixture()
        let name = try fixture.write(.finish, "5800")
        fixture.api.inject(.hang)
        let run = try DaemonProcess(["answer", "--config", fixture.daemon.configPath],
                                    stderrPath: fixture.daemon.directory.path + "/answer.log")
        #expect(await fixture.daemon.eventually { fixture.api.answers.count == 1 }, "the request reached Apple")
        #expect(kill(run.pid, SIGKILL) == 0)
        _ = await run.wait(timeout: .seconds(10))
        #expect(fixture.names("queue") == [name], "kept: nothing is lost")
        let again = try await fixture.answer()
        #expect(again.status == 0, "stderr: \(again.stderr)")
        #expect(fixture.api.answers.count == 2, "sent once more, no more")
        #expect(fixture.names("sent") == [name] && fixture.names("queue").isEmpty)
    }
}
