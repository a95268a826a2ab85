// The one place secrets are taken out of text: every spelling an echo can
// give them, in log entries and in the reasons made of backend answers.
import Testing
@testable import TxRecon
import TxReconTestSupport

@Suite struct SecretRedactorTests {
    let token = #"tok-"quoted"\back/slash+plus"#

    @Test func aSecretIsReplacedAsWrittenJSONEscapedAndPercentEncoded() {
        let redactor = SecretRedactor([token])
        let json = String(decoding: JSONValue.string(token).serialized, as: UTF8.self)
        for echo in ["Authorization: Bearer \(token)", #"{"authorization":\#(json)}"#,
                     #"{"authorization":"tok-\"quoted\"\\back\/slash+plus"}"#,
                     "?access_token=tok-%22quoted%22%5Cback%2Fslash%2Bplus"] {
            let redacted = redactor.redact(echo)
            #expect(!redacted.contains("quoted"), "\(echo) -> \(redacted)")
            #expect(redacted.contains("<redacted>"), "\(echo)")
        }
    }

    @Test func everyOccurrenceGoesAndTheRestStays() {
        let redactor = SecretRedactor(["s3cr3t-value", "other-secret"])
        #expect(redactor.redact("a s3cr3t-value b s3cr3t-value c other-secret")
                == "a <redacted> b <redacted> c <redacted>")
        #expect(redactor.redact("nothing to hide") == "nothing to hide")
    }

    @Test func aSecretInsideALongerOneIsReplacedWhole() {
        let redactor = SecretRedactor(["AQIDBAUGBwgJ", "whsec_AQIDBAUGBwgJ"])
        #expect(redactor.redact("secret whsec_AQIDBAUGBwgJ here") == "secret <redacted> here")
    }

    @Test func tooShortTextsAreNotLookedForAndAReplacedSecretStaysKnownOneReloadMore() {
        let redactor = SecretRedactor(["abc", "old-secret-1"])
        #expect(redactor.redact("abc old-secret-1") == "abc <redacted>")
        // A reload that rotated the token: answers to requests that carried
        // the old one still arrive.
        redactor.replace(with: ["new-secret-2"])
        #expect(redactor.redact("old-secret-1 new-secret-2") == "<redacted> <redacted>")
        redactor.replace(with: ["new-secret-2"])
        #expect(redactor.redact("old-secret-1 new-secret-2") == "old-secret-1 <redacted>",
                "two reloads on, the old one is no longer searched for")
    }

    @Test func theLogSinkRedactsMessagesAndFields() {
        let recorded = RecordingLogSink()
        let sink = RedactingLogSink(recorded, redactor: SecretRedactor(["s3cr3t-value"]))
        sink.write(LogEntry(.warning, "held: s3cr3t-value", fields: [("TXRECON_REASON", "HTTP 409: s3cr3t-value")]))
        #expect(recorded.entries.first?.message == "held: <redacted>")
        #expect(recorded.entries.first?.field("TXRECON_REASON") == "HTTP 409: <redacted>")
    }

    @Test func theLogSinkFindsASecretInAnyPartOfAnEntryAndPassesTheOthersAsTheyAre() {
        let recorded = RecordingLogSink()
        let sink = RedactingLogSink(recorded, redactor: SecretRedactor(["s3cr3t-value"]))
        let clean = LogEntry(.info, "delivered", messageID: "abc",
                             fields: [("TXRECON_ID", "k1"), ("TXRECON_REASON", "s3cr3t-valu"), ("TXRECON_FILE", "")])
        sink.write(clean)
        sink.write(LogEntry(.info, "delivered", fields: [("TXRECON_ID", "k2"), ("TXRECON_REASON", "x s3cr3t-value")]))
        sink.write(LogEntry(.info, "s3cr3t-value"))
        #expect(recorded.entries.count == 3)
        #expect(recorded.entries.first == clean)
        #expect(recorded.entries.dropFirst().first?.field("TXRECON_REASON") == "x <redacted>")
        #expect(recorded.entries.dropFirst().first?.field("TXRECON_ID") == "k2")
        #expect(recorded.entries.last?.message == "<redacted>")
    }

    @Test func anOutcomesReasonIsRedactedAndADeliveryLeftAlone() {
        let redactor = SecretRedactor(["s3cr3t-value"])
        let echo: TransportResult = .response(status: 409, retryAfter: nil,
                                              bodyPrefix: Array("you sent Bearer s3cr3t-value".utf8))
        #expect(Outcome(echo, now: 0, redactor: redactor) == .hold(reason: "HTTP 409: you sent Bearer <redacted>",
                                                                   status: 409))
        #expect(Outcome(.response(status: 204, retryAfter: nil, bodyPrefix: []), now: 0, redactor: redactor)
                == .delivered(.http(status: 204)))
        let failure = TransportFailure(.connect, "proxy said s3cr3t-value")
        #expect(Outcome(.failure(failure), now: 0, redactor: redactor)
                == .retryLater(reason: "connection failed: proxy said <redacted>", status: nil, retryAfter: nil))
    }

    /// A NATS server's words are cut to 300 characters where they are put
    /// into words (StreamCapture, DuplicateAcknowledgement), before the log
    /// sink or the outcome redacts them: a secret across that cut leaves
    /// its beginning before the cut mark, which goes too.
    @Test func theBeginningOfASecretCutBeforeRedactionGoesWithItsCutMark() {
        let token = "nats-token-0123456789abcdef"
        let redactor = SecretRedactor([token])
        let answer = String(repeating: "y", count: 290) + token
        let problem = StreamCapture.unknown(stream: "TX", reason: answer).problem ?? ""
        #expect(problem.hasSuffix("nats-token…"), "the cut this guards against")
        let line = "JetStream stream check: \(problem); nothing is published"
        #expect(redactor.redact(line) == "JetStream stream check: cannot look up stream TX: "
                + String(repeating: "y", count: 290) + "<redacted>…; nothing is published")
        let recorded = RecordingLogSink()
        RedactingLogSink(recorded, redactor: redactor).write(LogEntry(.warning, line))
        #expect(recorded.entries.first?.message.contains("nats-tok") == false)
        // An ordinary cut, and a word that only ends like a secret begins, stay.
        #expect(redactor.redact("abc…") == "abc…")
        #expect(redactor.redact("say nats…") == "say nats…", "shorter than the shortest secret looked for")
        #expect(redactor.redact(String(repeating: "z", count: 20) + "…") == String(repeating: "z", count: 20) + "…")
    }

    @Test func aSecretAcrossTheReasonsCutIsRedactedBeforeTheCut() {
        // The token begins 10 bytes before the 512 a hold reason keeps: cut
        // first, its first 10 bytes would stay.
        let token = "tok-0123456789abcdefghij"
        let body = String(repeating: "x", count: Outcome.reasonBodyLimit - 10) + token + " was refused"
        let answer: TransportResult = .response(status: 400, retryAfter: nil, bodyPrefix: Array(body.utf8))
        guard case let .hold(reason, _) = Outcome(answer, now: 0, redactor: SecretRedactor([token])) else {
            Issue.record("not held")
            return
        }
        #expect(!reason.contains("tok-012"), "\(reason.suffix(20))")
        #expect(reason.hasSuffix("x<redacted>"))
    }
}
