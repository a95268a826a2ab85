// AnswerRunTests: `txrecon answer` with a manual clock against the stand-in
// of Apple's API: a run that Apple keeps failing gives up within its budget
// (no real waiting) and exits 75 with the entry kept for the next run; and
// the API each environment's entries go to.
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct AnswerRunTests {
    @Test func aRunAppleKeepsFailingGivesUpWithinItsBudgetAndKeepsTheEntry() throws {
        let directory = TemporaryDirectory("txrecon-answer")
        let clock = ManualSweepClock(wallMilliseconds: SweepHarness.start)
        let key = TestSigningKey()
        let api = try MockAppStoreServerAPI(identity: MockAppStoreServerAPI.Identity(key: key), entries: [],
                                            now: { clock.wallMilliseconds })
        let keyPath = directory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        let path = directory.write("""
            [Spool]
            Directory=\(directory.path)/spool
            [Backend]
            URL=http://127.0.0.1:9/
            \(api.sweepSection(privateKeyFile: keyPath))
            """, to: "txrecon.conf")
        let outbox = Outbox(spool: directory.path + "/spool")
        directory.makeDirectory("spool", mode: 0o750)
        try outbox.prepare()
        let entry = OutboxEntry(kind: .finish, transactionId: "6100", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: clock.wallMilliseconds, destination: "backend",
                                consumptionInformation: nil)
        _ = try outbox.write(entry)
        for _ in 0...RateLimiter.maximumBackoffs { api.inject(.serverError(503)) }

        let report = AnswerRun.perform(configurationPath: path, environment: [:], clock: clock, log: RecordingLogSink())
        #expect(report.stop?.kind == .temporary, "\(String(describing: report.stop))")
        #expect(report.exitStatus == 75)
        #expect(report.waiting == 1 && report.sent == 0)
        #expect(try outbox.entries(in: outbox.queue) == [entry.fileName], "kept for the next run")
        #expect(api.answers.count == RateLimiter.maximumBackoffs + 1)
        let waited = clock.sleeps.reduce(Duration.zero, +)
        #expect(waited <= .seconds(2 * 60), "bounded: \(waited)")
        #expect(api.problems == [])
    }

    @Test func eachEntryGoesWithItsAppsTokenAndAnAppWhoseKeyFailsWaitsAlone() throws {
        let directory = TemporaryDirectory("txrecon-answer-apps")
        let clock = ManualSweepClock(wallMilliseconds: SweepHarness.start)
        let key = TestSigningKey()
        // One stand-in per app, each taking only tokens for its bundle id.
        func api(_ bundleID: String) throws -> MockAppStoreServerAPI {
            var identity = MockAppStoreServerAPI.Identity(key: key)
            identity.bundleID = bundleID
            return try MockAppStoreServerAPI(identity: identity, entries: [], now: { clock.wallMilliseconds })
        }
        let main = try api("com.example.app"), two = try api("com.example.two")
        let keyPath = directory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        let path = directory.write("""
            [Spool]
            Directory=\(directory.path)/spool
            [Backend]
            URL=http://127.0.0.1:9/
            [Verification]
            BundleID=com.example.app
            Environment=Sandbox
            \(main.sweepSection(privateKeyFile: keyPath))
            """, to: "txrecon.conf")
        directory.write("[Verification]\nBundleID=com.example.two\n[Sweep]\nBaseURL=\(two.url)\n", to: "apps/two.conf")
        directory.write("[Verification]\nBundleID=com.example.three\n[Sweep]\nPrivateKeyFile=/nonexistent/key.p8\n",
                        to: "apps/three.conf")
        let outbox = Outbox(spool: directory.path + "/spool")
        directory.makeDirectory("spool", mode: 0o750)
        try outbox.prepare()
        func finish(_ id: String, _ bundleId: String) throws -> String {
            _ = try outbox.write(OutboxEntry(kind: .finish, transactionId: id, environment: .sandbox, bundleId: bundleId,
                                         requestedAt: nil, confirmedAt: clock.wallMilliseconds, destination: "backend",
                                         consumptionInformation: nil))
            return "finish.Sandbox.\(id).json"
        }
        _ = try finish("7001", "com.example.app")
        _ = try finish("7002", "com.example.two")
        let three = try finish("7003", "com.example.three")
        let nobody = try finish("7004", "com.example.nobody")

        let report = AnswerRun.perform(configurationPath: path, environment: [:], clock: clock, log: RecordingLogSink())
        #expect(main.answers.map(\.transactionId) == ["7001"] && two.answers.map(\.transactionId) == ["7002"])
        #expect(main.problems == [] && two.problems == [], "each with its own app's token")
        #expect(report.sent == 2 && report.waitingForApp == 2)
        #expect(try outbox.entries(in: outbox.queue).sorted() == [three, nobody].sorted())
        #expect(report.exitStatus == 78 && report.stop?.reason.contains("/nonexistent/key.p8") == true,
                "\(String(describing: report.stop))")
    }

    @Test func eachEntryGoesToTheAPIOfItsOwnEnvironmentUnlessBaseURLIsSet() {
        var settings = SweepSettings()
        settings.environment = .production
        #expect(AnswerSender.baseURL(for: .sandbox, settings: settings) == "https://api.storekit-sandbox.apple.com")
        #expect(AnswerSender.baseURL(for: .production, settings: settings) == "https://api.storekit.apple.com")
        settings.baseURL = "http://127.0.0.1:8443"
        #expect(AnswerSender.baseURL(for: .sandbox, settings: settings) == "http://127.0.0.1:8443")
    }
}
