// JSONValue: a JSON document as txrecon reads and writes it.
//
// Inputs come from producers we do not control, so parsing is strict
// (RFC 8259 only, valid UTF-8, no duplicate object keys, bounded depth) and
// lossless where it matters: numbers keep their exact text, and objects keep
// their member order, so an envelope's `payload` reaches the backend as given.
// Parse errors are thrown as `JSONError` with the byte offset; nothing is logged.

import Glibc

/// A parsed JSON value. Numbers keep their literal text (never rounded through
/// a Double); objects keep member order.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number exactly as written in the input, e.g. `"2000000123456789"`.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// A JSON number from an integer.
    package static func integer(_ value: some BinaryInteger) -> JSONValue { .number(String(value)) }

    /// The member named `key` of an object; nil for a missing key or a non-object.
    package subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        // Through the buffer: a member read in place, not copied out (a
        // string and a value retained and released) for each one.
        // Names compare as String's == does (canonical equivalence: the
        // Kelvin sign is "K"), so not by their lengths or bytes first.
        return members.withUnsafeBufferPointer { members in
            for index in members.indices where members[index].0 == key {
                return members[index].1
            }
            return nil
        }
    }

    package var stringValue: String? {
        if case let .string(s) = self { return s }
        return nil
    }

    /// The value as a 64-bit integer if it is a number written without
    /// fraction or exponent that fits; nil otherwise.
    package var int64Value: Int64? {
        if case let .number(text) = self { return Int64(text) }
        return nil
    }

    package var boolValue: Bool? {
        if case let .bool(b) = self { return b }
        return nil
    }

    package var arrayValue: [JSONValue]? {
        if case let .array(a) = self { return a }
        return nil
    }

    package var objectValue: [(String, JSONValue)]? {
        if case let .object(o) = self { return o }
        return nil
    }
}

/// Why a byte sequence is not acceptable JSON.
package struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the input where the problem was found.
    package var offset: Int
    package var message: String
    package var description: String { "\(message) at byte \(offset)" }
}

extension JSONValue {
    /// Objects and arrays nested deeper than this are refused: hostile input
    /// must not exhaust the stack.
    package static let maximumDepth = 64

    /// Parses exactly one JSON value; surrounding JSON whitespace is allowed.
    package static func parse(_ bytes: some Collection<UInt8>) throws(JSONError) -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { (buffer) throws(JSONError) -> JSONValue in
            var parser = JSONParser(buffer)
            return try parser.parseDocument()
        }
    }

    package static func parse(_ text: String) throws(JSONError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses `bytes` as `parse` does, but for the value of the top-level
    /// object's member `name`, which is checked by the same rules and not
    /// built: the member is left out of the value returned, and its range in
    /// `bytes` is returned beside it (nil when there is no such member, or
    /// the document is not an object). For a member that is usually sent on
    /// as it is, such as an envelope's payload; `JSONValue.parse` of the
    /// range gives its value when it is wanted after all.
    static func parse(_ bytes: [UInt8], settingAside name: String) throws(JSONError) -> (JSONValue, SetAside?) {
        try bytes.withUnsafeBufferPointer { (buffer) throws(JSONError) -> (JSONValue, SetAside?) in
            var parser = JSONParser(buffer)
            parser.setAside = name
            let value = try parser.parseDocument()
            return (value, parser.setAsideFound)
        }
    }

    /// Where a member set aside by `parse(_:settingAside:)` was.
    struct SetAside: Equatable {
        /// Its value's bytes in the document.
        var range: Range<Int>
        /// Its place among the object's members.
        var position: Int
    }
}

private struct JSONParser {
    /// Up to this many members, a new key is checked against the earlier ones
    /// one by one; beyond, against a set.
    static let linearKeyCheckLimit = 32

    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// A member of the top-level object whose value is checked but not
    /// built, and where that value is once parsed.
    var setAside: String?
    var setAsideFound: JSONValue.SetAside?
    /// Whether values are built; false while a set-aside value is checked,
    /// which goes through the same rules and yields `.null` in their place.
    var building = true
    /// The member names (their text between the quotes) of the objects
    /// being parsed, innermost last, for the duplicate check; and whether
    /// each is plain (ASCII without an escape, so that its bytes compare as
    /// its String does).
    var checkedNames: [(text: Range<Int>, plain: Bool)] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    func fail(_ message: String) -> JSONError { JSONError(offset: index, message: message) }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the JSON value") }
        return value
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONError) -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""):
            let text = try parseString(building: building)
            return building ? .string(text) : .null
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONError) {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count else { throw fail("unexpected end of input") }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            throw fail("invalid literal")
        }
        index += count
    }

    mutating func enter() throws(JSONError) {
        depth += 1
        guard depth <= JSONValue.maximumDepth else {
            throw fail("nested deeper than \(JSONValue.maximumDepth) levels")
        }
    }

    mutating func parseObject() throws(JSONError) -> JSONValue {
        try enter()
        index += 1
        var members: [(String, JSONValue)] = []
        var names = ObjectNames(first: checkedNames.count)
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return building ? .object(members) : .null
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                throw fail("expected a member name")
            }
            let keyOffset = index
            let (key, plain) = try parseStringNotingPlain(building: building)
            try noteName(at: keyOffset, plain: plain, in: &names)
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            if !building {
                _ = try parseValue()
            } else if depth == 1, key == setAside {
                // Checked, not built; still noted, so that a second member
                // of that name is found a duplicate.
                let start = index
                building = false
                _ = try parseValue()
                building = true
                setAsideFound = JSONValue.SetAside(range: start..<index, position: members.count)
                members.append((key, .null))
            } else {
                // Room for a usual object's members at once, not grown from one.
                if members.capacity == 0 { members.reserveCapacity(8) }
                members.append((key, try parseValue()))
            }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "}") { index += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        checkedNames.removeSubrange(names.first...)
        guard building else { return .null }
        if depth == 0, let setAsideFound { members.remove(at: setAsideFound.position) }
        return .object(members)
    }

    /// What the duplicate check knows of the names of one object.
    /// Duplicate keys are compared with each earlier key while there are
    /// few (no set to build and hash for the small objects of every JWS),
    /// through a set from then on, so a hostile object stays linear.
    struct ObjectNames {
        /// Where the object's names start in `checkedNames`.
        let first: Int
        var seen: Set<String>?
        /// The lengths (modulo 64) of the plain names so far, one bit each:
        /// plain names are equal only at equal lengths, so a plain name
        /// whose bit is clear equals none of them and is compared with none
        /// (an object's names mostly differ in length).
        var plainLengths: UInt64 = 0
        /// False once a name that is not plain was noted: a plain name may
        /// then equal it by another spelling, and every name is compared.
        var allPlain = true
    }

    /// The duplicate check of the member name just parsed (it starts at
    /// `offset`; `plain`: ASCII without an escape), built or only checked:
    /// names compare as their Strings do, by their bytes where both are
    /// plain (two strings of plain ASCII are equal exactly when their bytes
    /// are), else as Strings (canonical equivalence).
    mutating func noteName(at offset: Int, plain: Bool, in names: inout ObjectNames) throws(JSONError) {
        let text = offset + 1..<index - 1
        let lengthBit: UInt64 = 1 << UInt64(text.count & 63)
        if names.seen == nil, checkedNames.count - names.first == JSONParser.linearKeyCheckLimit {
            names.seen = Set(checkedNames[names.first...].map { name(at: $0.text) })
        }
        let duplicate: Bool
        if names.seen != nil {
            duplicate = !names.seen!.insert(name(at: text)).inserted
        } else if plain && names.allPlain && names.plainLengths & lengthBit == 0 {
            duplicate = false
        } else {
            let start = bytes.baseAddress! + text.lowerBound
            duplicate = checkedNames[names.first...].contains { earlier in
                guard plain && earlier.plain else { return name(at: earlier.text) == name(at: text) }
                return earlier.text.count == text.count
                    && memcmp(bytes.baseAddress! + earlier.text.lowerBound, start, text.count) == 0
            }
        }
        guard !duplicate else { throw JSONError(offset: offset, message: "duplicate key \"\(name(at: text))\"") }
        if plain { names.plainLengths |= lengthBit } else { names.allPlain = false }
        // Room for a payload's usual members at once, not grown by doubling.
        if checkedNames.capacity == 0 { checkedNames.reserveCapacity(32) }
        checkedNames.append((text, plain))
    }

    /// The member name whose text (checked already) is `text`, as a String.
    func name(at text: Range<Int>) -> String {
        var copy = self
        copy.index = text.lowerBound - 1
        return (try? copy.parseString(building: true)) ?? ""
    }

    mutating func parseArray() throws(JSONError) -> JSONValue {
        try enter()
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            let element = try parseValue()
            if building { elements.append(element) }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
            if bytes[index] == UInt8(ascii: "]") { index += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("number with a leading zero") }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid fraction") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid exponent") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        guard building else { return .null }
        return .number(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// Parses a string starting at its opening quote. Validates UTF-8 and
    /// escapes; the fast path copies runs without escapes in one step.
    /// Without `building`, the same checks and an empty String.
    mutating func parseString(building: Bool) throws(JSONError) -> String {
        try parseStringNotingPlain(building: building).text
    }

    /// The string at `index` (its text; "" when not `building`), and whether
    /// it is plain: ASCII without an escape, its text its bytes.
    mutating func parseStringNotingPlain(building: Bool) throws(JSONError) -> (text: String, plain: Bool) {
        index += 1
        var utf8: [UInt8] = []
        var runStart = index
        var plain = true
        while true {
            index = JSONStringScan.endOfPlainRun(in: bytes, from: index)
            guard index < bytes.count else { throw fail("unterminated string") }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                // Most strings have no escape (an escape always adds to
                // `utf8`): make the String straight from the input.
                guard building else { return ("", plain) }
                if utf8.isEmpty {
                    return (String(decoding: UnsafeBufferPointer(rebasing: bytes[runStart..<index]), as: UTF8.self), plain)
                }
                utf8.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                break
            }
            if byte < 0x20 { throw fail("control character in string") }
            plain = false
            if byte == UInt8(ascii: "\\") {
                utf8.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                try parseEscape(into: &utf8)
                runStart = index
                continue
            }
            index += try validateMultibyte(at: index)
        }
        return (String(decoding: utf8, as: UTF8.self), false)
    }

    /// Length of the valid UTF-8 sequence at `position` (RFC 3629: no
    /// overlong forms, no surrogates, nothing above U+10FFFF).
    func validateMultibyte(at position: Int) throws(JSONError) -> Int {
        let lead = bytes[position]
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: throw JSONError(offset: position, message: "invalid UTF-8")
        }
        guard bytes.count - position >= length else { throw JSONError(offset: position, message: "invalid UTF-8") }
        let second = bytes[position + 1]
        guard second >= lower, second <= upper else { throw JSONError(offset: position, message: "invalid UTF-8") }
        for offset in 2..<max(2, length) where bytes[position + offset] & 0xC0 != 0x80 {
            throw JSONError(offset: position, message: "invalid UTF-8")
        }
        return length
    }

    mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONError) {
        index += 1
        guard index < bytes.count else { throw fail("unterminated escape") }
        let escaped = bytes[index]
        index += 1
        switch escaped {
        case UInt8(ascii: "\""): utf8.append(0x22)
        case UInt8(ascii: "\\"): utf8.append(0x5C)
        case UInt8(ascii: "/"): utf8.append(0x2F)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try parseHex4()
            if (0xD800...0xDBFF).contains(scalar) {
                guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw fail("unpaired surrogate") }
                index += 2
                let low = try parseHex4()
                guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw fail("unpaired surrogate")
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
            utf8.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw fail("invalid escape")
        }
    }

    mutating func parseHex4() throws(JSONError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail("truncated \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}

// MARK: - Writing

extension JSONValue {
    /// Compact UTF-8 JSON text of this value.
    package var serialized: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return output
    }

    package var serializedString: String { String(decoding: serialized, as: UTF8.self) }

    package func write(to output: inout [UInt8]) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case let .bool(value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case let .number(text): output.append(contentsOf: text.utf8)
        case let .string(text): JSONValue.writeString(text, to: &output)
        case let .array(elements):
            output.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case let .object(members):
            output.append(UInt8(ascii: "{"))
            for (position, member) in members.enumerated() {
                JSONValue.writeMemberName(member.0, first: position == 0, to: &output)
                member.1.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// `,"name":` before an object's member, without the comma before the first.
    static func writeMemberName(_ name: String, first: Bool, to output: inout [UInt8]) {
        if !first { output.append(UInt8(ascii: ",")) }
        writeString(name, to: &output)
        output.append(UInt8(ascii: ":"))
    }

    static func writeString(_ text: String, to output: inout [UInt8]) {
        // Scanning the contiguous UTF-8 (a word at a time, JSONStringScan)
        // and copying unescaped runs at once is an order of magnitude faster
        // than iterating `text.utf8` byte by byte, which matters for
        // kilobyte-long signed strings on the delivery hot path.
        var text = text
        text.withUTF8 { bytes in
            output.append(UInt8(ascii: "\""))
            var runStart = 0
            var index = 0
            while true {
                index = JSONStringScan.endOfPlainRun(in: bytes, from: index)
                guard index < bytes.count else { break }
                let byte = bytes[index]
                index += 1
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index - 1]))
                runStart = index
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
                case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
                case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
                case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
                case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
                default:
                    // Control characters: \u00XX, lowercase hex; the high digit is 0 or 1.
                    let low = byte & 0xF
                    output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, 0x30 + (byte >> 4),
                                               low < 10 ? 0x30 + low : UInt8(ascii: "a") + (low - 10)])
                }
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            output.append(UInt8(ascii: "\""))
        }
    }
}
