// Whether Stream= captures what txrecon publishes (SUBJECT.KEY, KEY one
// token): NATS subject coverage with `*` and `>`, and the verdict on what
// JetStream's API said of the stream, worded for the log and the status.
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
