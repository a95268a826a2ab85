// AnswerRunTests: `txrecon answer` with a manual clock against the stand-in
// of Apple's API: a run that Apple keeps failing gives up within its budget
// (no real waiting) and exits 75 with the entry kept for the next run; and
// the API each environment's entries go to; and the markers of purchases
// several destinations take, cleared once answered, given up after 30 days.
import Glibc
import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct AnswerRunTests {
    /// Writes `directory`'s txrecon.conf (a spool there, a backend nobody
    /// answers, then `sections` given the path of `key`'s file) and makes
    /// the spool's outbox; the configuration's path and the outbox.
    static func configuration(in directory: TemporaryDirectory, key: TestSigningKey,
                              sections: (_ keyPath: String) -> String) throws -> (path: String, outbox: Outbox) {
        let keyPath = directory.write(key.pkcs8PEM, to: "appstore-key.p8", mode: 0o600)
        let path = directory.write("""
            [Spool]
            Directory=\(directory.path)/spool
            [Backend]
            URL=http://127.0.0.1:9/
            \(sections(keyPath))
            """, to: "txrecon.conf")
        let outbox = Outbox(spool: directory.path + "/spool")
        directory.makeDirectory("spool", mode: 0o750)
        try outbox.prepare()
        return (path, outbox)
    }

    /// A configuration of one app whose [Sweep] goes to a stand-in of
    /// Apple's API, and its spool's outbox, made.
    struct OneApp {
        let directory: TemporaryDirectory
        let clock = ManualSweepClock(wallMilliseconds: SweepHarness.start)
        let api: MockAppStoreServerAPI
        let path: String
        let outbox: Outbox

        init(_ name: String) throws {
            directory = TemporaryDirectory(name)
            let key = TestSigningKey()
            let clock = self.clock
            let api = try MockAppStoreServerAPI(identity: MockAppStoreServerAPI.Identity(key: key), entries: [],
                                                now: { clock.wallMilliseconds })
            self.api = api
            (path, outbox) = try AnswerRunTests.configuration(in: directory, key: key) { keyPath in
                api.sweepSection(privateKeyFile: keyPath)
            }
        }

        /// Writes a finish entry for each of `ids` into new/; the entries.
        func finishes(_ ids: [String]) throws -> [OutboxEntry] {
            try ids.map { id in
                let entry = OutboxEntry(kind: .finish, transactionId: id, environment: .sandbox, bundleId: nil,
                                        requestedAt: nil, confirmedAt: clock.wallMilliseconds, destination: "backend",
                                        consumptionInformation: nil)
                _ = try outbox.write(entry)
                return entry
            }
        }
    }

    /// A configuration of two apps, main (com.example.app) and two
    /// (com.example.two), each with a stand-in of Apple's API taking only
    /// tokens for its own bundle id, and its spool's outbox, made.
    struct TwoApps {
        let directory = TemporaryDirectory("txrecon-answer-apps")
        let clock = ManualSweepClock(wallMilliseconds: SweepHarness.start)
        let main: MockAppStoreServerAPI
        let two: MockAppStoreServerAPI
        let path: String
        let outbox: Outbox

        init() throws {
            let key = TestSigningKey()
            let clock = self.clock
            func api(_ bundleID: String) throws -> MockAppStoreServerAPI {
                var identity = MockAppStoreServerAPI.Identity(key: key)
                identity.bundleID = bundleID
                return try MockAppStoreServerAPI(identity: identity, entries: [], now: { clock.wallMilliseconds })
            }
            let main = try api("com.example.app")
            self.main = main
            two = try api("com.example.two")
            (path, outbox) = try AnswerRunTests.configuration(in: directory, key: key) { keyPath in
                "[Verification]\nBundleID=com.example.app\nEnvironment=Sandbox\n" + main.sweepSection(privateKeyFile: keyPath)
            }
            directory.write("[Verification]\nBundleID=com.example.two\n[Sweep]\nBaseURL=\(two.url)\n", to: "apps/two.conf")
        }

        /// Writes a finish entry for `bundleId` into new/; its name.
        @discardableResult
        func finish(_ id: String, _ bundleId: String) throws -> String {
            _ = try outbox.write(OutboxEntry(kind: .finish, transactionId: id, environment: .sandbox, bundleId: bundleId,
                                             requestedAt: nil, confirmedAt: clock.wallMilliseconds,
                                             destination: "backend", consumptionInformation: nil))
            return "finish.Sandbox.\(id).json"
        }

        func run(log: RecordingLogSink = RecordingLogSink()) -> AnswerReport {
            AnswerRun.perform(configurationPath: path, environment: [:], clock: clock, log: log)
        }
    }

    /// Apple or the network failing for two entries in a row is Apple's
    /// service as a whole: the run ends within their budgets, the third
    /// entry is not asked, and all three wait for the next run.
    @Test func aRunAppleKeepsFailingGivesUpWithinItsBudgetAndKeepsTheEntries() throws {
        let run = try OneApp("txrecon-answer")
        let (clock, api, path, outbox) = (run.clock, run.api, run.path, run.outbox)
        let entries = try run.finishes(["6100", "6101", "6102"])
        for _ in 0..<2 * (RateLimiter.maximumBackoffs + 1) { api.inject(.serverError(503)) }

        let report = AnswerRun.perform(configurationPath: path, environment: [:], clock: clock, log: RecordingLogSink())
        #expect(report.stop?.kind == .temporary, "\(report.stops)")
        #expect(report.exitStatus == 75)
        #expect(report.waiting == 3 && report.sent == 0)
        #expect(try outbox.entries(in: outbox.queue) == entries.map(\.fileName), "kept for the next run")
        // The backoffs in a row are the run's: the second entry, failing
        // the same way, is asked once, with no wait of its own.
        #expect(api.answers.map(\.transactionId) == Array(repeating: "6100", count: RateLimiter.maximumBackoffs + 1)
            + ["6101"])
        let waited = clock.sleeps.reduce(Duration.zero, +)
        #expect(waited <= .seconds(2 * 60), "bounded: \(waited)")
        #expect(api.problems == [])
    }

    /// queue/ goes in name order: one entry Apple keeps failing on its own
    /// must not keep every entry after it waiting, run after run, past a
    /// consumption request's 12 hours.
    @Test func anEntryAppleKeepsFailingAloneWaitsAndTheNextOnesGo() throws {
        let run = try OneApp("txrecon-answer")
        let (clock, api, path, outbox) = (run.clock, run.api, run.path, run.outbox)
        let entries = try run.finishes(["6100", "6101", "6102"])
        for _ in 0...RateLimiter.maximumBackoffs { api.inject(.serverError(500)) }

        let log = RecordingLogSink()
        let report = AnswerRun.perform(configurationPath: path, environment: [:], clock: clock, log: log)
        #expect(report.sent == 2 && report.waiting == 1)
        #expect(try outbox.entries(in: outbox.queue) == [entries[0].fileName])
        #expect(report.stop == nil && report.entryFailures.count == 1
                && report.entryFailures[0].reason.hasPrefix(entries[0].fileName), "\(report.stops)")
        #expect(report.exitStatus == 75, "what is left waits for the timer's next run")
        #expect(log.entries.contains { $0.message.contains("the run goes on with the next entry") })
    }

    /// "Sent at least once, never retried forever": a finish Apple keeps
    /// failing (5xx) goes to aside/ after 30 days in queue/, where a person
    /// sees it, and moved back into new/ it is tried again.
    @Test func aFinishAppleKeepsFailingIsSetAsideAfter30DaysInTheQueue() throws {
        let run = try OneApp("txrecon-answer-finish-deadline")
        let (clock, api, outbox) = (run.clock, run.api, run.outbox)
        let entry = OutboxEntry(kind: .finish, transactionId: "6600", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: clock.wallMilliseconds, destination: "backend",
                                consumptionInformation: nil)
        _ = try outbox.write(entry)
        let log = RecordingLogSink()
        func perform() -> AnswerReport {
            AnswerRun.perform(configurationPath: run.path, environment: [:], clock: clock, log: log)
        }
        func failingRun() -> AnswerReport {
            for _ in 0...RateLimiter.maximumBackoffs { api.inject(.serverError(500)) }
            return perform()
        }

        #expect(failingRun().exitStatus == 75)
        clock.advance(by: .seconds(30 * 86_400) - .seconds(3600))
        #expect(failingRun().exitStatus == 75)
        #expect(try outbox.entries(in: outbox.queue) == [entry.fileName], "29 days 23 hours: still tried")
        let asked = api.answers.count
        clock.advance(by: .seconds(2 * 3600))
        // Apple would fail it again; it is not asked.
        let report = perform()
        #expect(api.answers.count == asked, "not asked again")
        #expect(report.exitStatus == 0 && report.setAside == 1, "\(report.stops)")
        #expect(try outbox.entries(in: outbox.aside) == [entry.fileName] && outbox.counts().waiting == 0)
        let reason = try #require(outbox.reason(of: entry.fileName))
        #expect(reason.contains("without Apple taking it") && reason.contains("move it back into outbox/new/"),
                "\(reason)")
        let error = log.entries(withMessageID: MessageID.answerSetAside)
        #expect(error.count == 1 && error.first?.priority == .error)

        try outbox.move(entry.fileName, from: outbox.aside, to: outbox.new)
        try SystemCall.unlinkIfPresent(outbox.aside + "/" + entry.fileName + ".reason")
        let again = perform()
        #expect(again.sent == 1 && again.setAside == 0, "moved back, it has another 30 days")
    }

    /// sent/ keeps an entry 30 days from when Apple took it, so that a
    /// redelivered item is not answered twice, however long it waited in
    /// queue/ before.
    @Test func aSentEntryIsKept30DaysFromWhenItWasSentNotWritten() throws {
        let run = try OneApp("txrecon-answer-sent-retention")
        let (clock, outbox) = (run.clock, run.outbox)
        let entry = OutboxEntry(kind: .finish, transactionId: "6300", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: clock.wallMilliseconds, destination: "backend",
                                consumptionInformation: nil)
        _ = try outbox.write(entry)
        // Written 31 days ago; Apple or the key kept it waiting since.
        let written = clock.wallMilliseconds - 31 * 86_400_000
        var times = [timespec](repeating: timespec(tv_sec: Int(written / 1000), tv_nsec: 0), count: 2)
        #expect(utimensat(AT_FDCWD, outbox.new + "/" + entry.fileName, &times, 0) == 0)
        func perform() -> AnswerReport {
            AnswerRun.perform(configurationPath: run.path, environment: [:], clock: clock, log: RecordingLogSink())
        }

        #expect(perform().sent == 1 && run.api.answers.count == 1)
        #expect(try outbox.entries(in: outbox.sent) == [entry.fileName], "kept right after it was sent")
        clock.advance(by: .seconds(29 * 86_400))
        _ = perform()
        #expect(try outbox.entries(in: outbox.sent) == [entry.fileName], "sent 29 days ago")
        clock.advance(by: .seconds(2 * 86_400))
        _ = perform()
        #expect(try outbox.entries(in: outbox.sent).isEmpty, "sent 31 days ago")
        #expect(run.api.answers.count == 1)
    }

    /// txrecon-answer.service's TimeoutStartSec= kills a run that outlasts
    /// it, mid-request and without its report or metrics: a run Apple keeps
    /// asking to wait 10 minutes at a time ends itself before, with 75,
    /// leaving room for one request under way and the housekeeping.
    @Test func aRunEndsWithinItsUnitsTimeoutHoweverLongAppleAsksItToWait() throws {
        let run = try OneApp("txrecon-answer-timeout")
        let checkout = #filePath.split(separator: "/", omittingEmptySubsequences: false).dropLast(4)
            .joined(separator: "/")
        let unit = String(decoding: try SystemCall.readFile(checkout + "/systemd/txrecon-answer.service", limit: 1 << 16),
                          as: UTF8.self)
        let setting = unit.split(separator: "\n").filter { $0.hasPrefix("TimeoutStartSec=") }
        #expect(setting.count == 1, "\(setting)")
        let timeout = try #require(Self.timeSpan(setting.first?.dropFirst("TimeoutStartSec=".count) ?? ""))
        let entry = OutboxEntry(kind: .finish, transactionId: "6400", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: run.clock.wallMilliseconds, destination: "backend",
                                consumptionInformation: nil)
        _ = try run.outbox.write(entry)
        for _ in 0...RateLimiter.maximumRateLimitWaits { run.api.inject(.rateLimited(retryAfter: "600")) }

        let report = AnswerRun.perform(configurationPath: run.path, environment: [:], clock: run.clock,
                                       log: RecordingLogSink())
        #expect(report.exitStatus == 75, "\(report.stops)")
        #expect(try run.outbox.entries(in: run.outbox.queue) == [entry.fileName], "kept for the next run")
        let waited = run.clock.sleeps.reduce(Duration.zero, +)
        let requestUnderWay = Duration.milliseconds(AppStoreAPIClient.timeoutMilliseconds)
        #expect(waited + requestUnderWay + .seconds(60) <= timeout, "waited \(waited) of \(timeout)")
    }

    /// A systemd time span such as `30min`, `1h 30min` or `90`; nil for
    /// anything else.
    static func timeSpan(_ text: Substring) -> Duration? {
        let units: [String: Int64] = ["": 1, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600]
        var total = Duration.zero
        for part in text.split(separator: " ") {
            let digits = part.prefix { $0.isNumber }
            guard let value = Int64(digits), let unit = units[String(part.dropFirst(digits.count))] else { return nil }
            total += .seconds(value * unit)
        }
        return total == .zero ? nil : total
    }

    /// The daemon looked for the entry past new/ just before a run moved
    /// its twin out of new/, then renamed it in: sent already, it is not
    /// sent again.
    @Test func anEntrySentAlreadyIsNotSentAgainWhenItTurnsUpInNew() throws {
        let run = try OneApp("txrecon-answer-twice")
        let entry = OutboxEntry(kind: .finish, transactionId: "6200", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: run.clock.wallMilliseconds, destination: "backend",
                                consumptionInformation: nil)
        _ = try run.outbox.write(entry)
        let first = AnswerRun.perform(configurationPath: run.path, environment: [:], clock: run.clock,
                                      log: RecordingLogSink())
        #expect(first.sent == 1 && run.api.answers.count == 1)
        _ = run.directory.write(String(decoding: entry.json, as: UTF8.self), to: "spool/outbox/new/" + entry.fileName)
        let second = AnswerRun.perform(configurationPath: run.path, environment: [:], clock: run.clock,
                                       log: RecordingLogSink())
        #expect(second.sent == 0 && run.api.answers.count == 1, "Apple is not asked twice")
        #expect(try run.outbox.entries(in: run.outbox.new).isEmpty && run.outbox.pastNew(entry.fileName) == "sent")
    }

    /// txrecon-answer.path starts a run while new/ holds anything: one
    /// that found another run holding the lock (an operator's, waiting out
    /// a 429) and left new/ as it was would be started again and again
    /// until systemd's start limit failed the path unit for good.
    @Test func aRunFindingTheLockHeldStillTakesNewIntoQueue() throws {
        let run = try OneApp("txrecon-answer-locked")
        let entry = OutboxEntry(kind: .finish, transactionId: "6500", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: run.clock.wallMilliseconds, destination: "backend",
                                consumptionInformation: nil)
        // Queued already, being sent by the holder: left as it is.
        let queued = OutboxEntry(kind: .finish, transactionId: "6501", environment: .sandbox, bundleId: nil,
                                 requestedAt: nil, confirmedAt: run.clock.wallMilliseconds, destination: "backend",
                                 consumptionInformation: nil)
        _ = try run.outbox.write(queued)
        try run.outbox.move(queued.fileName, from: run.outbox.new, to: run.outbox.queue)
        _ = try run.outbox.write(entry)
        run.directory.write("a twin the daemon renamed in late", to: "spool/outbox/new/" + queued.fileName)
        // The other run's lock, as AnswerRun takes it: flock(2) excludes
        // another descriptor even in this process.
        let lock = try LockFile.acquire(run.outbox.root + "/lock")
        defer { close(lock) }

        let report = AnswerRun.perform(configurationPath: run.path, environment: [:], clock: run.clock,
                                       log: RecordingLogSink())
        #expect(report.exitStatus == 75 && report.stop?.kind == .temporary, "\(report.stops)")
        #expect(try run.outbox.entries(in: run.outbox.new).isEmpty, "the path unit does not start it again")
        #expect(try run.outbox.entries(in: run.outbox.queue) == [entry.fileName, queued.fileName].sorted())
        #expect(try run.outbox.read(queued.fileName, in: run.outbox.queue) == queued.json, "the holder's is kept")
        #expect(run.api.answers.isEmpty, "only the holder sends")
    }

    @Test func eachEntryGoesWithItsAppsTokenAndAnAppWhoseKeyFailsWaitsAlone() throws {
        let team = try TwoApps()
        let (main, two, outbox) = (team.main, team.two, team.outbox)
        team.directory.write("[Verification]\nBundleID=com.example.three\n[Sweep]\nPrivateKeyFile=/nonexistent/key.p8\n",
                             to: "apps/three.conf")
        try team.finish("7001", "com.example.app")
        try team.finish("7002", "com.example.two")
        let three = try team.finish("7003", "com.example.three")
        let nobody = try team.finish("7004", "com.example.nobody")

        let log = RecordingLogSink()
        let report = team.run(log: log)
        #expect(main.answers.map(\.transactionId) == ["7001"] && two.answers.map(\.transactionId) == ["7002"])
        /// The TXRECON_APP of the entries naming `entry`.
        func apps(of entry: String) -> [String?] {
            log.entries.filter { $0.fields.contains { $0 == ("TXRECON_OUTBOX_ENTRY", entry) } }
                .map { entry in entry.fields.first { $0.0 == "TXRECON_APP" }?.1 }
        }
        #expect(apps(of: "finish.Sandbox.7001.json") == ["main"] && apps(of: "finish.Sandbox.7002.json") == ["two"],
                "the journal tells the apps' answers apart")
        #expect(apps(of: three) == ["three"] && apps(of: nobody) == [nil])
        #expect(main.problems == [] && two.problems == [], "each with its own app's token")
        #expect(report.sent == 2 && report.waitingForApp == 2)
        #expect(try outbox.entries(in: outbox.queue).sorted() == [three, nobody].sorted())
        #expect(report.exitStatus == 78 && report.stops.map(\.reason).joined().contains("/nonexistent/key.p8"),
                "\(report.stops)")
    }

    /// What Apple may answer about one app's key or identity, or its rate
    /// limit, and the exit status a run ends with after it.
    enum AppStop: CaseIterable {
        case credentialsRefused, appUnknownToApple, rateLimitedForAnHour

        func play(on api: MockAppStoreServerAPI) {
            switch self {
            case .credentialsRefused: api.refuseCredentials()
            case .appUnknownToApple: api.inject(.refused(404, errorCode: 4_040_003))
            case .rateLimitedForAnHour: api.inject(.rateLimited(retryAfter: "3600"))
            }
        }

        var exitStatus: Int32 { self == .rateLimitedForAnHour ? 75 : 78 }
    }

    /// Consumption answers have a 12-hour deadline: one app's refused key
    /// must not keep the other apps' entries waiting for the next run.
    @Test(arguments: AppStop.allCases)
    func anAppAppleStopsKeepsOnlyItsOwnEntriesWaiting(_ stop: AppStop) throws {
        let apps = try TwoApps()
        // Two's entries sort first and last: Apple stops it before main's.
        let twoFirst = try apps.finish("7000", "com.example.two")
        try apps.finish("7001", "com.example.app")
        let twoLast = try apps.finish("7002", "com.example.two")
        stop.play(on: apps.two)

        let report = apps.run()
        #expect(apps.main.answers.map(\.transactionId) == ["7001"], "main's entry goes")
        #expect(apps.two.answers.map(\.transactionId) == ["7000"], "two is not asked again in this run")
        #expect(try apps.outbox.entries(in: apps.outbox.queue) == [twoFirst, twoLast])
        #expect(report.sent == 1 && report.waitingForApp == 2)
        #expect(report.exitStatus == stop.exitStatus, "\(report.stops)")
        #expect(report.stop == nil && report.appStops.count == 1 && report.appStops[0].reason.hasPrefix("app two's"),
                "\(report.stops)")
    }

    /// An entry no app of the configuration is for waits, and the run says
    /// so in its exit status and metrics: otherwise nobody is told to add
    /// the app's file before a consumption answer's 12 hours pass.
    @Test func anEntryForNoConfiguredAppMakesTheRunAConfigurationProblem() throws {
        let apps = try TwoApps()
        try apps.finish("7001", "com.example.app")
        let nobody = try apps.finish("7002", "com.example.nobody")

        let report = apps.run()
        #expect(apps.main.answers.map(\.transactionId) == ["7001"], "the others go")
        #expect(try apps.outbox.entries(in: apps.outbox.queue) == [nobody], "never set aside")
        #expect(report.exitStatus == 78)
        #expect(report.metrics.contains("txrecon_answer_last_run_success 0\n"), "\(report.metrics)")
        #expect(report.logEntry.priority == .error)
        #expect(report.logEntry.message.contains("no app of \(apps.path) has BundleID=com.example.nobody; add its "
                                                 + "app file"), "\(report.logEntry.message)")
    }

    @Test func markersWaitingLongerThan30DaysAreGivenUpAndThoseOfAWrittenEntryCleared() throws {
        let run = try OneApp("txrecon-answer-markers")
        let (clock, api, path, outbox) = (run.clock, run.api, run.path, run.outbox)
        // Each marker written when the run's clock says, less its age.
        func mark(_ name: String, by destination: String, daysAgo: Int64) throws {
            try outbox.markConfirmed(name, by: destination)
            let written = clock.wallMilliseconds - daysAgo * 86_400_000
            var times = [timespec](repeating: timespec(tv_sec: Int(written / 1000), tv_nsec: 0), count: 2)
            #expect(utimensat(AT_FDCWD, outbox.confirmed + "/" + name + "." + destination, &times, 0) == 0)
        }
        let abandoned = "finish.Sandbox.6201.json", waiting = "finish.Sandbox.6202.json"
        let answered = "finish.Sandbox.6203.json"
        try mark(abandoned, by: "backend", daysAgo: 31)
        try mark(abandoned, by: "analytics", daysAgo: 29)
        try mark(waiting, by: "backend", daysAgo: 29)
        try mark(answered, by: "backend", daysAgo: 1)
        // Its last destination wrote the entry, and a crash cut the
        // clearing of the markers short; Apple took it already.
        let entry = OutboxEntry(kind: .finish, transactionId: "6203", environment: .sandbox, bundleId: nil,
                                requestedAt: nil, confirmedAt: clock.wallMilliseconds, destination: "analytics",
                                consumptionInformation: nil)
        #expect(entry.fileName == answered)
        _ = try outbox.write(entry)
        run.directory.write("not a marker", to: "spool/outbox/confirmed/notes.txt")
        let log = RecordingLogSink()

        let report = AnswerRun.perform(configurationPath: path, environment: [:], clock: clock, log: log)
        #expect(report.exitStatus == 0 && report.sent == 1, "\(String(describing: report.stop))")
        #expect(report.givenUp == 1)
        #expect(try outbox.confirmedPurchases().map(\.name) == [waiting], "29 days still wait; the others are gone")
        #expect(try SystemCall.listDirectory(outbox.confirmed).sorted() == ["\(waiting).backend", "notes.txt"])
        let warnings = log.entries.filter { $0.fields.contains { $0 == ("TXRECON_OUTBOX_ENTRY", abandoned) } }
        #expect(warnings.count == 1 && warnings.first?.priority == .warning)
        #expect(warnings.first?.fields.contains { $0 == ("TXRECON_CONFIRMED_BY", "analytics, backend") } == true)
        #expect(warnings.first?.message.contains("not finished at Apple") == true)
        #expect(outbox.reason(of: abandoned)?.contains("not finished at Apple") == true, "set aside with the reason")
        #expect(try OutboxEntry(json: outbox.read(abandoned, in: outbox.aside)).transactionId == "6201")
        #expect(report.logEntry.priority == .warning && report.logEntry.message.contains("1 given up"))
        #expect(api.answers.map(\.transactionId) == ["6203"], "a purchase given up is never sent")
    }

    @Test func markersAreReadByPurchaseWithTheirFirstConfirmation() throws {
        let directory = TemporaryDirectory("txrecon-outbox-markers")
        directory.makeDirectory("spool", mode: 0o750)
        let outbox = Outbox(spool: directory.path + "/spool")
        try outbox.prepare()
        func mark(_ name: String, by destination: String, atSecond second: Int) throws {
            try outbox.markConfirmed(name, by: destination)
            var times = [timespec](repeating: timespec(tv_sec: second, tv_nsec: 0), count: 2)
            #expect(utimensat(AT_FDCWD, outbox.confirmed + "/" + name + "." + destination, &times, 0) == 0)
        }
        try mark("finish.Production.7.json", by: "b", atSecond: 1_800_000_300)
        try mark("finish.Production.7.json", by: "a", atSecond: 1_800_000_100)
        try mark("finish.Production.7.json", by: "c", atSecond: 1_800_000_200)
        try mark("finish.Sandbox.1.2.json", by: "backend-2", atSecond: 1_800_000_400)
        directory.write("", to: "spool/outbox/confirmed/finish.Sandbox.9.json")
        directory.write("", to: "spool/outbox/confirmed/finish.Sandbox.9.json.")
        let purchases = try outbox.confirmedPurchases()
        #expect(purchases.map(\.name) == ["finish.Production.7.json", "finish.Sandbox.1.2.json"])
        #expect(purchases.map(\.destinations) == [["a", "b", "c"], ["backend-2"]])
        #expect(purchases.map(\.since) == [1_800_000_100_000, 1_800_000_400_000], "the first confirmation's time")
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
