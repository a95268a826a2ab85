// OutboxEntry: one answer to Apple waiting to be sent, as the daemon writes
// it into the outbox and `txrecon answer` reads it: Send Consumption
// Information for a CONSUMPTION_REQUEST (with the backend's
// `consumptionInformation` as it gave it), or Finish Transaction for a
// purchase every destination confirmed.
//
// Its file name says what it is and makes a second entry for the same
// answer land on the first: `consumption.ENV.TXID.SIGNED.json` (SIGNED: the
// request's signedDate, so a customer's second refund request is a second
// answer, a redelivery of the same request the same one) and
// `finish.ENV.TXID.json`. TXID is written as a spool key's file name, so
// any transaction id makes a safe name. Pure: encodes and decodes, touches
// no files.

package struct OutboxEntry: Sendable, Equatable {
    package enum Kind: String, Sendable, CaseIterable {
        /// Send Consumption Information (v2).
        case consumption
        /// Finish Transaction.
        case finish
    }

    package var kind: Kind
    package var transactionId: String
    /// `Production` or `Sandbox`: the API the entry goes to.
    package var environment: AppStoreEnvironment
    package var bundleId: String?
    /// A consumption request's signedDate (ms since 1970); its deadline is
    /// `deadlineAfterRequest` later. nil for a finish.
    package var requestedAt: Int64?
    /// When the destination confirmed the item (ms since 1970).
    package var confirmedAt: Int64
    /// The destination that confirmed it (`AnswersFrom=`'s for consumption).
    package var destination: String
    /// The backend's `consumptionInformation`, as JSON; nil for a finish.
    package var consumptionInformation: JSONValue?

    /// Apple weighs consumption information only this long after the request.
    package static let deadlineAfterRequest: Duration = .seconds(12 * 3600)

    /// How long a finish entry waits in queue/ for Apple to take it: 30
    /// days, as long as confirmed/ waits for a purchase's last destination
    /// and sent/ keeps what was sent, so nothing stays in the outbox longer.
    /// Apple has no deadline for Finish Transaction, but no outage of
    /// Apple's lasts that long: an entry still refused (5xx) or waiting for
    /// its app's key by then is set aside for a person, not retried every 5
    /// minutes for ever. Counted from when a run took it into queue/ (its
    /// modification time, `Outbox.queuedAt`), so moving it back into new/
    /// gives it another 30 days.
    package static let finishWaitsInQueue: Duration = .seconds(30 * 86_400)

    package init(kind: Kind, transactionId: String, environment: AppStoreEnvironment, bundleId: String?,
                 requestedAt: Int64?, confirmedAt: Int64, destination: String, consumptionInformation: JSONValue?) {
        self.kind = kind
        self.transactionId = transactionId
        self.environment = environment
        self.bundleId = bundleId
        self.requestedAt = requestedAt
        self.confirmedAt = confirmedAt
        self.destination = destination
        self.consumptionInformation = consumptionInformation
    }

    /// The last moment Apple still weighs a consumption answer (ms since 1970).
    package var deadline: Int64? { requestedAt.map { $0 + OutboxEntry.deadlineAfterRequest.milliseconds } }

    /// The entry's file name (see the header).
    package var fileName: String {
        // Made from an item's key or checked as one when read: never nil.
        let transaction = ItemKey(transactionId)?.fileName ?? "-"
        switch kind {
        case .consumption: return "consumption.\(environment.rawValue).\(transaction).\(requestedAt ?? 0).json"
        case .finish: return "finish.\(environment.rawValue).\(transaction).json"
        }
    }

    /// The finish entry whose file name is `name` (`finish.ENV.TXID.json`),
    /// confirmed by `destination` at `confirmedAt`; nil when `name` is not
    /// one `fileName` gives a finish. Its bundle id is not in the name.
    package init?(finishNamed name: String, confirmedAt: Int64, by destination: String) {
        let prefix = Kind.finish.rawValue + ".", suffix = ".json"
        guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
        let middle = name.dropFirst(prefix.count).dropLast(suffix.count)
        guard let dot = middle.firstIndex(of: "."),
              let environment = AppStoreEnvironment(rawValue: String(middle[..<dot])),
              let key = ItemKey(fileName: String(middle[middle.index(after: dot)...])) else { return nil }
        self.init(kind: .finish, transactionId: key.rawValue, environment: environment, bundleId: nil,
                  requestedAt: nil, confirmedAt: confirmedAt, destination: destination, consumptionInformation: nil)
        guard fileName == name else { return nil }
    }

    /// Whether `name` is shaped like an entry's file name (what `list` and
    /// `answer` read; anything else in the outbox is left alone).
    package static func isEntryName(_ name: String) -> Bool {
        name.hasSuffix(".json") && Kind.allCases.contains { name.hasPrefix($0.rawValue + ".") }
    }

    /// The entry as its file holds it.
    package var json: [UInt8] {
        var members: [(String, JSONValue)] = [
            ("kind", .string(kind.rawValue)), ("transactionId", .string(transactionId)),
            ("environment", .string(environment.rawValue)),
        ]
        if let bundleId { members.append(("bundleId", .string(bundleId))) }
        if let requestedAt {
            members.append(("requestedAt", .integer(requestedAt)))
            if let deadline { members.append(("deadline", .integer(deadline))) }
        }
        members.append(("confirmedAt", .integer(confirmedAt)))
        members.append(("destination", .string(destination)))
        if let consumptionInformation { members.append(("consumptionInformation", consumptionInformation)) }
        var bytes: [UInt8] = []
        JSONValue.object(members).write(to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Reads an entry's file; the reason it cannot be one otherwise.
    package init(json bytes: [UInt8]) throws(OutboxEntryError) {
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw OutboxEntryError("not JSON: \(error)")
        }
        guard let kindName = value["kind"]?.stringValue, let kind = Kind(rawValue: kindName) else {
            throw OutboxEntryError("kind is not consumption or finish")
        }
        guard let transactionId = value["transactionId"]?.stringValue, ItemKey(transactionId) != nil else {
            throw OutboxEntryError("no transactionId of 1 to \(ItemKey.maximumLength) bytes")
        }
        guard let environmentName = value["environment"]?.stringValue,
              let environment = AppStoreEnvironment(rawValue: environmentName) else {
            throw OutboxEntryError("environment is not Production or Sandbox")
        }
        guard let confirmedAt = value["confirmedAt"]?.int64Value, let destination = value["destination"]?.stringValue
        else { throw OutboxEntryError("no confirmedAt or destination") }
        let requestedAt = value["requestedAt"]?.int64Value
        let information = value["consumptionInformation"]
        if kind == .consumption, requestedAt == nil || information?.objectValue == nil {
            throw OutboxEntryError("a consumption entry without requestedAt or a consumptionInformation object")
        }
        self.init(kind: kind, transactionId: transactionId, environment: environment,
                  bundleId: value["bundleId"]?.stringValue, requestedAt: requestedAt, confirmedAt: confirmedAt,
                  destination: destination, consumptionInformation: kind == .consumption ? information : nil)
    }
}

/// Why a file in the outbox is not an entry.
package struct OutboxEntryError: Error, Sendable, Equatable, CustomStringConvertible {
    package var description: String
    init(_ description: String) { self.description = description }
}
