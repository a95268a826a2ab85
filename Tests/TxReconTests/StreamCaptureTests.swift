// Whether Stream= captures what txrecon publishes (SUBJECT.KEY, KEY one
// token): NATS subject coverage with `*` and `>`, and the verdict on what
// JetStream's API said of the stream, worded for the log and the status;
// whether an answer is the stream's acknowledgement, and a duplicate one
// this publish's.
import Testing
@testable import TxRecon

@Suite struct StreamCaptureTests {
    @Test(arguments: [
        ("txrecon.>", "txrecon.*"),
        ("txrecon.*", "txrecon.*"),
        (">", "txrecon.*"),
        ("*.*", "txrecon.*"),
        ("*.>", "txrecon.*"),
        ("shop.>", "shop.appstore.*"),
        ("shop.*.*", "shop.appstore.*"),
        ("*.appstore.>", "shop.appstore.*"),
        ("shop.appstore.*", "shop.appstore.key"),
        ("shop.appstore.key", "shop.appstore.key"),
        ("a.>", "a.>"),
        ("a.>", "a.b.>"),
    ])
    func aFilterWithWildcardsWhereThePatternHasThemCoversIt(filter: String, pattern: String) {
        #expect(StreamCapture.covers(filter, pattern))
    }

    @Test(arguments: [
        ("txrecon", "txrecon.*"),
        ("txrecon.key", "txrecon.*"),
        ("txrecon.*.*", "txrecon.*"),
        ("txrecon.*.>", "txrecon.*"),
        ("shop.*", "shop.appstore.*"),
        ("a.b.*", "c.d.*"),
        ("txrecon.>", "txrecon"),
        ("txrecons.>", "txrecon.*"),
        ("txrecon.*", "txrecon.>"),
        ("*.*", "a.>"),
        ("shop.appstore.*", "shop.*.*"),
    ])
    func aFilterThatMissesOneSubjectOfThePatternDoesNotCoverIt(filter: String, pattern: String) {
        #expect(!StreamCapture.covers(filter, pattern))
    }

    @Test func txreconPublishesToTheSubjectAndOneToken() {
        #expect(StreamCapture.publishedPattern("shop.appstore") == "shop.appstore.*")
        // The key is one token whatever it holds: its file name has no dot.
        let key = ItemKey("a.b *>")!
        #expect(!key.fileName.contains(".") && !key.fileName.contains("*") && !key.fileName.contains(">"))
        #expect(StreamCapture.covers("shop.appstore.*", "shop.appstore." + key.fileName))
    }

    @Test func aStreamCapturesTheSubjectsThroughAnyOneOfItsFilters() {
        #expect(StreamCapture.judge(.found(subjects: ["orders.>", "shop.appstore.*"]), stream: "APPSTORE",
                                    subject: "shop.appstore")
                == .captured(stream: "APPSTORE", filter: "shop.appstore.*"))
        #expect(StreamCapture.judge(.found(subjects: ["shop.>"]), stream: "APPSTORE", subject: "shop.appstore").problem == nil)
    }

    @Test func aStreamThatIsNotThereSaysSo() {
        let verdict = StreamCapture.judge(.notFound, stream: "APPSTORE", subject: "shop.appstore")
        #expect(verdict == .missing(stream: "APPSTORE"))
        #expect(verdict.problem == "stream APPSTORE does not exist")
    }

    @Test func aStreamThatCapturesOtherSubjectsNamesThemAndWhatTxreconPublishesTo() {
        let verdict = StreamCapture.judge(.found(subjects: ["a.b.*", "shop.*"]), stream: "APPSTORE",
                                          subject: "shop.appstore")
        #expect(verdict.problem == "stream APPSTORE captures a.b.*, shop.* but txrecon publishes to shop.appstore.KEY")
        // Subjects split over several filters are not captured by any one.
        #expect(StreamCapture.judge(.found(subjects: ["shop.appstore.a", "shop.appstore.b"]), stream: "S",
                                    subject: "shop.appstore").problem != nil)
        #expect(StreamCapture.judge(.found(subjects: []), stream: "MIRROR", subject: "txrecon").problem
                == "stream MIRROR captures no subject (a mirror?) but txrecon publishes to txrecon.KEY")
    }

    @Test func aLookupWithoutAnAnswerIsNoCaptureAndSaysWhy() {
        let verdict = StreamCapture.judge(.failed("timeout"), stream: "APPSTORE", subject: "txrecon")
        #expect(verdict == .unknown(stream: "APPSTORE", reason: "timeout"))
        #expect(verdict.problem == "cannot look up stream APPSTORE: timeout")
    }

    @Test func subjectsFromTheAnswerReachTheLogOnOneLine() {
        // A forged STREAM.INFO answer chooses them.
        let verdict = StreamCapture.judge(.found(subjects: ["a\nwarning: forged"]), stream: "S", subject: "txrecon")
        #expect(verdict.problem?.contains("\n") == false && verdict.problem?.contains("a\\nwarning: forged") == true)
    }
}

@Suite struct StreamAcknowledgementTests {
    @Test func anAcknowledgementThatNamesStreamAndASequenceIsPublished() {
        let answer = StreamAcknowledgement(stream: "APPSTORE", sequence: 42, duplicate: true)
        #expect(answer.result(expecting: "APPSTORE", subject: "shop.appstore.k")
                == .published(stream: "APPSTORE", sequence: 42, duplicate: true))
    }

    @Test(arguments: [
        (StreamAcknowledgement(stream: "OTHER", sequence: 7, duplicate: false),
         #"names stream "OTHER", not APPSTORE (Stream=)"#),
        (StreamAcknowledgement(stream: "", sequence: 0, duplicate: false),
         #"is not a JetStream acknowledgement (stream "", sequence 0)"#),
        (StreamAcknowledgement(stream: "APPSTORE", sequence: 0, duplicate: false),
         #"is not a JetStream acknowledgement (stream "APPSTORE", sequence 0)"#),
        (StreamAcknowledgement(stream: "appstore", sequence: 3, duplicate: false),
         #"names stream "appstore", not APPSTORE"#),
    ])
    func anAnswerThatIsNotStreamsAcknowledgementIsAFailureWithTheReason(answer: StreamAcknowledgement, reason: String) {
        guard case let .failure(failure) = answer.result(expecting: "APPSTORE", subject: "shop.appstore.k") else {
            Issue.record("taken for an acknowledgement")
            return
        }
        #expect(failure.kind == .notAcknowledged)
        #expect(failure.message.contains("the answer to the publish on shop.appstore.k") && failure.message.contains(reason),
                "\(failure.message)")
        // Retried, and counted against the destination like any failure.
        #expect(Outcome(.failure(failure), now: 0, redactor: SecretRedactor())
                == .retryLater(reason: failure.description, status: nil, retryAfter: nil))
    }

    @Test func aStreamNameChosenByTheAnswererReachesTheReasonOnOneLine() {
        let answer = StreamAcknowledgement(stream: "X\nerror: forged", sequence: 1, duplicate: false)
        guard case let .failure(failure) = answer.result(expecting: "APPSTORE", subject: "s.k") else {
            Issue.record("taken for an acknowledgement")
            return
        }
        #expect(!failure.message.contains("\n") && failure.message.contains(#""X\nerror: forged""#))
    }
}

@Suite struct DuplicateAcknowledgementTests {
    func judge(_ lookup: StoredMessageLookup) -> DuplicateAcknowledgement {
        DuplicateAcknowledgement.judge(lookup, stream: "ORDERS", sequence: 7, subject: "shop.orders.k", messageID: "k:1")
    }

    @Test func ourOwnEarlierPublishFinishesTheItem() {
        // An attempt whose acknowledgement was lost: what the window is for.
        #expect(judge(.found(subject: "shop.orders.k", messageID: "k:1")) == .ours)
    }

    @Test(arguments: [
        StoredMessageLookup.found(subject: "shop.analytics.k", messageID: "k:1"),
        .found(subject: "shop.orders.k", messageID: "k:2"),
        .found(subject: "shop.orders.k", messageID: nil),
    ])
    func anotherSubjectsMessageFinishesNothing(lookup: StoredMessageLookup) {
        guard case let .another(problem) = judge(lookup) else {
            Issue.record("taken for this publish: \(judge(lookup))")
            return
        }
        #expect(problem.hasPrefix("stream ORDERS answered the publish on shop.orders.k as a duplicate of sequence 7, "
                                  + "which holds "), "\(problem)")
        #expect(problem.contains("once the stream's duplicate window has passed"))
        // Retried, and counted against the destination like any failure.
        let failure = TransportFailure(.duplicateUnconfirmed, problem)
        #expect(Outcome(.failure(failure), now: 0, redactor: SecretRedactor())
                == .retryLater(reason: failure.description, status: nil, retryAfter: nil))
    }

    @Test func aSubjectChosenByAnotherPublisherReachesTheReasonOnOneLine() {
        guard case let .another(problem) = judge(.found(subject: "x\nerror: forged", messageID: "k:1\nforged")) else {
            Issue.record("taken for this publish")
            return
        }
        #expect(!problem.contains("\n") && problem.contains(#"x\nerror: forged"#), "\(problem)")
    }

    @Test func aMessageThatCannotBeLookedUpForGoodIsFinishedWithTheRisk() {
        // A user without STREAM.MSG.GET, set up before it was needed, would
        // otherwise have every retried item wait out the window.
        guard case let .unconfirmed(.notPermitted, risk) = judge(.notPermitted(
            #"Permissions Violation for Publish to "$JS.API.STREAM.MSG.GET.ORDERS""#)) else {
            Issue.record("not finished unconfirmed")
            return
        }
        #expect(risk.contains("txrecon may not look that message up (Permissions Violation") && risk.hasSuffix(
            "so it cannot be told whether it was on shop.orders.k; finished as acknowledged"), "\(risk)")
        // A work-queue consumer took it, or a limit removed it.
        guard case let .unconfirmed(.removed, removed) = judge(.removed) else {
            Issue.record("not finished unconfirmed")
            return
        }
        #expect(removed.contains("which the stream no longer holds"), "\(removed)")
    }

    @Test func aLookUpThatFailedNowIsRetried() {
        #expect(judge(.failed("timeout")) == .unknown(reason: "stream ORDERS answered the publish on shop.orders.k as a "
                                                      + "duplicate of sequence 7, and looking that message up failed: "
                                                      + "timeout; retried"))
    }
}
