// ImportCheckpoint: where `txrecon import` is in its input, as the JSON in
// `<spool>/reconcile/import-checkpoint`:
//
//   {"format":1, "input":"<SHA-256 of the input, hex>", "line":12, "revision":"…"|null}
//
// `line` is the index of the customer being imported (every one before is
// done), `revision` where that customer's history goes on (Get Transaction
// History's paging), saved only once everything of the pages before is
// durable in new/. A checkpoint of another input is not used: the import
// starts from its first line. Pure; ReconcileStateDirectory keeps the file.

struct ImportCheckpoint: Sendable, Equatable {
    static let format: Int64 = 1

    var input: String
    var line: Int
    var revision: String?

    init(input: String, line: Int = 0, revision: String? = nil) {
        self.input = input
        self.line = line
        self.revision = revision
    }

    var serialized: [UInt8] {
        JSONValue.object([
            ("format", .integer(Self.format)), ("input", .string(input)), ("line", .integer(Int64(line))),
            ("revision", revision.map { .string($0) } ?? .null),
        ]).serialized
    }

    /// The checkpoint a file holds; nil when it is not one this code wrote.
    init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes), value["format"]?.int64Value == Self.format,
              let input = value["input"]?.stringValue, let line = value["line"]?.int64Value, line >= 0
        else { return nil }
        self.init(input: input, line: Int(line), revision: value["revision"]?.stringValue)
    }
}
