// DirectoryReader: one open directory read a part at a time, so that a scan
// of a directory holding a million names costs the memory of one part
// rather than of every name at once (a backlog in new/, three days of
// deliveries in done/). Names removed or added while it reads follow
// readdir(3): a name already returned is not returned again; one removed or
// added meanwhile may or may not be (glibc reads 32 KiB of entries or more
// ahead), so a caller must expect a name whose file is gone; every other
// name is returned once. Touches nothing; throws SpoolError for opendir or
// readdir.
import Glibc

/// Not Sendable on purpose: a directory stream belongs to the thread that
/// reads it.
final class DirectoryReader {
    let path: String
    private let stream: OpaquePointer

    init(_ path: String) throws(SpoolError) {
        guard let stream = opendir(path) else { throw SpoolError("opendir", path) }
        self.path = path
        self.stream = stream
    }

    deinit {
        closedir(stream)
    }

    /// Calls `body` with each further name (`.` and `..` included), read in
    /// place: the bytes are valid only during the call. glibc sizes each
    /// entry to its name (`d_reclen`), so copying the entry's full 256-byte
    /// `d_name` would read past the end of the last entry in its buffer;
    /// AddressSanitizer caught exactly that. Stops at the end of the
    /// directory or after the first name for which `body` returns false.
    func read(_ body: (UnsafeRawBufferPointer) -> Bool) throws(SpoolError) {
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SpoolError("readdir", path) }
                return
            }
            let start = (UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!)
                .assumingMemoryBound(to: CChar.self)
            guard body(UnsafeRawBufferPointer(start: start, count: strlen(start))) else { return }
        }
    }

    /// The next names, at most `limit` of them (`limit` > 0), without `.`
    /// and `..`, in directory order; both lists empty at the end. A name
    /// that is not UTF-8 cannot be addressed through a Swift string: it is
    /// returned apart, as bytes.
    func names(upTo limit: Int) throws(SpoolError) -> (names: [String], unaddressable: [[UInt8]]) {
        precondition(limit > 0, "DirectoryReader.names(upTo:) needs a positive limit, got \(limit)")
        var names: [String] = []
        var unaddressable: [[UInt8]] = []
        try read { bytes in
            if let name = String(validating: bytes, as: UTF8.self) {
                if name != "." && name != ".." { names.append(name) }
            } else {
                unaddressable.append(Array(bytes))
            }
            return names.count + unaddressable.count < limit
        }
        return (names, unaddressable)
    }
}
