// DropInDirectory: finds the drop-ins of a configuration file, the
// `<file>.d/*.conf` files applied after it, as systemd orders them.
//
// A missing directory means no drop-ins. Hidden files and names not ending
// in `.conf` are skipped, so editor backups and `.dpkg-old` files stay
// inert. Throws a `ConfigurationError` naming the directory when it exists
// but cannot be listed. Blocks on disk I/O, like the loader that calls it.
import Glibc

/// The drop-in directory of one configuration file.
enum DropInDirectory {
    /// Full paths of the drop-ins of `configurationFile`, sorted by file
    /// name byte by byte (so `10-a.conf` comes before `20-b.conf`).
    static func files(of configurationFile: String) throws(ConfigurationError) -> [String] {
        try files(in: configurationFile + ".d")
    }

    /// Full paths of the `*.conf` files in `directory`, in the same order:
    /// drop-ins, or the destination files of `destinations/`.
    static func files(in directory: String) throws(ConfigurationError) -> [String] {
        var names: [String] = []
        do {
            try SystemCall.forEachName(in: directory) { bytes in
                let name = String(decoding: bytes, as: UTF8.self)
                if name.hasSuffix(".conf"), !name.hasPrefix(".") { names.append(name) }
            }
        } catch where error.code == ENOENT || error.code == ENOTDIR {
            return []
        } catch {
            throw ConfigurationError(
                file: directory, line: nil, key: nil,
                message: "cannot be listed: \(String(cString: strerror(error.code))); "
                    + "make it readable by the txrecon user or remove it")
        }
        return names
            .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            .map { "\(directory)/\($0)" }
    }
}
