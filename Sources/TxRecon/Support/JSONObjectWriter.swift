// JSONObjectWriter: writes one JSON object member by member straight into
// bytes, the same bytes `JSONValue.object(members).write` gives, without a
// tree of members to build and free first: request bodies are built once per
// attempt on the delivery path.
// Reports: nothing.

struct JSONObjectWriter {
    private var bytes: [UInt8] = []
    private var isEmpty = true

    init(reservingCapacity capacity: Int) {
        bytes.reserveCapacity(capacity)
        bytes.append(UInt8(ascii: "{"))
    }

    // Member names are spelled out in the code (StaticString): plain ASCII
    // that needs no escape, copied as they are rather than scanned per
    // request. Names that come with the item go through `add(named:_:)`.

    mutating func add(_ name: StaticString, _ value: String) {
        begin(name)
        JSONValue.writeString(value, to: &bytes)
    }

    /// A member whose name is data (a signed string's), escaped as needed.
    mutating func add(named name: String, _ value: String) {
        JSONValue.writeMemberName(name, first: isEmpty, to: &bytes)
        isEmpty = false
        JSONValue.writeString(value, to: &bytes)
    }

    mutating func add(_ name: StaticString, _ value: Int64) {
        begin(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// `value` (ms since 1970) as an RFC 3339 string, written in place.
    mutating func add(_ name: StaticString, timestamp value: Int64) {
        begin(name)
        bytes.append(UInt8(ascii: "\""))
        RFC3339Timestamp.append(millisecondsSince1970: value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// `text`, a JSON value's exact text (valid JSON: the caller's to
    /// ensure), copied as it is.
    mutating func add(_ name: StaticString, json text: [UInt8]) {
        begin(name)
        bytes.append(contentsOf: text)
    }

    /// A member whose name is data, with `text` as in `add(_:json:)`.
    mutating func add(named name: String, json text: [UInt8]) {
        JSONValue.writeMemberName(name, first: isEmpty, to: &bytes)
        isEmpty = false
        bytes.append(contentsOf: text)
    }

    mutating func add(_ name: StaticString, _ value: JSONValue) {
        begin(name)
        value.write(to: &bytes)
    }

    /// The object, closed.
    consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private mutating func begin(_ name: StaticString) {
        if !isEmpty { bytes.append(UInt8(ascii: ",")) }
        isEmpty = false
        bytes.append(UInt8(ascii: "\""))
        name.withUTF8Buffer { name in
            assert(JSONStringScan.endOfPlainRun(in: name, from: 0) == name.count, "\(name) needs escaping")
            bytes.append(contentsOf: name)
        }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }
}
