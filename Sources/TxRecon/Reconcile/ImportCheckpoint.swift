// ImportCheckpoint: where `txrecon import` is in its input, as the JSON in
// `<spool>/reconcile/import-checkpoint`:
//
//   {"format":1, "input":"<SHA-256 of the app, environment and ids, hex>", "index":12, "revision":"…"|null,
//    "refused":1, "failed":0}
//
// `index` is the customer being imported, 0 for the input's first id (every one before is
// done), `revision` where that customer's history goes on (Get Transaction
// History's paging), saved only once everything of the pages before is
// durable in new/; `refused` and `failed` count the customers left behind
// so far, so that a run that goes on after a kill still ends with exit 1
// and says how many. A checkpoint of another input is not used: the import
// starts from its first line. The input is the ids with the app's bundle id
// and the environment asked ([Sweep]): a run stopped in Sandbox must not
// have the same file's run in Production skip the customers it did there.
// Pure; ReconcileStateDirectory keeps the file.

package struct ImportCheckpoint: Sendable, Equatable {
    static let format: Int64 = 1

    var input: String
    var index: Int
    var revision: String?
    /// Customers whose answer did not verify, or whose request Apple
    /// refused, before `index`.
    var refused = 0
    var failed = 0

    /// What `input` holds for `ids` imported with `sweep`'s app and environment.
    static func digest(of ids: [String], sweep: SweepSettings) -> String {
        let scope = [sweep.bundleID ?? "", sweep.environment.rawValue]
        return SHA256Digest.hex(Array((scope + ids).joined(separator: "\n").utf8))
    }

    init(input: String, index: Int = 0, revision: String? = nil, refused: Int = 0, failed: Int = 0) {
        self.input = input
        self.index = index
        self.revision = revision
        self.refused = refused
        self.failed = failed
    }

    var serialized: [UInt8] {
        JSONValue.object([
            ("format", .integer(Self.format)), ("input", .string(input)), ("index", .integer(Int64(index))),
            ("revision", revision.map { .string($0) } ?? .null),
            ("refused", .integer(Int64(refused))), ("failed", .integer(Int64(failed))),
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
        self.init(input: input, index: Int(index), revision: value["revision"]?.stringValue,
                  refused: Int(value["refused"]?.int64Value ?? 0), failed: Int(value["failed"]?.int64Value ?? 0))
    }
}
