// Several destinations end to end: the built daemon, `[Backend]` and a
// destination file for a second loopback backend. One destination down does
// not hold up the other; a restart sends only to the destination that has
// not confirmed; [Match] routes; a fan-out a crash interrupted completes.
import Glibc
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct DestinationsIntegrationTests {
    /// A fixture whose `[Backend]` answers 200, with `analytics` beside it.
    final class TwoDestinations {
        let fixture: DaemonFixture
        let analytics: LoopbackHTTPServer

        init(main: String = "", analyticsMatch: String = "", analyticsDelays: String = "200ms",
             analyticsHandler: @escaping LoopbackHTTPServer.Handler = { _ in .status(503) }) throws {
            fixture = try DaemonFixture(extraConfig: main)
            analytics = try LoopbackHTTPServer(handler: analyticsHandler)
            _ = fixture.directory.write("""
                [Backend]
                URL=\(analytics.url)analytics
                Timeout=2s
                ProbeDelays=200ms

                [Delivery]
                RetryDelays=\(analyticsDelays)

                \(analyticsMatch)
                """, to: "destinations/analytics.conf")
        }

        var analyticsLayout: SpoolLayout { fixture.layout.destination("analytics") }

        func names(_ directory: String) -> [String] {
            ((try? SystemCall.listDirectory(directory)) ?? []).filter { !$0.hasSuffix(".state") }.sorted()
        }

        func keys(_ server: LoopbackHTTPServer) -> [String] {
            server.requests.compactMap { $0.header("Idempotency-Key") }
        }

        deinit { analytics.stop() }
    }

    @Test func oneDestinationDownTheOtherDrainsAndTheFirstCatchesUpWhenItReturns() async throws {
        let both = try TwoDestinations()
        let fixture = both.fixture
        try await fixture.start()
        let ids = (1...20).map { "order-\($0)" }
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }

        // [Backend] gets all twenty while analytics answers 503.
        #expect(await fixture.eventually { fixture.doneItems() == ids.sorted() })
        #expect(await fixture.eventually { both.names(both.analyticsLayout.queue) == ids.sorted() })
        #expect(fixture.names("new").isEmpty && fixture.names("queue").isEmpty)
        // Once settled (earlier lines may show attempts still in flight):
        // the counts added up, [Backend] ok, analytics failing.
        let line = await fixture.notify.waitFor({
            let status = $0.value(of: "STATUS") ?? ""
            return status.contains("analytics failing since")
                && status.hasPrefix("20 queued, 0 delivering, 0 held, 0 rejected; backend ok; ")
        }, timeout: .seconds(20))
        #expect(line != nil, "\(fixture.notify.messages.suffix(3))")
        // The status file is written just after STATUS=.
        func destinations() -> [JSONValue] {
            let bytes = (try? SystemCall.readFile(fixture.layout.statusFile, limit: 1 << 20)) ?? []
            return (try? JSONValue.parse(bytes))?["destinations"]?.arrayValue ?? []
        }
        #expect(await fixture.eventually {
            destinations().last?["backend"]?.stringValue == "failing"
                && destinations().first?["queued"]?.int64Value == 0 && destinations().last?["queued"]?.int64Value == 20
        })
        #expect(destinations().compactMap { $0["name"]?.stringValue } == ["backend", "analytics"])

        both.analytics.setHandler { _ in .status(200) }
        #expect(await fixture.eventually { both.names(both.analyticsLayout.done) == ids.sorted() })
        // Awaited too: a finish links into done/ before it unlinks (Spool.finish).
        #expect(await fixture.eventually {
            both.names(both.analyticsLayout.queue).isEmpty && both.names(both.analyticsLayout.new).isEmpty
        })
        #expect(Set(both.keys(both.analytics)) == Set(ids.map { $0 + ":1" }))
        #expect(fixture.server.requests.count == 20, "[Backend] got each item once")
        // The file is in done/ just before the engine logs its delivery.
        #expect(await fixture.eventually {
            let log = fixture.daemon?.stderr ?? ""
            return log.contains("analytics: order-1: delivered on attempt") && log.contains("TXRECON_DESTINATION=analytics")
        })
    }

    @Test func aRestartSendsOnlyToTheDestinationThatHasNotConfirmed() async throws {
        let both = try TwoDestinations()
        let fixture = both.fixture
        let daemon = try await fixture.start()
        for id in ["a", "b", "c"] { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually { fixture.doneItems() == ["a", "b", "c"] })
        #expect(await fixture.eventually { both.names(both.analyticsLayout.queue) == ["a", "b", "c"] })
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(20)) == 0)

        both.analytics.setHandler { _ in .status(200) }
        try await fixture.start()
        #expect(await fixture.eventually { both.names(both.analyticsLayout.done) == ["a", "b", "c"] })
        #expect(fixture.server.requests.count == 3, "[Backend] had confirmed all three: nothing sent to it again")
    }

    @Test func matchesRouteEachItemAndOneNoDestinationTakesIsRejected() async throws {
        let both = try TwoDestinations(main: "[Match]\nKind=envelope",
                                       analyticsMatch: "[Match]\nKind=appstore.transaction",
                                       analyticsHandler: { _ in .status(200) })
        let fixture = both.fixture
        try await fixture.start()
        try fixture.drop(fixture.envelope("env-1", version: 1))
        let samples = DaemonIntegrationTests.samples
        try fixture.drop(String(decoding: try SystemCall.readFile(samples + "/01-transaction.jws", limit: 1 << 20),
                                as: UTF8.self))
        try fixture.drop(String(decoding: try SystemCall.readFile(samples + "/04-notification-refund.json",
                                                                  limit: 1 << 20), as: UTF8.self), name: "refund.json")

        #expect(await fixture.eventually { fixture.doneItems() == ["env-1"] })
        #expect(await fixture.eventually { both.names(both.analyticsLayout.done).count == 1 })
        #expect(await fixture.eventually { fixture.names("rejected").contains("refund.json.reason") })
        let reason = String(decoding: try SystemCall.readFile(fixture.layout.rejected + "/refund.json.reason",
                                                              limit: 1 << 16), as: UTF8.self)
        #expect(reason.contains("no-destination"), "\(reason)")
        #expect(fixture.server.requests.count == 1 && both.analytics.requests.count == 1)
        #expect(both.analytics.requests.first?.body.contains(UInt8(ascii: "{")) == true)
        #expect(try JSONValue.parse(both.analytics.requests[0].body)["kind"]?.stringValue == "appstore.transaction")
    }

    @Test func aFanOutACrashInterruptedIsCompletedNotRejectedAsAHardLink() async throws {
        let both = try TwoDestinations(analyticsHandler: { _ in .status(200) })
        let fixture = both.fixture
        // As a crash between the link into analytics' inbox and the unlink
        // of new/NAME leaves it: one file, two names.
        try fixture.layout.createMissingDirectories()
        try both.analyticsLayout.createMissingDestinationDirectories()
        try fixture.drop(fixture.envelope("crashed", version: 1), name: "crashed.json")
        #expect(link(fixture.layout.new + "/crashed.json", both.analyticsLayout.new + "/crashed.json") == 0)

        try await fixture.start()
        #expect(await fixture.eventually { fixture.doneItems() == ["crashed"] })
        #expect(await fixture.eventually { both.names(both.analyticsLayout.done) == ["crashed"] })
        #expect(fixture.names("rejected").isEmpty)
        #expect(fixture.server.requests.count == 1 && both.analytics.requests.count == 1)
    }

    @Test func listShowAndStatusNameTheDestinations() async throws {
        let both = try TwoDestinations()
        let fixture = both.fixture
        try await fixture.start()
        try fixture.drop(fixture.envelope("seen", version: 1))
        #expect(await fixture.eventually { both.names(both.analyticsLayout.queue) == ["seen"] })
        #expect(await fixture.eventually { fixture.doneItems() == ["seen"] })

        let queue = try await fixture.cli(["list", "queue"])
        #expect(queue.status == 0 && queue.stdout.hasPrefix("analytics: seen  "), "\(queue)")
        let done = try await fixture.cli(["list", "--destination", "backend", "done", "--json"])
        let rows = try JSONValue.parse(Array(done.stdout.utf8)).arrayValue ?? []
        #expect(rows.map { $0["destination"]?.stringValue } == ["backend"] && rows.first?["name"]?.stringValue == "seen")
        let unknown = try await fixture.cli(["list", "--destination", "nowhere"])
        #expect(unknown.status == 2 && unknown.stderr.contains("the destinations are backend, analytics"))

        let show = try await fixture.cli(["show", "seen"])
        #expect(show.status == 0)
        #expect(show.stdout.contains("destination: backend\nkey:        seen\nlocation:   done/"), "\(show.stdout)")
        #expect(show.stdout.contains("\n\ndestination: analytics\nkey:        seen\nlocation:   queue/"),
                "a blank line before the second destination, not an escaped one: \(show.stdout)")
        #expect(!show.stdout.contains("\\n"), "\(show.stdout)")

        let status = try await fixture.cli(["status"])
        #expect(status.stdout.contains("\nnew 0, queue 1, hold 0, rejected 0, done 1\n"
                                       + "  backend: inbox 0, queue 0, hold 0, done 1\n  analytics: inbox 0, queue 1, hold 0, done 0\n"),
                "the first line adds every destination's items up: \(status.stdout)")
    }

    @Test func aRemovedDestinationsItemsAreCountedListedAndShownAsNotConfigured() async throws {
        let both = try TwoDestinations(main: "[Delivery]\nRetryDelays=1h", analyticsDelays: "1h")
        let fixture = both.fixture
        let daemon = try await fixture.start()
        try fixture.drop(fixture.envelope("left", version: 1))
        #expect(await fixture.eventually { both.names(both.analyticsLayout.queue) == ["left"] })
        #expect(await fixture.eventually { fixture.doneItems() == ["left"] })
        daemon.signal(SIGTERM)
        #expect(await daemon.wait(timeout: .seconds(20)) == 0)
        #expect(unlink(fixture.directory.path + "/destinations/analytics.conf") == 0)

        let status = try await fixture.cli(["status"])
        #expect(status.stdout.contains("\nnew 0, queue 1, hold 0, rejected 0, done 1\n  backend: inbox 0, queue 0, hold 0, done 1\n"
                                       + "  analytics: inbox 0, queue 1, hold 0, done 0 (not configured: its items wait until "
                                       + "destinations/analytics.conf is back)\n"), "\(status.stdout)")
        let json = try JSONValue.parse(try await fixture.cli(["status", "--json"]).stdout)
        #expect(json["queue"]?.int64Value == 1)
        #expect(json["destinations"]?.arrayValue?.last?["configured"] == .bool(false))
        let queue = try await fixture.cli(["list", "queue"])
        #expect(queue.status == 0 && queue.stdout.hasPrefix("analytics (not configured): left  "), "\(queue)")
        let only = try await fixture.cli(["list", "--destination", "analytics", "queue", "--json"])
        #expect(try JSONValue.parse(only.stdout).arrayValue?.first?["configured"] == .bool(false), "\(only)")
        let show = try await fixture.cli(["show", "left"])
        #expect(show.status == 0)
        #expect(show.stdout.contains("\n\ndestination: analytics (not configured: its items wait until "
                                     + "destinations/analytics.conf is back)\nkey:        left\nlocation:   queue/"),
                "\(show.stdout)")

        // The daemon, with [Backend] alone now, says so at start, pointing
        // to a docs/ section that exists (DocumentationSectionTests).
        try await fixture.start()
        #expect(await fixture.eventually {
            fixture.daemon?.stderr.contains("destinations/analytics/ holds 1 items not delivered yet, but no destination "
                                            + "analytics is configured") == true
        })
        #expect(fixture.daemon?.stderr.contains("(docs/remove-destination.md: \"How do I remove a destination?\")") == true)
        #expect(both.names(both.analyticsLayout.queue) == ["left"], "untouched")
    }

    @Test func configurationMistakesAreSaidAtCheckConfigStartAndReloadNamingTheFile() async throws {
        let both = try TwoDestinations()
        let fixture = both.fixture
        let destinations = fixture.directory.path + "/destinations"
        _ = fixture.directory.write("[Backend]\nURL=http://127.0.0.1:9/old\n", to: "destinations/analytics.conf~")
        let check = try await fixture.cli(["check-config"])
        #expect(check.status == 0, "\(check.stderr)")
        #expect(check.stderr.contains("txrecon: warning: \(destinations)/analytics.conf~ is not read: only destination "
                                      + "files named NAME.conf, not hidden, are"), "\(check.stderr)")
        let daemon = try await fixture.start()
        #expect(daemon.stderr.contains("\(destinations)/analytics.conf~ is not read"), "\(daemon.stderr)")

        // A reload that brings a new one in says it.
        _ = fixture.directory.write("[Backend]\nURL=http://127.0.0.1:9/off\n", to: "destinations/.analytics.conf")
        let before = fixture.notify.messages.count
        daemon.signal(SIGHUP)
        #expect(await fixture.notify.waitFor({ $0.contains("READY=1") }, from: before, timeout: .seconds(10)) != nil)
        #expect(await fixture.eventually { daemon.stderr.contains("\(destinations)/.analytics.conf is not read") })

        // A destination file anyone may write is refused, by check-config and by a reload.
        #expect(chmod(destinations + "/analytics.conf", 0o666) == 0)
        let refused = try await fixture.cli(["check-config"])
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("\(destinations)/analytics.conf: is writable by every user (mode 0666)"),
                "\(refused.stderr)")
        daemon.signal(SIGHUP)
        #expect(await fixture.eventually {
            daemon.stderr.contains("reload refused, the running configuration stays: \(destinations)/analytics.conf: "
                                   + "is writable by every user")
        })
    }

    @Test(.enabled(if: getuid() == 0, "a replay is root's to ask for"))
    func aReplayToOneDestinationSendsToItAlone() async throws {
        let both = try TwoDestinations(analyticsHandler: { _ in .status(200) })
        let fixture = both.fixture
        try await fixture.start()
        try fixture.drop(fixture.envelope("again", version: 1))
        #expect(await fixture.eventually { both.names(both.analyticsLayout.done) == ["again"] })
        #expect(await fixture.eventually { fixture.doneItems() == ["again"] })

        let replayed = try await fixture.cli(["replay", "--destination", "analytics", "again"])
        #expect(replayed.status == 0 && replayed.stdout == "again: replayed, due now\n", "\(replayed)")
        #expect(await fixture.eventually { both.analytics.requests.count == 2 })
        #expect(await fixture.eventually { both.names(both.analyticsLayout.queue).isEmpty })
        #expect(fixture.server.requests.count == 1, "[Backend] was not asked")
        let everywhere = try await fixture.cli(["replay", "again"])
        #expect(everywhere.status == 0, "\(everywhere)")
        #expect(await fixture.eventually { both.analytics.requests.count == 3 && fixture.server.requests.count == 2 })
    }

    @Test func aRetryAtOneDestinationMakesTheItemDueThereAlone() async throws {
        // Both refuse, and neither would try again within the test.
        let both = try TwoDestinations(main: "[Delivery]\nRetryDelays=1h", analyticsDelays: "1h")
        let fixture = both.fixture
        fixture.server.setHandler { _ in .status(503) }
        try await fixture.start()
        try fixture.drop(fixture.envelope("later", version: 1))
        #expect(await fixture.eventually { both.names(fixture.layout.queue) == ["later"] })
        #expect(await fixture.eventually { both.names(both.analyticsLayout.queue) == ["later"] })

        let retried = try await fixture.cli(["retry", "--destination", "analytics", "later"])
        #expect(retried.status == 0 && retried.stdout == "later: due now\n", "\(retried)")
        #expect(await fixture.eventually { both.analytics.requests.count == 2 })
        // Each engine logs its part before the answer, backend's first.
        #expect(await fixture.eventually {
            fixture.daemon?.stderr.contains("analytics: later: retry requested by the operator") == true
        })
        #expect(fixture.daemon?.stderr.contains("backend: later: retry requested") == false)
        #expect(fixture.server.requests.count == 1)

        // Queued at one destination alone and retried everywhere: the
        // other had nothing to do, which is no refusal (exit 0).
        fixture.server.setHandler { $0.header("Idempotency-Key")?.hasPrefix("solo:") == true ? .status(200) : .status(503) }
        try fixture.drop(fixture.envelope("solo", version: 1))
        #expect(await fixture.eventually {
            both.names(both.analyticsLayout.queue).contains("solo") && fixture.doneItems().contains("solo")
        })
        let solo = try await fixture.cli(["retry", "solo"])
        #expect(solo.status == 0 && solo.stdout == "solo: due now\n", "\(solo)")

        let unknown = try await fixture.cli(["release", "--destination", "nowhere", "--all"])
        #expect(unknown.status == 2 && unknown.stderr.contains("the destinations are backend, analytics"), "\(unknown)")
    }

    @Test func withOneDestinationItsMatchStillNarrowsWhatItGets() async throws {
        let fixture = try DaemonFixture(extraConfig: "[Match]\nKind=appstore.transaction")
        try await fixture.start()
        try fixture.drop(fixture.envelope("not-a-transaction", version: 1), name: "envelope.json")
        #expect(await fixture.eventually { fixture.names("rejected").contains("envelope.json.reason") })
        let reason = String(decoding: try SystemCall.readFile(fixture.layout.rejected + "/envelope.json.reason",
                                                              limit: 1 << 16), as: UTF8.self)
        #expect(reason.contains("no-destination") && fixture.server.requests.isEmpty)
    }

    /// A destination down long enough to fill its engine (here a high-water
    /// mark of 20, TXRECON_TEST_HIGH_WATER) must not stop the others: its
    /// copies wait in its own inbox on disk, and go once it has room.
    @Test func aFullDestinationsCopiesWaitInItsInboxWhileTheOthersGoOn() async throws {
        let both = try TwoDestinations()
        let fixture = both.fixture
        try await fixture.start(environment: ["TXRECON_TEST_HIGH_WATER": "20"])
        let ids = (1...400).map { "many-\($0)" }
        for id in ids { try fixture.drop(fixture.envelope(id, version: 1)) }
        #expect(await fixture.eventually { fixture.doneItems() == ids.sorted() }, "[Backend] got all 400")
        #expect(fixture.names("new").isEmpty)
        let line = await fixture.notify.waitFor({ $0.value(of: "STATUS")?.contains("takes more once fewer than 18") == true },
                                                timeout: .seconds(20))
        #expect(line != nil, "\(fixture.notify.messages.suffix(2))")
        // Awaited, not sampled: new/ and queue/ are listed one after the
        // other, and a copy renamed from one into the other in between (the
        // batch the engine takes past its mark) is counted in both.
        var waiting = 0, queued = 0
        let settled = await fixture.eventually {
            waiting = both.names(both.analyticsLayout.new).count
            queued = both.names(both.analyticsLayout.queue).count
            return waiting + queued == 400 && waiting > 0
        }
        #expect(settled, "\(waiting) waiting, \(queued) queued")
        #expect(queued <= 20 + Intake.batchSize, "the full engine took no more than a batch past its mark")

        both.analytics.setHandler { _ in .status(200) }
        #expect(await fixture.eventually(timeout: .seconds(60)) { both.names(both.analyticsLayout.done) == ids.sorted() })
        // Awaited too: a first attempt from the inbox links its copy into
        // done/ before it unlinks it from new/ (Spool.finish).
        #expect(await fixture.eventually {
            both.names(both.analyticsLayout.new).isEmpty && both.names(both.analyticsLayout.queue).isEmpty
        }, "\(both.names(both.analyticsLayout.new)) \(both.names(both.analyticsLayout.queue))")
    }
}
