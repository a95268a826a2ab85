// ConsumptionAnswer: what a backend's 2xx answer to a CONSUMPTION_REQUEST
// says for Apple: `{"consumptionInformation": {…}}` (the fields of Send
// Consumption Information v2), nothing, or something txrecon cannot take.
// Apple judges the fields themselves; txrecon checks only what it must to
// send them (an object) and, at sending, customerConsented (AnswerRun).
// Pure.

package enum ConsumptionAnswer {
    /// The longest answer body taken: 64 KiB. The fields Apple takes fit in
    /// a few hundred bytes.
    package static let bodyLimit = 64 * 1024

    package enum Reading: Equatable, Sendable {
        /// The backend's `consumptionInformation` object.
        case information(JSONValue)
        /// No answer for Apple in it (an empty body, or JSON without the member).
        case none
        /// A body that cannot be taken, and why (logged, then ignored).
        case ignored(String)
    }

    /// Reads `body`, of which at most `bodyLimit` + 1 bytes were kept.
    package static func read(_ body: [UInt8]) -> Reading {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) { return .none }
        guard body.count <= bodyLimit else {
            return .ignored("the answer's body is larger than \(bodyLimit / 1024) KiB")
        }
        guard let value = try? JSONValue.parse(body) else { return .ignored("the answer's body is not JSON") }
        guard let information = value["consumptionInformation"] else { return .none }
        guard information.objectValue != nil else {
            return .ignored("consumptionInformation in the answer is not an object")
        }
        return .information(information)
    }
}
