// DaemonStatus: the status of every destination's engine at once, for the
// STATUS= line, the status file and the metrics file. With one destination
// it reads exactly as that engine's status always has; with several, the
// counts are totals and each destination's condition is named.
// `DestinationStatusBoard` collects the engines' statuses as each publishes.
import Synchronization

struct DaemonStatus: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var name: String
        var status: EngineStatus
    }

    /// `[Backend]` first, then the further destinations in name order.
    var destinations: [Entry]
    /// The ledger's, when the daemon has one.
    var ledger: LedgerService.Status?

    var primary: EngineStatus { destinations[0].status }

    /// The engines' counts added up; the backend condition and a paused
    /// intake are the primary's (intake reports to that engine). With
    /// several destinations new/ never waits for room (a full destination's
    /// copies wait in its own inbox), so that is each destination's own.
    var totals: EngineStatus {
        var total = primary
        if destinations.count > 1 { total.intakeWaitsBelow = nil }
        for entry in destinations.dropFirst() {
            total.queued += entry.status.queued
            total.delivering += entry.status.delivering
            total.held += entry.status.held
            total.delivered += entry.status.delivered
            total.superseded += entry.status.superseded
        }
        return total
    }

    /// One line, e.g. `12 queued, 3 delivering, 1 held, 2 rejected; backend
    /// ok; analytics failing since 18:03:07 (HTTP 503), next probe at 18:04:40`.
    var line: String {
        destinationsLine + appsNote + (ledger.map(Self.ledgerNote) ?? "")
    }

    /// With several apps, each one's deliveries (to every destination)
    /// since the start: "; delivered by app: main 10, two 4, three 0".
    private var appsNote: String {
        let apps = primary.apps
        guard apps.count > 1 else { return "" }
        let counts = apps.map { app in
            destinations.reduce(0) { $0 + ($1.status.statistics.deliveredByApp[app] ?? 0) }
        }
        return "; delivered by app: " + zip(apps, counts).map { "\($0) \($1)" }.joined(separator: ", ")
    }

    /// Said only when something is wrong: "; ledger unavailable: …", or
    /// "; ledger 75s behind" past a minute of lag.
    private static func ledgerNote(_ ledger: LedgerService.Status) -> String {
        if let unavailable = ledger.unavailable { return "; ledger unavailable: \(unavailable)" }
        if ledger.lagMilliseconds >= 60_000 { return "; ledger \(ledger.lagMilliseconds / 1000)s behind" }
        return ""
    }

    private var destinationsLine: String {
        guard destinations.count > 1 else { return primary.line }
        let total = totals
        var text = "\(total.queued) queued, \(total.delivering) delivering, \(total.held) held, \(total.rejected) rejected"
        for entry in destinations {
            text += "; " + entry.name + " " + entry.status.conditionText
            if let below = entry.status.intakeWaitsBelow { text += ", takes more once fewer than \(below) are queued" }
        }
        if let paused = total.intakePausedBecause { text += "; intake paused: \(paused)" }
        if total.phase != "running" { text = "\(total.phase): " + text }
        return text
    }
}

/// The latest status of each destination's engine and of the ledger; each
/// records its own and gets the whole back.
final class DestinationStatusBoard: Sendable {
    private let latest: Mutex<DaemonStatus>

    init(names: [String]) {
        latest = Mutex(DaemonStatus(destinations: names.map { DaemonStatus.Entry(name: $0, status: EngineStatus()) }))
    }

    /// Records destination `index`'s status; returns everyone's.
    func record(_ status: EngineStatus, at index: Int) -> DaemonStatus {
        latest.withLock { latest in
            latest.destinations[index].status = status
            return latest
        }
    }

    /// Records the ledger's status; returns everyone's.
    func record(ledger: LedgerService.Status) -> DaemonStatus {
        latest.withLock { latest in
            latest.ledger = ledger
            return latest
        }
    }

    var current: DaemonStatus { latest.withLock { $0 } }
}
