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

    mutating func add(_ name: String, _ value: String) {
        begin(name)
        JSONValue.writeString(value, to: &bytes)
    }

    mutating func add(_ name: String, _ value: Int64) {
        begin(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// `value` (ms since 1970) as an RFC 3339 string, written in place.
    mutating func add(_ name: String, timestamp value: Int64) {
        begin(name)
        bytes.append(UInt8(ascii: "\""))
        RFC3339Timestamp.append(millisecondsSince1970: value, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// `text`, a JSON value's exact text (valid JSON: the caller's to
    /// ensure), copied as it is.
    mutating func add(_ name: String, json text: [UInt8]) {
        begin(name)
        bytes.append(contentsOf: text)
    }

    mutating func add(_ name: String, _ value: JSONValue) {
        begin(name)
        value.write(to: &bytes)
    }

    /// The object, closed.
    consuming func finish() -> [UInt8] {
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    private mutating func begin(_ name: String) {
        JSONValue.writeMemberName(name, first: isEmpty, to: &bytes)
        isEmpty = false
    }
}
