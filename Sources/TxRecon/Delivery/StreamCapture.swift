// StreamCapture: whether the stream Stream= names exists and captures every
// subject txrecon publishes to for a JetStream destination, judged from what
// JetStream's API said of that stream (STREAM.INFO). A pure decision, made
// by the transport at each connection and after each reconnect; while it
// is anything but `.captured`, nothing is published to the destination (so
// no answer from someone else can finish an item meanwhile).
//
// Subjects: each item goes to Subject= "." KEY, and KEY, as the spool names
// it, is one token (letters, digits, -, _, %XX, = and base64url: never a
// `.`, `*` or `>`), so txrecon publishes to the pattern `SUBJECT.*`.
// Reports nothing; `problem` words the verdict for the log and the status.

/// What JetStream's API answered when asked about a stream.
enum StreamLookup: Sendable, Equatable {
    /// The stream exists and captures these subjects (NATS wildcards
    /// allowed); none for a mirror.
    case found(subjects: [String])
    /// JetStream says there is no such stream (err_code 10059).
    case notFound
    /// No answer that says either (timeout, no responders: JetStream not
    /// enabled or electing a leader, a permissions violation), in words.
    case failed(String)
}

enum StreamCapture: Sendable, Equatable {
    /// `stream` captures every subject txrecon publishes to, through
    /// `filter`, one of its subjects.
    case captured(stream: String, filter: String)
    case missing(stream: String)
    /// `stream` exists but none of its `subjects` takes `published`.
    case capturesOthers(stream: String, subjects: [String], published: String)
    /// It could not be told: the lookup failed with `reason`.
    case unknown(stream: String, reason: String)

    /// The verdict on `stream` for a destination whose Subject= is
    /// `subject`, from what the lookup of `stream` found.
    static func judge(_ lookup: StreamLookup, stream: String, subject: String) -> StreamCapture {
        let published = publishedPattern(subject)
        switch lookup {
        case let .found(subjects):
            if let filter = subjects.first(where: { covers($0, published) }) {
                return .captured(stream: stream, filter: filter)
            }
            return .capturesOthers(stream: stream, subjects: subjects, published: published)
        case .notFound:
            return .missing(stream: stream)
        case let .failed(reason):
            return .unknown(stream: stream, reason: reason)
        }
    }

    /// What is wrong, for the log and the status; nil when captured.
    var problem: String? {
        switch self {
        case .captured:
            return nil
        case let .missing(stream):
            return "stream \(stream) does not exist"
        case let .capturesOthers(stream, subjects, published):
            let spelled = Self.spelled(published)
            guard !subjects.isEmpty else {
                return "stream \(stream) captures no subject (a mirror?) but txrecon publishes to \(spelled)"
            }
            // The server's words, which a forged answer chooses: escaped.
            let captured = LogText.singleLine(subjects.joined(separator: ", "), limit: 300)
            return "stream \(stream) captures \(captured) but txrecon publishes to \(spelled)"
        case let .unknown(stream, reason):
            return "cannot look up stream \(stream): \(LogText.singleLine(reason, limit: 300))"
        }
    }

    /// The subjects a destination with Subject= `subject` publishes to, as
    /// one NATS pattern: `SUBJECT.*`.
    static func publishedPattern(_ subject: String) -> String { subject + ".*" }

    /// `SUBJECT.*` as an operator reads it: `SUBJECT.KEY`.
    private static func spelled(_ pattern: String) -> String { String(pattern.dropLast()) + "KEY" }

    /// Whether every subject `pattern` matches is matched by `filter`, both
    /// NATS subjects with wildcards (`*` one token, `>` one or more at the
    /// end). A stream captures a subject through any one of its subjects,
    /// and it captures all of `pattern` only if one of them covers it alone:
    /// a subject of `pattern` whose wildcard tokens are tokens no filter
    /// names is matched only by a filter with wildcards there.
    static func covers(_ filter: String, _ pattern: String) -> Bool {
        let filterTokens = filter.split(separator: ".", omittingEmptySubsequences: false)
        let patternTokens = pattern.split(separator: ".", omittingEmptySubsequences: false)
        for (index, token) in filterTokens.enumerated() {
            // `>` takes the rest, which must be at least one token.
            if token == ">" { return index < patternTokens.count }
            guard index < patternTokens.count else { return false }
            let covered = patternTokens[index]
            // A `>` in the pattern is matched only by a `>` here.
            if covered == ">" { return false }
            if token == "*" { continue }
            // A literal token takes only itself, never a wildcard's many.
            guard token == covered else { return false }
        }
        return filterTokens.count == patternTokens.count
    }
}
