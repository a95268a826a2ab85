// PayloadReader: typed reads of the members of one decoded JSON object, for
// intake.
//
// Every mismatch becomes a `Rejection` whose sentence names the member and
// the object it was read from (`missing-field`, `invalid-field`), so the
// format decoders state only what they expect. Nothing is logged.

/// Reads members of one JSON object; `subject` names the object in messages.
struct PayloadReader {
    /// The object read from; a non-object reads as having no members.
    let object: JSONValue
    /// Names the object as the subject of a sentence, e.g.
    /// `the transaction in signedTransactionInfo (format 3)`.
    let subject: String

    /// The member `name`, which must be present.
    func require(_ name: String) throws(Rejection) -> JSONValue {
        guard let value = object[name] else { throw missing(name) }
        return value
    }

    /// The string member `name`, or nil when absent.
    func string(_ name: String) throws(Rejection) -> String? {
        guard let value = object[name] else { return nil }
        guard case let .string(text) = value else { throw invalid(name, value, expected: "a string") }
        return text
    }

    /// The string member `name`, which must be present.
    func requireString(_ name: String) throws(Rejection) -> String {
        let value = try require(name)
        guard case let .string(text) = value else { throw invalid(name, value, expected: "a string") }
        return text
    }

    /// The object member `name`, or nil when absent.
    func nestedObject(_ name: String) throws(Rejection) -> JSONValue? {
        guard let value = object[name] else { return nil }
        guard case .object = value else { throw invalid(name, value, expected: "a JSON object") }
        return value
    }

    /// The date member `name` in milliseconds since 1970, or nil when absent.
    /// Apple writes integers; StoreKit testing in Xcode writes fractional
    /// milliseconds, whose fraction is dropped. Negative values, exponents and
    /// values beyond Int64 are refused.
    func milliseconds(_ name: String) throws(Rejection) -> Int64? {
        guard let value = object[name] else { return nil }
        guard case let .number(text) = value, let milliseconds = PayloadReader.milliseconds(text) else {
            throw invalid(name, value, expected: "a non-negative integer number of milliseconds since 1970")
        }
        return milliseconds
    }

    /// The member `name` as text when it is a string or a number, else nil:
    /// for members txrecon reads only to pass on (the ledger's identity,
    /// the body's flat fields), which must never refuse genuine data for
    /// a type Apple changed.
    func informationalText(_ name: String) -> String? {
        switch object[name] {
        case let .string(text)?, let .number(text)?: text
        default: nil
        }
    }

    /// The date member `name` in milliseconds since 1970 when it is one,
    /// else nil (see `informationalText`).
    func informationalMilliseconds(_ name: String) -> Int64? {
        guard case let .number(text)? = object[name] else { return nil }
        return PayloadReader.milliseconds(text)
    }

    /// The date member `name` in milliseconds since 1970, which must be present.
    func requireMilliseconds(_ name: String) throws(Rejection) -> Int64 {
        guard let milliseconds = try milliseconds(name) else { throw missing(name) }
        return milliseconds
    }

    /// The member `name` as an item key (1…128 bytes of UTF-8).
    func requireKey(_ name: String) throws(Rejection) -> ItemKey {
        let text = try requireString(name)
        guard let key = ItemKey(text) else {
            throw Rejection(.invalidField, "\(name) of \(subject) is \(text.utf8.count) bytes long; "
                + "an item key has 1 to \(ItemKey.maximumLength) bytes")
        }
        return key
    }

    /// A `missing-field` rejection for member `name`.
    func missing(_ name: String) -> Rejection {
        Rejection(.missingField, "\(subject) has no \(name)")
    }

    /// An `invalid-field` rejection for member `name` holding `value`.
    func invalid(_ name: String, _ value: JSONValue, expected: String) -> Rejection {
        Rejection(.invalidField, "\(name) of \(subject) is \(value.shortDescription), expected \(expected)")
    }

    /// Parses `digits[.digits]` into whole milliseconds; nil for anything else.
    private static func milliseconds(_ text: String) -> Int64? {
        var value: Int64 = 0
        var digits = 0
        var inFraction = false
        for byte in text.utf8 {
            if byte == UInt8(ascii: "."), !inFraction, digits > 0 {
                inFraction = true
                continue
            }
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            if inFraction { continue }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            digits += 1
        }
        return digits > 0 ? value : nil
    }
}
