// StringBytes: a String's UTF-8 bytes where they are, for the hot paths that
// compare, hash, scan or copy them (item keys, log lines, secret search).
//
// A native String hands out its contiguous storage (a small one, through a
// stack copy); only a bridged or otherwise foreign String, which txrecon
// does not make, goes through a copy.
// Reports: nothing.

extension String {
    /// Calls `body` with the string's UTF-8 bytes.
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(utf8).withUnsafeBufferPointer(body)
    }
}
