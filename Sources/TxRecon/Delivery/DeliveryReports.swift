// DeliveryReports: what the engine writes down about its items, one owned
// value: the journal's entry per item event (ItemEvents), the ledger's
// record of each confirmation, and the warnings of CONSUMPTION_REQUESTs
// still unconfirmed near Apple's deadline (ConsumptionDeadlines, once per
// request). The engine decides what happened; this writes it.

struct DeliveryReports {
    let events: ItemEvents
    /// Where confirmations go once their item is in done/ (the ledger).
    let ledger: (any ConfirmationRecorder)?
    /// CONSUMPTION_REQUESTs warned about as near their deadline.
    private var deadlines = ConsumptionDeadlines()

    init(log: any LogSink, ledger: (any ConfirmationRecorder)?) {
        self.events = ItemEvents(sink: log)
        self.ledger = ledger
    }

    var log: any LogSink { events.sink }

    /// `key` was delivered to `destination` on `attempt`; `item`: what was
    /// sent (nil when nothing was read), `inbox`: its file in new/, if any.
    mutating func delivered(_ key: ItemKey, item: Item?, attempt: Int, confirmation: Confirmation,
                            destination: String, at wall: Int64, inbox: String?, app: String?) {
        if let item {
            ledger?.record(destination: destination, item: item, attempt: attempt, confirmation: confirmation,
                           at: wall)
            events.delivered(key, kind: item.kind, version: item.version, attempt: attempt,
                             confirmation: confirmation, file: inbox, app: app)
        }
        deadlines.delivered(key)
    }

    /// Warns, once per request, when `item`, a CONSUMPTION_REQUEST that
    /// `destination` answers for, failed again (`held` false) or was held
    /// and `after` has passed since Apple signed it; whether it warned.
    mutating func watchDeadline(_ item: Item, held: Bool, after: Duration?, destination: String,
                                now: Int64) -> Bool {
        guard let after,
              let warning = deadlines.warning(for: item, held: held, after: after, destination: destination,
                                              now: now) else { return false }
        log.write(warning)
        return true
    }
}
