// ItemEvents: the log entry for each thing that happens to an item, one entry
// per event, with the fields `journalctl TXRECON_ID=…` needs to show an
// item's whole history. Retries are info (they are normal operation), holds
// and rejections warnings. Never a signed payload or a secret.

/// What happened to an item; the TXRECON_OUTCOME field.
enum ItemOutcome: String, Sendable {
    case accepted, delivered, deferred, held, rejected, superseded, released, retried, requeued, replayed
    case setAside = "set-aside"
}

/// Builds the log entries of item events.
struct ItemEvents: Sendable {
    let sink: any LogSink

    /// What a delivered item of `app` (TXRECON_APP) wrote into the outbox
    /// (AnswerTaker); the number of answers written.
    func outbox(_ key: ItemKey, _ notes: [OutboxNote], app: String?) -> Int {
        var written = 0
        let appField = app.map { [("TXRECON_APP", $0)] } ?? []
        for note in notes {
            switch note {
            case .wrote(let name):
                written += 1
                sink.write(LogEntry(.info, "\(key): answer for Apple written to outbox/new/\(name)",
                                    messageID: MessageID.answerQueued,
                                    fields: [("TXRECON_ID", key.rawValue), ("TXRECON_OUTBOX_ENTRY", name)] + appField))
            case let .awaitingDestinations(name, missing):
                sink.write(LogEntry(.info, "\(key): confirmed here; \(name) is written once "
                                    + "\(missing.joined(separator: ", ")) confirmed it too",
                                    fields: [("TXRECON_ID", key.rawValue), ("TXRECON_OUTBOX_ENTRY", name)] + appField))
            case .ignored(let why):
                sink.write(LogEntry(.warning, "\(key): the answer to the CONSUMPTION_REQUEST was not taken for Apple: "
                                    + "\(why); the backend must answer {\"consumptionInformation\": {…}} of at most "
                                    + "\(ConsumptionAnswer.bodyLimit / 1024) KiB", fields: [("TXRECON_ID", key.rawValue)] + appField))
            }
        }
        return written
    }

    /// `app`: the name of the item's app (TXRECON_APP), nil when it names
    /// none configured.
    func accepted(_ item: Item, file: String, app: String?) {
        var extra = [("TXRECON_FILE", file)]
        if let app { extra.append(("TXRECON_APP", app)) }
        write(.info, "\(item.key): accepted \(item.kind.rawValue) version \(item.version) from new/\(LogText.escaped(file))",
              MessageID.accepted, .accepted, key: item.key, kind: item.kind, version: item.version, extra: extra)
    }

    /// `file`: the drop's name in new/ when the item was delivered straight
    /// from there, never accepted into queue/; this entry is then its only one.
    func delivered(_ key: ItemKey, kind: ItemKind?, version: ItemVersion?, attempt: Int, confirmation: Confirmation,
                   file: String? = nil, app: String? = nil) {
        // One entry per delivered item, thousands a second in a drain: the
        // fields and the message are each built once, at their final size,
        // the message as bytes (one append per part, not a string's growth).
        var fields = ItemEvents.fields(.delivered, key: key, kind: kind, version: version, room: 6)
        let attemptText = String(attempt)
        fields.append(("TXRECON_ATTEMPT", attemptText))
        if let app { fields.append(("TXRECON_APP", app)) }
        let confirmationText: String
        switch confirmation {
        case let .http(status):
            let statusText = String(status)
            fields.append(("TXRECON_HTTP_STATUS", statusText))
            confirmationText = "HTTP " + statusText
        case let .stream(name, sequence, duplicate):
            fields += [("TXRECON_STREAM", name), ("TXRECON_STREAM_SEQUENCE", String(sequence)),
                       ("TXRECON_STREAM_DUPLICATE", duplicate ? "1" : "0")]
            confirmationText = confirmation.description
        }
        let fileText = file.map { LogText.escaped($0) }
        var message: [UInt8] = []
        message.reserveCapacity(key.rawValue.utf8.count + confirmationText.utf8.count + (fileText?.utf8.count ?? 0) + 48)
        message += key.rawValue.utf8
        message += ": delivered on attempt ".utf8
        message += attemptText.utf8
        message += " (".utf8
        message += confirmationText.utf8
        message.append(UInt8(ascii: ")"))
        if let file, let fileText {
            fields.append(("TXRECON_FILE", file))
            message += " from new/".utf8
            message += fileText.utf8
        }
        sink.write(LogEntry(.info, String(decoding: message, as: UTF8.self), messageID: MessageID.delivered,
                            fields: consume fields))
    }

    func deferred(_ key: ItemKey, kind: ItemKind?, version: ItemVersion?, attempt: Int, reason: String,
                  status: Int?, nextAttemptAt: Int64, app: String? = nil) {
        var extra = [("TXRECON_ATTEMPT", String(attempt)), ("TXRECON_REASON", reason),
                     ("TXRECON_NEXT_ATTEMPT_USEC", String(nextAttemptAt * 1000))]
        if let app { extra.append(("TXRECON_APP", app)) }
        if let status { extra.append(("TXRECON_HTTP_STATUS", String(status))) }
        write(.info, "\(key): attempt \(attempt) failed (\(LogText.singleLine(reason, limit: 200))), next attempt at "
              + Timestamp.rfc3339(milliseconds: nextAttemptAt), MessageID.deferred, .deferred,
              key: key, kind: kind, version: version, extra: extra)
    }

    func held(_ key: ItemKey, kind: ItemKind?, version: ItemVersion?, attempt: Int, reason: String, status: Int?,
              app: String? = nil) {
        var extra = [("TXRECON_ATTEMPT", String(attempt))]
        if let app { extra.append(("TXRECON_APP", app)) }
        if let status { extra.append(("TXRECON_HTTP_STATUS", String(status))) }
        extra.append(("TXRECON_REASON", reason))
        write(.warning, "\(key): held after attempt \(attempt): \(LogText.singleLine(reason, limit: 200)); "
              + "inspect with `txrecon show \(key)`, release with `txrecon release \(key)`", MessageID.held, .held,
              key: key, kind: kind, version: version, extra: extra)
    }

    func superseded(_ key: ItemKey, kind: ItemKind?, version: ItemVersion, by newer: ItemVersion?, file: String?,
                    app: String? = nil) {
        let why = newer.map { "replaced by newer version \($0)" } ?? "not newer than the pending or delivered snapshot"
        var extra: [(String, String)] = []
        if let file { extra.append(("TXRECON_FILE", file)) }
        if let app { extra.append(("TXRECON_APP", app)) }
        write(.notice, "\(key): version \(version) superseded (\(why))", MessageID.superseded, .superseded,
              key: key, kind: kind, version: version, extra: extra)
    }

    /// `app`: the app of a verified drop (none for what did not verify).
    func rejected(file: String, rejection: Rejection, movedTo: String, app: String? = nil) {
        var extra = [("TXRECON_FILE", file), ("TXRECON_REASON", rejection.code)]
        if let app { extra.append(("TXRECON_APP", app)) }
        write(rejection.logPriority, "new/\(LogText.escaped(file)) rejected: \(rejection.code): \(rejection.detail); "
              + "see rejected/\(LogText.escaped(movedTo)).reason", MessageID.rejected, .rejected, key: nil, kind: nil,
              version: nil, extra: extra)
    }

    /// An item the spool could not keep under its key, moved to rejected/
    /// (`Spool.setAside`): an error, for a person has to look at the cause.
    func setAside(_ key: ItemKey, kind: ItemKind?, version: ItemVersion?, reason: String, movedTo: String,
                  app: String? = nil) {
        var extra = [("TXRECON_FILE", movedTo), ("TXRECON_REASON", reason)]
        if let app { extra.append(("TXRECON_APP", app)) }
        write(.error, "\(key): \(LogText.singleLine(reason, limit: 300)); set aside in rejected/\(LogText.escaped(movedTo)), "
              + "see its .reason; `txrecon requeue-rejected \(LogText.escaped(movedTo))` takes it again after a fix",
              MessageID.setAside, .setAside, key: key, kind: kind, version: version, extra: extra)
    }

    func operatorAction(_ outcome: ItemOutcome, key: ItemKey) {
        let message: String
        let id: String
        switch outcome {
        case .released: message = "\(key): released from hold by the operator, due now"; id = MessageID.released
        case .replayed:
            message = "\(key): replay requested by the operator: the delivered snapshot is queued again, due now"
            id = MessageID.replayed
        default: message = "\(key): retry requested by the operator, due now"; id = MessageID.retryRequested
        }
        write(.notice, message, id, outcome, key: key, kind: nil, version: nil, extra: [])
    }

    func requeued(file: String) {
        write(.notice, "rejected/\(LogText.escaped(file)) requeued by the operator into new/", MessageID.retryRequested,
              .requeued, key: nil, kind: nil, version: nil, extra: [("TXRECON_FILE", file)])
    }

    private func write(_ priority: LogPriority, _ message: String, _ id: String, _ outcome: ItemOutcome,
                       key: ItemKey?, kind: ItemKind?, version: ItemVersion?, extra: [(String, String)]) {
        var fields = ItemEvents.fields(outcome, key: key, kind: kind, version: version, room: extra.count)
        for (name, value) in extra { fields.append((name, value)) }
        sink.write(LogEntry(priority, message, messageID: id, fields: consume fields))
    }

    /// The fields every item event has, with room for `room` more and the
    /// one DestinationLogSink adds: the entry then goes down the sinks
    /// without being copied or regrown.
    private static func fields(_ outcome: ItemOutcome, key: ItemKey?, kind: ItemKind?, version: ItemVersion?,
                               room: Int) -> [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(5 + room)
        if let key { fields.append(("TXRECON_ID", key.rawValue)) }
        if let kind { fields.append(("TXRECON_KIND", kind.rawValue)) }
        fields.append(("TXRECON_OUTCOME", outcome.rawValue))
        if let version { fields.append(("TXRECON_VERSION", version.description)) }
        return fields
    }
}

extension Rejection {
    /// How loud intake's entry for this rejection is: an error for genuine
    /// App Store data txrecon cannot place (a person must look), a warning
    /// for the rest, which the producer or the settings can put right.
    var logPriority: LogPriority {
        code == RejectionCode.noAppNamed.rawValue ? .error : .warning
    }
}
