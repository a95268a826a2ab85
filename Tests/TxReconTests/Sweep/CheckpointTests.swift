import Testing
import TxReconTestSupport
@testable import TxRecon

@Suite struct CheckpointTests {
    @Test func aCheckpointReadsBackAsWritten() throws {
        let checkpoint = SweepCheckpoint(
            completedThrough: 1_767_225_600_000,
            pending: .init(start: 1_767_100_000_000, end: 1_767_186_400_000, paginationToken: "abc"),
            spooled: ["b-uuid": 2, "a-uuid": 1])
        #expect(try SweepCheckpoint(json: checkpoint.serialized) == checkpoint)
    }

    @Test func aCheckpointNamesTheEnvironmentAndBundleItIsFor() throws {
        var settings = SweepSettings()
        settings.environment = .sandbox
        settings.bundleID = "com.example.app"
        let checkpoint = SweepCheckpoint(completedThrough: 1, environment: "Sandbox", bundleID: "com.example.app")
        #expect(try SweepCheckpoint(json: checkpoint.serialized) == checkpoint)
        #expect(checkpoint.match(settings) == .same)
        settings.environment = .production
        #expect(checkpoint.match(settings) == .other(environment: "Sandbox", bundleID: "com.example.app"))
        settings.environment = .sandbox
        settings.bundleID = "com.example.other"
        #expect(checkpoint.match(settings) == .other(environment: "Sandbox", bundleID: "com.example.app"))
        #expect(SweepCheckpoint(completedThrough: 1).match(settings) == .unmarked)
        #expect(SweepCheckpoint().match(settings) == .same, "no checkpoint yet is nobody's")
    }

    @Test func anEmptyCheckpointReadsBackAsWritten() throws {
        #expect(try SweepCheckpoint(json: SweepCheckpoint().serialized) == SweepCheckpoint())
    }

    @Test func aFileOfAnotherFormatIsDamaged() {
        #expect(throws: SweepCheckpoint.Damaged.self) { try SweepCheckpoint(json: Array(#"{"format":2}"#.utf8)) }
        #expect(throws: SweepCheckpoint.Damaged.self) { try SweepCheckpoint(json: Array("not json".utf8)) }
    }

    @Test func forgettingKeepsOnlyNotificationsAtOrAfterTheCutoff() {
        var checkpoint = SweepCheckpoint(spooled: ["old": 99, "edge": 100, "new": 200])
        checkpoint.forgetSpooled(before: 100)
        #expect(checkpoint.spooled == ["edge": 100, "new": 200])
    }

    @Test func aSavedCheckpointSurvivesInTheStateDirectoryWithGroupReadableModes() throws {
        let directory = TemporaryDirectory()
        let layout = SpoolLayout(root: directory.path)
        let checkpoint = SweepCheckpoint(completedThrough: 42)
        // One instance, one lock: taken again at once, the lock can still be
        // held by a child that another test is spawning (its copy of our
        // descriptor lives until its exec closes it).
        let state = try SweepStateDirectory(layout: layout)
        try state.saveCheckpoint(checkpoint)
        #expect(try state.loadCheckpoint() == checkpoint)
        let info = try #require(try SystemCall.linkStatus(directory.path + "/sweep/checkpoint"))
        #expect(info.st_mode & 0o777 == 0o640)
        #expect(try SystemCall.listDirectory(directory.path + "/sweep").sorted() == ["checkpoint", "lock"])
    }

    @Test func aSecondSweepOnTheSameSpoolIsRefusedAsTemporary() throws {
        let directory = TemporaryDirectory()
        let layout = SpoolLayout(root: directory.path)
        let first = try SweepStateDirectory(layout: layout)
        #expect(throws: SweepStop.self) { _ = try SweepStateDirectory(layout: layout) }
        do {
            _ = try SweepStateDirectory(layout: layout)
        } catch {
            #expect(error.kind == .temporary && error.reason.contains("another txrecon sweep"))
        }
        withExtendedLifetime(first) {}
    }
}

@Suite struct NotificationHistoryTests {
    @Test func theRequestBodyCarriesTheDatesAndOnlyFailuresOnlyWhenTrue() {
        let all = NotificationHistoryRequest(startDate: 1, endDate: 2, onlyFailures: false)
        let failures = NotificationHistoryRequest(startDate: 1, endDate: 2, onlyFailures: true)
        #expect(String(decoding: all.body, as: UTF8.self) == #"{"startDate":1,"endDate":2}"#)
        #expect(String(decoding: failures.body, as: UTF8.self) == #"{"startDate":1,"endDate":2,"onlyFailures":true}"#)
    }

    @Test func aPageIsReadWithEachNotificationsIdentityAndLastAttempt() throws {
        let payload = SweepHarness.notification(7, signedDate: 1_767_000_000_000, type: "REFUND")
        let json = #"{"notificationHistory":[{"sendAttempts":[{"attemptDate":1,"sendAttemptResult":"SUCCESS"},"#
            + #"{"attemptDate":2,"sendAttemptResult":"TIMED_OUT"}],"signedPayload":"\#(payload)"}],"#
            + #""hasMore":true,"paginationToken":"next"}"#
        let page = try NotificationHistoryPage(json: Array(json.utf8))
        #expect(page.hasMore && page.paginationToken == "next")
        let notification = try #require(page.notifications.first)
        #expect(notification.signedPayload == payload)
        #expect(notification.notificationType == "REFUND")
        #expect(notification.notificationUUID == "00000000-0000-4000-8000-000000000007")
        #expect(notification.signedDate == 1_767_000_000_000)
        #expect(notification.lastSendAttemptResult == "TIMED_OUT")
    }

    @Test func anEmptyLastPageHasNoMore() throws {
        let page = try NotificationHistoryPage(json: Array(#"{"notificationHistory":[],"hasMore":false,"paginationToken":"x"}"#.utf8))
        #expect(page.notifications.isEmpty && !page.hasMore)
    }

    @Test func anEntryWithoutSignedPayloadMakesThePageMalformed() {
        #expect(throws: NotificationHistoryPage.Malformed.self) {
            try NotificationHistoryPage(json: Array(#"{"notificationHistory":[{"sendAttempts":[]}],"hasMore":false}"#.utf8))
        }
    }

    @Test func hasMoreWithoutATokenMakesThePageMalformed() {
        #expect(throws: NotificationHistoryPage.Malformed.self) {
            try NotificationHistoryPage(json: Array(#"{"notificationHistory":[],"hasMore":true}"#.utf8))
        }
    }

    @Test func theSpoolBodyIsANotificationsV2Body() throws {
        let notification = HistoryNotification(signedPayload: "a.b.c")
        #expect(String(decoding: notification.spoolBody, as: UTF8.self) == #"{"signedPayload":"a.b.c"}"#)
    }

    @Test func anErrorAnswerKeepsApplesCodeAndMessage() {
        let error = AppStoreAPIError(status: 400, body: Array(#"{"errorCode":4000017,"errorMessage":"expired"}"#.utf8),
                                     retryAfter: nil)
        #expect(error.errorCode == 4_000_017 && error.summary == "HTTP 400, errorCode 4000017 (expired)")
    }
}
