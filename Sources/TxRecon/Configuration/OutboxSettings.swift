// OutboxSettings: the [Outbox] section of txrecon.conf: which answers to
// Apple the daemon writes into the outbox (a backend's consumption
// information, Finish Transaction for purchases), whose 2xx answer carries
// them, and when a consumption request still unconfirmed is warned about.
// `txrecon answer` sends the outbox with [Sweep]'s API settings. Nothing
// here reads a file.

/// `[Outbox]`
package struct OutboxSettings: Sendable, Equatable {
    /// `FinishTransactions=`: write a Finish Transaction entry for each
    /// purchase once every destination that matches it confirmed it
    /// (`PurchaseToFinish`). Default no.
    package var finishTransactions = false
    /// `AnswersFrom=`: the destination whose 2xx answer to a
    /// CONSUMPTION_REQUEST may carry `consumptionInformation`; default the
    /// main `[Backend]`. Checked against the destinations once they are
    /// loaded (an HTTP one).
    package var answersFrom = Destination.primaryName
    /// `ConsumptionDeadlineWarning=`: a CONSUMPTION_REQUEST not confirmed
    /// by `answersFrom` this long after Apple signed it is warned
    /// about (Apple weighs an answer only within 12 hours). Default 4 hours:
    /// the 8 hours left are a working day for a person to bring the backend
    /// back; 10 minutes to 11 hours.
    package var consumptionDeadlineWarning: Duration = .seconds(4 * 3600)

    package init() {}
}

extension SettingValue {
    /// `AnswersFrom=`: `backend` or a destination file's name.
    static func answeringDestination(_ text: String) throws(InvalidValue) -> String {
        guard text == Destination.primaryName || DestinationName.isValid(text) else {
            throw InvalidValue(message: "\"\(text)\" is not a destination: name \(Destination.primaryName) (the main "
                + "[Backend]) or a file of destinations/ without its .conf")
        }
        return text
    }

    /// `ConsumptionDeadlineWarning=`: 10 minutes to 11 hours.
    static func consumptionDeadlineWarning(_ text: String) throws(InvalidValue) -> Duration {
        let span = try timeSpan(text)
        guard span >= .seconds(600), span <= .seconds(11 * 3600) else {
            throw InvalidValue(message: "\"\(text)\" is not between 10min and 11h (Apple weighs an answer only "
                + "within 12 hours of the request)")
        }
        return span
    }
}
