// Attempt: one delivery attempt of one key, as a value, and the code that
// runs it where the transport runs its exchanges (the engine's event loop
// for HTTP, a JetStream transport's thread): read the item (or take intake's),
// send it, map the answer to an Outcome, and commit that outcome to the
// spool right there (a delivered or refused item out of queue/ or new/, a
// failed first attempt's file from new/ into queue/, a queued file that no
// longer decodes into hold/). A delivered item's
// answers to Apple are made durable in the outbox first (AnswerTaker), so
// that done/ never holds an item whose answer is not written. What the answer means
// for the item is decided here once (Outcome, from the response table);
// the engine learns it from the Exchange, and AttemptVerdict alone says
// what that means for the key. The
// key is in flight while this runs, so nothing else touches its file.
// Reports nothing; the engine logs what the exchange says.
import Glibc

struct Attempt: Sendable {
    let key: ItemKey
    /// 1 for the first.
    let number: Int
    /// When the producer wrote the item (ms since 1970), for the body.
    let receivedAt: Int64
    /// Intake's decoded item, when it was kept; else queue/KEY is read.
    let cached: Item?
    /// Whether queue/KEY.state exists (a hold moves it beside the item).
    let hasStateFile: Bool
    /// Whether done/ may hold an earlier snapshot of the key to replace.
    let followsDelivery: Bool
    /// The item's file in new/, for a first attempt taken from there.
    let inbox: String?
    /// Queued files larger than this are not read (MaxFileSize=).
    let maximumSize: Int
    /// The wall clock at launch (ms since 1970), for the request.
    let now: Int64
    /// When a replay queued it again (DeliveryState.replayedAt).
    var replayedAt: Int64? = nil

    /// What the attempt needs from the daemon. One object the attempts
    /// share: each attempt captures it on the engine's thread and lets it go
    /// where it is settled, and one reference counted there costs less than the
    /// half dozen inside it, each a shared counter.
    final class Context: Sendable {
        let spool: Spool
        let storedItems: StoredItemReader
        let prepare: DeliveryEngine.RequestPreparer
        let redactor: SecretRedactor
        let clock: any EngineClock
        /// The destination's name, for the outbox.
        let destination: String
        /// What writes answers owed to Apple; nil where nothing does (tests).
        let answers: AnswerTaker?

        init(spool: Spool, storedItems: StoredItemReader, prepare: @escaping DeliveryEngine.RequestPreparer,
             redactor: SecretRedactor, clock: any EngineClock, destination: String = Destination.primaryName,
             answers: AnswerTaker? = nil) {
            self.spool = spool
            self.storedItems = storedItems
            self.prepare = prepare
            self.redactor = redactor
            self.clock = clock
            self.destination = destination
            self.answers = answers
        }
    }

    /// What an attempt found when it read its item.
    enum Preparation: Sendable {
        case ready(Item, DeliveryRequest)
        case missing
        case undecodable(Rejection)
        case unreadable(SpoolError)
    }

    /// What an attempt's answer did to the spool: the outcome, and the error
    /// of committing it (moving the item to done/ or hold/, or a first
    /// attempt's file from new/ into queue/), if that failed.
    struct Settlement: Sendable {
        var outcome: Outcome
        var spoolError: SpoolError?
        /// When the request went out (engine clock), which orders answers
        /// around the end of an outage better than the launch: an attempt
        /// may wait for a free connection.
        var sentAt: Duration
        /// What the outbox got from a delivered item, for the log.
        var outboxNotes: [OutboxNote] = []
        /// The `spoolError` is the outbox's: the item was delivered, but
        /// what it owes Apple could not be written, so it stays (it is
        /// delivered again) whatever the error; never set aside.
        var outboxFailed = false
    }

    /// How an attempt ended that sent nothing.
    enum LocalEnd: Sendable, Equatable {
        /// queue/KEY is gone.
        case missing
        /// queue/KEY no longer decodes or verifies; the attempt moved it
        /// into hold/, or `holdError` says why that failed.
        case undecodable(reason: String, holdError: SpoolError?)
        case unreadable(SpoolError)
    }

    /// What one exchange came to.
    enum Exchange: Sendable {
        /// It never reached the backend: the item could not be read.
        case local(LocalEnd)
        case answered(Item, Settlement)
    }

    /// The attempt as the transport runs it: `prepare` reads the item and
    /// builds its request (or ends here and reports, having sent nothing),
    /// and the answer is settled where the transport hands it back;
    /// `report` gets the end either way, once.
    func exchange(in context: Context, report: @escaping @Sendable (Exchange) -> Void) -> TransportExchange {
        TransportExchange {
            switch begin(in: context) {
            case let .local(end):
                report(.local(end))
                return .ended
            case let .send(item, request, sentAt):
                return .send(request) { result in report(settle(item, result, sentAt: sentAt, in: context)) }
            }
        }
    }

    /// What the attempt sends, or how it ended without sending.
    private enum Beginning {
        case local(LocalEnd)
        case send(Item, DeliveryRequest, sentAt: Duration)
    }

    private func begin(in context: Context) -> Beginning {
        let item: Item
        var request: DeliveryRequest
        switch prepare(context) {
        case let .ready(prepared, preparedRequest): (item, request) = (prepared, preparedRequest)
        case .missing: return .local(.missing)
        case let .unreadable(error): return .local(.unreadable(error))
        case let .undecodable(rejection): return .local(holdUndecodable(rejection, in: context))
        }
        request.replayedAt = replayedAt
        request.keepsAnswer = context.answers?.readsAnswer(to: item, from: context.destination) ?? false
        return .send(item, request, sentAt: context.clock.now)
    }

    /// Maps the transport's `result` to an Outcome and commits it to the spool.
    private func settle(_ item: Item, _ result: TransportResult, sentAt: Duration, in context: Context) -> Exchange {
        let wall = context.clock.wallMilliseconds
        let outcome = Outcome(result, now: Double(wall) / 1000, redactor: context.redactor)
        var settlement = Settlement(outcome: outcome, sentAt: sentAt)
        do throws(SpoolError) {
            switch settlement.outcome {
            case .delivered:
                if let answers = context.answers {
                    do {
                        settlement.outboxNotes = try answers.take(item, confirmedBy: context.destination,
                                                                  body: Self.answerBody(result), at: wall)
                    } catch {
                        settlement.outboxFailed = true
                        throw error
                    }
                }
                try context.spool.finish(key, followsDelivery: followsDelivery, inbox: inbox)
                // The receipt it names is used as long as done/ keeps it
                // (ReceiptReaper counts its retention from this).
                if let receipt = item.fields.receiptSha256 {
                    context.storedItems.receipts.store.noteUse(receipt)
                }
            case let .hold(reason, _):
                try context.spool.hold(key, reason: reason, at: wall, attempts: number, hasState: hasStateFile,
                                       inbox: inbox)
            case .retryLater:
                if let inbox { try context.spool.accept(drop: inbox, as: key) }
            }
        } catch {
            settlement.spoolError = error
        }
        return .answered(item, settlement)
    }

    /// Moves a queued file that no longer decodes or verifies into hold/.
    /// A release reads the file and checks it again: only what made it
    /// fail, put right, lets it go.
    private func holdUndecodable(_ rejection: Rejection, in context: Context) -> LocalEnd {
        let file = inbox.map { "new/\(LogText.escaped($0)), waiting for its first attempt," } ?? "queued file"
        let reason = "\(file) no longer decodes or verifies: \(rejection)"
        do {
            try context.spool.hold(key, reason: reason, at: context.clock.wallMilliseconds, attempts: number - 1,
                                   inbox: inbox, releaseWhen: "once the file or the settings that refuse it are put right (the "
                                   + "file was changed after intake, or AcceptEnvelopes=, [Verification] or "
                                   + "MaxFileSize= changed since), or remove hold/\(key.fileName) if it is not an item")
            return .undecodable(reason: reason, holdError: nil)
        } catch {
            return .undecodable(reason: reason, holdError: error)
        }
    }

    /// A 2xx answer's body, when the transport kept it.
    private static func answerBody(_ result: TransportResult) -> [UInt8] {
        if case let .response(status, _, body) = result, (200...299).contains(status) { return body }
        return []
    }

    /// The request: from intake's item when it is at hand, else from its
    /// file (queue/KEY, or new/NAME while it waits there and a reload made
    /// intake's verification stale) read, decoded and verified again
    /// (StoredItemReader).
    private func prepare(_ context: Context) -> Preparation {
        if let cached { return .ready(cached, context.prepare(cached, number, receivedAt, now)) }
        do {
            let stored = try inbox.map { name throws(SpoolError) in
                try context.spool.readInbox(name, maximumSize: maximumSize)
            } ?? context.spool.read(.queue, key, maximumSize: maximumSize)
            guard let bytes = stored else { return .missing }
            let item = try context.storedItems.item(bytes, key: key)
            return .ready(item, context.prepare(item, number, receivedAt, now))
        } catch let error as SpoolError where error.code == EFBIG {
            // Larger than a MaxFileSize= lowered since intake: no retry
            // reads it, so it is held (as the hold's text says) rather than
            // tried every 5 minutes for ever at info level.
            return .undecodable(Spool.tooLarge(maximumSize))
        } catch let error as SpoolError {
            return .unreadable(error)
        } catch let ItemReadFailure.unreadable(error) {
            return .unreadable(error)
        } catch let ItemReadFailure.rejected(rejection) {
            return .undecodable(rejection)
        } catch {
            return .unreadable(SpoolError("read", key.fileName, EIO))
        }
    }
}
