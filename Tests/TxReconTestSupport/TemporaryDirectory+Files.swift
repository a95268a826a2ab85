// TemporaryDirectory+Files: writes test files (configuration files, secret
// files) with exact permissions, whatever the umask.
import Glibc

extension TemporaryDirectory {
    /// Writes `contents` to `name` under this directory, creating missing
    /// intermediate directories (mode 0755), and gives the file `mode`.
    /// Returns the full path. Stops the test run when the file system refuses.
    @discardableResult
    package func write(_ contents: String, to name: String, mode: mode_t = 0o600) -> String {
        write(Array(contents.utf8), to: name, mode: mode)
    }

    /// Bytes version of `write(_:to:mode:)`, for content that is not UTF-8.
    @discardableResult
    package func write(_ bytes: [UInt8], to name: String, mode: mode_t = 0o600) -> String {
        let path = makeParents(of: name)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        precondition(descriptor >= 0, "open \(path): errno \(errno)")
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        precondition(written == bytes.count, "write \(path): errno \(errno)")
        precondition(fchmod(descriptor, mode) == 0, "fchmod \(path): errno \(errno)")
        return path
    }

    /// Creates the directory `name` (and its parents) with `mode`; returns
    /// the full path.
    @discardableResult
    package func makeDirectory(_ name: String, mode: mode_t = 0o755) -> String {
        let path = makeParents(of: name)
        precondition(mkdir(path, mode) == 0 || errno == EEXIST, "mkdir \(path): errno \(errno)")
        precondition(chmod(path, mode) == 0, "chmod \(path): errno \(errno)")
        return path
    }

    /// The full path of `name`, with its parent directories created.
    private func makeParents(of name: String) -> String {
        var parent = path
        for component in name.split(separator: "/").dropLast() {
            parent += "/\(component)"
            precondition(mkdir(parent, 0o755) == 0 || errno == EEXIST, "mkdir \(parent): errno \(errno)")
        }
        return "\(path)/\(name)"
    }
}
