// CurlHeaderList: a request's header lines as curl takes them
// (CURLOPT_HTTPHEADER), built in storage of its own that every request on
// the same handle reuses.
//
// curl_slist_append allocates a node and a copy of the line for each header,
// and the list is freed after every request: with the lines built first as
// Swift strings, a delivery's five headers cost about twenty allocations. A
// curl_slist is a plain linked list that curl only reads while it builds the
// request, so the nodes and the text can as well live here. Touches no
// files; reports a refused header by its name.
import CCurl

/// Header lines in reusable storage. Not Sendable on purpose: one belongs to
/// one curl handle and is used on that handle's thread only.
final class CurlHeaderList {
    private var text: UnsafeMutablePointer<CChar>
    private var textCapacity: Int
    private var nodes: UnsafeMutablePointer<curl_slist>
    private var nodeCapacity: Int

    init() {
        textCapacity = 1024
        text = .allocate(capacity: textCapacity)
        nodeCapacity = 8
        nodes = .allocate(capacity: nodeCapacity)
    }

    deinit {
        text.deallocate()
        nodes.deallocate()
    }

    /// A header whose name or value holds a CR, LF or NUL, which would split
    /// or end its line: nothing is to be sent.
    struct UnsafeHeader: Error {
        let name: String
    }

    /// Calls `body` with the list of `Name: value` for each header (`Name;`
    /// for an empty value, which curl sends empty where `Name:` would
    /// remove the header), then each of `lines` as it is; nil for no line.
    /// The list lives in this object's storage and is valid only during
    /// `body`.
    func withList<Result>(_ headers: [(name: String, value: String)], then lines: [StaticString] = [],
                          _ body: (UnsafeMutablePointer<curl_slist>?) -> Result) throws(UnsafeHeader) -> Result {
        let list = try build(headers, then: lines)
        return withExtendedLifetime(self) { body(list) }
    }

    /// The list `withList` hands its body, for a transfer that outlives a
    /// call (curl's multi interface): valid until the next `build` or
    /// `withList` on this object, and while the object lives.
    func build(_ headers: [(name: String, value: String)],
               then lines: [StaticString] = []) throws(UnsafeHeader) -> UnsafeMutablePointer<curl_slist>? {
        var length = 0
        for (name, value) in headers { length += name.utf8.count + value.utf8.count + 3 }
        for line in lines { length += line.utf8CodeUnitCount + 1 }
        reserve(text: length, nodes: headers.count + lines.count)
        var offset = 0, count = 0
        for (name, value) in headers {
            let start = offset
            guard append(name, at: &offset) else { throw UnsafeHeader(name: name) }
            if value.isEmpty {
                text[offset] = CChar(UInt8(ascii: ";"))
                offset += 1
            } else {
                text[offset] = CChar(UInt8(ascii: ":"))
                text[offset + 1] = CChar(UInt8(ascii: " "))
                offset += 2
                guard append(value, at: &offset) else { throw UnsafeHeader(name: name) }
            }
            text[offset] = 0
            offset += 1
            link(count, to: start)
            count += 1
        }
        for line in lines {
            let start = offset
            line.withUTF8Buffer { bytes in
                for byte in bytes {
                    text[offset] = CChar(bitPattern: byte)
                    offset += 1
                }
            }
            text[offset] = 0
            offset += 1
            link(count, to: start)
            count += 1
        }
        return count == 0 ? nil : nodes
    }

    /// Makes node `index` point at the line starting at `offset`, the last
    /// node so far.
    private func link(_ index: Int, to offset: Int) {
        nodes[index] = curl_slist(data: text + offset, next: nil)
        if index > 0 { nodes[index - 1].next = nodes + index }
    }

    /// Copies `part`'s bytes to `offset`; false when one is CR, LF or NUL.
    /// Checked eight bytes at a time, then copied at once: a byte-by-byte
    /// copy of every request's headers (a token, a signature, the key) was
    /// about 1 % of a delivery's instructions.
    private func append(_ part: String, at offset: inout Int) -> Bool {
        part.withUTF8Bytes { bytes in
            guard let base = bytes.baseAddress else { return true }
            guard !CurlHeaderList.holdsLineBreakOrNUL(bytes) else { return false }
            UnsafeMutableRawPointer(text + offset).copyMemory(from: base, byteCount: bytes.count)
            offset += bytes.count
            return true
        }
    }

    /// Whether `bytes` hold a CR, an LF or a NUL (ByteWord).
    private static func holdsLineBreakOrNUL(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        ByteWord.firstIndex(in: bytes, word: { word in
            ByteWord.has(word, byte: 0x0A) || ByteWord.has(word, byte: 0x0D) || ByteWord.has(word, byte: 0)
        }, byte: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) < bytes.count
    }

    private func reserve(text needed: Int, nodes count: Int) {
        if needed > textCapacity {
            text.deallocate()
            textCapacity = max(needed, 2 * textCapacity)
            text = .allocate(capacity: textCapacity)
        }
        if count > nodeCapacity {
            nodes.deallocate()
            nodeCapacity = max(count, 2 * nodeCapacity)
            nodes = .allocate(capacity: nodeCapacity)
        }
    }
}
