// KnownJOSEHeaders: JOSE headers parsed before, by their exact base64url
// text, so that a JWS whose header is spelled byte for byte like one of them
// skips decoding and parsing it again.
//
// Apple signs every JWS of one leaf under the same header (alg and the three
// x5c certificates, about 3.5 KiB of base64url): most of a transaction's
// text. A parse is a function of the bytes alone, so reusing it gives the
// verdict a fresh parse would. Which headers are known is the owner's
// choice: the verifier lists those whose chains it validated, so that a
// producer cannot fill the list with headers of its own. Pure; touches no files.
import Glibc

/// A short list of encoded headers and their parses. Apple signs with a
/// handful of leaves at a time, so a linear search that compares lengths
/// first and then bytes (memcmp stops at the leaf certificate's first
/// differing byte) costs less than hashing 3.5 KiB.
struct KnownJOSEHeaders: Sendable {
    private var encoded: [[UInt8]] = []
    private var parsed: [JSONValue] = []

    /// The position of the header spelled exactly `bytes`, if known.
    func index(of bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return nil }
        for (position, known) in encoded.enumerated() where known.count == bytes.count {
            // As long as `bytes`, so not empty: its storage has an address.
            if known.withUnsafeBufferPointer({ memcmp($0.baseAddress!, base, bytes.count) == 0 }) { return position }
        }
        return nil
    }

    /// The parse of the header spelled exactly `bytes`, if known.
    func header(spelled bytes: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        index(of: bytes).map { parsed[$0] }
    }

    /// Records that `bytes` parse to `header`, at the next position.
    mutating func append(_ bytes: [UInt8], parsedAs header: JSONValue) {
        encoded.append(bytes)
        parsed.append(header)
    }

    mutating func removeAll() {
        encoded.removeAll(keepingCapacity: true)
        parsed.removeAll(keepingCapacity: true)
    }
}
