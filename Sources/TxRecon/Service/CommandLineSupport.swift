// CommandLineSupport: small pieces the txrecon executable needs from the
// library (process environment, file input, version, time formatting),
// public so the executable stays argument handling only.
import Glibc

package enum TxReconVersion {
    /// The release; sent as `User-Agent: txrecon/<version>`.
    package static let current = "0.1.0"
}

package enum ProcessEnvironment {
    /// The process environment as a dictionary.
    package static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}

package enum FileInput {
    /// A whole file, or standard input for "-", of at most `limit` bytes.
    package static func read(_ path: String, limit: Int) throws(SpoolError) -> [UInt8] {
        if path == "-" { return try SystemCall.readAll(0, path: "standard input", limit: limit) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SpoolError("open", path) }
        defer { close(fd) }
        return try SystemCall.readAll(fd, path: path, limit: limit)
    }
}

package enum WallTime {
    package static var nowMilliseconds: Int64 { Timestamp.nowMilliseconds() }
    package static func rfc3339(_ milliseconds: Int64) -> String { Timestamp.rfc3339(milliseconds: milliseconds) }
}
