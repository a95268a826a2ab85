// TemporaryDirectory: a fresh directory per test, removed when dropped.
import Glibc
import FoundationEssentials

/// A directory under $TMPDIR (or /tmp) that exists for the life of the value.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init(_ label: String = "txrecon-test") {
        let base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        var template = Array("\(base)/\(label).XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
