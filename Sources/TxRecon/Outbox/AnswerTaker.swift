// AnswerTaker: the daemon's side of the outbox. When a destination confirms
// an item, before the item is moved into done/ (Attempt), it writes what
// Apple is owed into outbox/new/, durably:
//
//   - the `AnswersFrom=` destination's 2xx answer to a CONSUMPTION_REQUEST
//     carrying `consumptionInformation` (ConsumptionAnswer): a consumption
//     entry;
//   - with `FinishTransactions=yes`, a purchase (PurchaseToFinish) once
//     every destination that matches it confirmed it: a finish entry. A
//     destination that is not the last leaves a marker (outbox/confirmed/)
//     instead; the last one writes the entry. The check and the marker are
//     made under outbox/confirmed.lock (`txrecon answer` takes it too), so
//     two destinations confirming at once cannot each take the other for
//     the one still missing.
//
// A failure to write throws, and the attempt keeps the item (it is
// delivered again, then answered): a crash or a full disk between the
// backend's 2xx and the entry costs a redelivery, never the answer.
// Called where an attempt is settled (the engine's event loop, or a
// JetStream transport's thread); reports nothing (the engine logs the notes).
import Synchronization

/// What taking an answer did, for the engine's log.
package enum OutboxNote: Sendable, Equatable {
    /// An entry was written into outbox/new/ under this name.
    case wrote(String)
    /// This destination's confirmation of a purchase was recorded; the
    /// entry waits for the other destinations that take it.
    case awaitingDestinations(String, [String])
    /// A 2xx body that could not be taken, and why.
    case ignored(String)
}

package final class AnswerTaker: Sendable {
    package struct Settings: Sendable {
        var outbox: Outbox
        /// `AnswersFrom=`.
        var answeringDestination: String
        /// `FinishTransactions=`.
        var finishTransactions: Bool
        /// Every destination's name and `[Match]`, to know which must
        /// confirm a purchase before it is finished.
        var destinations: [(name: String, match: DestinationMatch)]
        /// `ConsumptionDeadlineWarning=`.
        var deadlineWarning: Duration

        package init(outbox: Outbox, answeringDestination: String, finishTransactions: Bool,
                     destinations: [(name: String, match: DestinationMatch)],
                     deadlineWarning: Duration = OutboxSettings().consumptionDeadlineWarning) {
            self.outbox = outbox
            self.answeringDestination = answeringDestination
            self.finishTransactions = finishTransactions
            self.destinations = destinations
            self.deadlineWarning = deadlineWarning
        }

        /// The settings of `configuration`'s `[Outbox]` for the outbox of its spool.
        package init(_ configuration: Configuration) {
            self.init(outbox: Outbox(spool: configuration.spool.directory),
                      answeringDestination: configuration.outbox.answersFrom,
                      finishTransactions: configuration.outbox.finishTransactions,
                      destinations: configuration.deliveryConfigurations.map { ($0.name, $0.configuration.match) },
                      deadlineWarning: configuration.outbox.consumptionDeadlineWarning)
        }
    }

    private let settings: Mutex<Settings>

    package init(_ settings: Settings) {
        self.settings = Mutex(settings)
    }

    /// A reload's settings (`[Outbox]`, the destinations' `[Match]`).
    package func update(_ new: Settings) {
        settings.withLock { $0 = new }
    }

    /// Whether `destination`'s 2xx answer to `item` is read for an answer
    /// to Apple (the transport then keeps its body).
    package func readsAnswer(to item: Item, from destination: String) -> Bool {
        Self.isConsumptionRequest(item) && settings.withLock { $0.answeringDestination == destination }
    }

    /// How long after Apple signed it `item` may stay unconfirmed by
    /// `destination` before a warning: nil unless it is a consumption
    /// request `destination` answers for.
    package func deadlineWarning(for item: Item, from destination: String) -> Duration? {
        guard Self.isConsumptionRequest(item) else { return nil }
        return settings.withLock { $0.answeringDestination == destination ? $0.deadlineWarning : nil }
    }

    static func isConsumptionRequest(_ item: Item) -> Bool {
        item.kind == .notification && item.fields.notificationType == "CONSUMPTION_REQUEST"
    }

    /// Writes what `destination`'s confirmation of `item` (2xx `body`, when
    /// kept) owes Apple; `now`: ms since 1970. Throws when an entry or a
    /// marker could not be made durable.
    package func take(_ item: Item, confirmedBy destination: String, body: [UInt8], at now: Int64)
        throws(SpoolError) -> [OutboxNote] {
        // Receipts and envelopes owe Apple nothing: no lock, no copy, on
        // the path every delivery takes.
        guard item.kind == .transaction || item.kind == .notification else { return [] }
        let settings = self.settings.withLock { $0 }
        var notes: [OutboxNote] = []
        if Self.isConsumptionRequest(item), destination == settings.answeringDestination,
           let note = try takeConsumption(item, body: body, at: now, settings: settings) {
            notes.append(note)
        }
        if settings.finishTransactions, let purchase = PurchaseToFinish.transaction(of: item) {
            let entry = OutboxEntry(kind: .finish, transactionId: purchase.id, environment: purchase.environment,
                                    bundleId: item.fields.bundleId, requestedAt: nil, confirmedAt: now,
                                    destination: destination, consumptionInformation: nil)
            let takers = settings.destinations.filter { $0.match.accepts(item) }.map(\.name)
            if let note = try takeFinish(entry, confirmedBy: destination, takers: takers, outbox: settings.outbox) {
                notes.append(note)
            }
        }
        return notes
    }

    private func takeConsumption(_ item: Item, body: [UInt8], at now: Int64,
                                 settings: Settings) throws(SpoolError) -> OutboxNote? {
        let information: JSONValue
        switch ConsumptionAnswer.read(body) {
        case .none: return nil
        case .ignored(let why): return .ignored(why)
        case .information(let value): information = value
        }
        guard let transactionId = item.fields.transactionId,
              let environment = item.fields.environment.flatMap(AppStoreEnvironment.init(rawValue:)) else {
            return .ignored("the request names no transaction of Production or Sandbox, the environments Apple's "
                + "API answers for")
        }
        let entry = OutboxEntry(kind: .consumption, transactionId: transactionId, environment: environment,
                                bundleId: item.fields.bundleId, requestedAt: item.version.secondary,
                                confirmedAt: now, destination: settings.answeringDestination,
                                consumptionInformation: information)
        return try Self.note(settings.outbox.write(entry), entry)
    }

    private func takeFinish(_ entry: OutboxEntry, confirmedBy destination: String, takers: [String],
                            outbox: Outbox) throws(SpoolError) -> OutboxNote? {
        let name = entry.fileName
        let others = takers.filter { $0 != destination }
        // Answered already (a redelivery): no marker to wait for others.
        guard outbox.pastNew(name) == nil else { return nil }
        guard !others.isEmpty else { return try Self.note(outbox.write(entry), entry) }
        // The flock excludes the daemon's other threads too (each call
        // opens the file anew), not only `txrecon answer`.
        return try outbox.withConfirmationsLocked { () throws(SpoolError) -> OutboxNote? in
            // Given up by `txrecon answer` since the look above (set
            // aside): not waited for again.
            guard outbox.pastNew(name) == nil else { return nil }
            let missing = others.filter { !outbox.isConfirmed(name, by: $0) }
            guard missing.isEmpty else {
                try outbox.markConfirmed(name, by: destination)
                return .awaitingDestinations(name, missing)
            }
            let note = try Self.note(outbox.write(entry), entry)
            try outbox.clearConfirmations(name, of: takers)
            return note
        }
    }

    private static func note(_ written: Outbox.Written, _ entry: OutboxEntry) -> OutboxNote? {
        written == .written ? .wrote(entry.fileName) : nil
    }
}
