// ReceiveStatistics: what `txrecon receive` answered since it started, for
// its status file (`txrecon status`) and its metrics file. A value: the
// reporter keeps it under a lock and hands copies to the writers.
// Reports: nothing.

struct ReceiveStatistics: Sendable, Equatable {
    /// Upper bounds of the answer-latency buckets, 1 ms to 10 s: a durable
    /// answer on a local disk takes a few milliseconds (one shared fsync),
    /// RequestTimeout= defaults to 30 s (slower answers land in +Inf).
    static let latencyBounds: [Duration] = [
        .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10), .milliseconds(25),
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
        .milliseconds(2500), .seconds(5), .seconds(10),
    ]

    /// Answers by HTTP status.
    private(set) var answers: [Int: Int] = [:]
    /// From a request's first byte to its answer being queued.
    private(set) var latency = DurationHistogram(bounds: ReceiveStatistics.latencyBounds)
    /// 200s whose body the daemon will set aside (genuine data this
    /// configuration refuses).
    private(set) var setAside = 0
    /// Requests whose connection was closed at RequestTimeout=, unanswered.
    private(set) var cut = 0

    /// Bodies durably in new/: every 200 from a spooling endpoint.
    private(set) var spooled = 0
    /// Of those, the ones that came on a per-app notification path
    /// (`/appstore/notifications/NAME`), by NAME.
    private(set) var spooledOnAppPath: [String: Int] = [:]
    /// Connections closed unanswered at MaxConnections= or
    /// MaxConnectionsPerAddress=, by the limit; not requests.
    private(set) var refusedConnections: [ConnectionLimits.Limit: Int] = [:]

    var requests: Int { answers.values.reduce(0, +) + cut }

    /// Connections refused at either limit.
    var connectionsRefused: Int { refusedConnections.values.reduce(0, +) }

    mutating func answered(_ status: Int, after latency: Duration) {
        answers[status, default: 0] += 1
        self.latency.record(latency)
    }

    mutating func spooledOne(setAside: Bool, onPathOf app: String? = nil) {
        spooled += 1
        if let app { spooledOnAppPath[app, default: 0] += 1 }
        if setAside { self.setAside += 1 }
    }

    mutating func cutAtDeadline() {
        cut += 1
    }

    mutating func refusedConnection(at limit: ConnectionLimits.Limit) {
        refusedConnections[limit, default: 0] += 1
    }
}
