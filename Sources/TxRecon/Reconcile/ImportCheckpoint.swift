// ImportCheckpoint: where `txrecon import` is in its input, as the JSON in
// `<spool>/reconcile/import-checkpoint`:
//
//   {"format":1, "input":"<SHA-256 of the input's ids, hex>", "index":12, "revision":"…"|null}
//
// `index` is the customer being imported, 0 for the input's first id (every one before is
// done), `revision` where that customer's history goes on (Get Transaction
// History's paging), saved only once everything of the pages before is
// durable in new/. A checkpoint of another input is not used: the import
// starts from its first line. Pure; ReconcileStateDirectory keeps the file.

package struct ImportCheckpoint: Sendable, Equatable {
    static let format: Int64 = 1

    var input: String
    var index: Int
    var revision: String?

    init(input: String, index: Int = 0, revision: String? = nil) {
        self.input = input
        self.index = index
        self.revision = revision
    }

    var serialized: [UInt8] {
        JSONValue.object([
            ("format", .integer(Self.format)), ("input", .string(input)), ("index", .integer(Int64(index))),
            ("revision", revision.map { .string($0) } ?? .null),
        ]).serialized
    }

    /// Which id (1 for the input's first) an unfinished `txrecon import`
    /// goes on with when run again, for `txrecon status`; nil when none is
    /// unfinished.
    package static func unfinished(_ layout: SpoolLayout) -> Int? {
        let path = ReconcileStateDirectory.path(of: layout) + "/import-checkpoint"
        guard let bytes = try? SystemCall.readFile(path, limit: 1 << 20),
              let checkpoint = ImportCheckpoint(json: bytes) else { return nil }
        return checkpoint.index + 1
    }

    /// The checkpoint a file holds; nil when it is not one this code wrote.
    init?(json bytes: [UInt8]) {
        guard let value = try? JSONValue.parse(bytes), value["format"]?.int64Value == Self.format,
              let input = value["input"]?.stringValue, let index = value["index"]?.int64Value, index >= 0
        else { return nil }
        self.init(input: input, index: Int(index), revision: value["revision"]?.stringValue)
    }
}
