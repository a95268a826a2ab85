// JSONValueDescription: how intake names a JSON value in a rejection
// sentence. Values are named by kind, numbers and booleans as written, so
// that no payload content (a token, a receipt) ever reaches a `.reason`
// file or the journal.

extension JSONValue {
    /// What kind of JSON value this is, with an article: `a string`, `an array`, `null`.
    var typeDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }

    /// The value for a message: numbers and booleans as written, everything
    /// else by its kind only, so that no payload content reaches a log.
    var shortDescription: String {
        switch self {
        case let .number(text) where text.utf8.count <= 24: return text
        case let .bool(value): return String(value)
        default: return typeDescription
        }
    }
}
