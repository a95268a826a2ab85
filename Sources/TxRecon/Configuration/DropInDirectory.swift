// DropInDirectory: finds the drop-ins of a configuration file, the
// `<file>.d/*.conf` files applied after it, as systemd orders them, and the
// destination files of `destinations/`.
//
// A missing directory means no drop-ins. Only names ending in `.conf` and
// not hidden are read, so an editor's backup (`review.conf~`), a file put
// aside (`.review.conf`) or a `.dpkg-old` never takes effect; each such name
// is returned as ignored, for ConfigurationWarnings to name it at
// check-config, start and reload: a file an operator believes is read must
// not be skipped silently. Throws a `ConfigurationError` naming the
// directory when it exists but cannot be listed. Blocks on disk I/O, like
// the loader that calls it.
import Glibc

/// The drop-in directory of one configuration file.
enum DropInDirectory {
    /// What a directory of configuration files holds.
    struct Listing: Equatable {
        /// Full paths of the `*.conf` files, sorted by file name byte by
        /// byte (so `10-a.conf` comes before `20-b.conf`).
        var files: [String] = []
        /// Full paths of every other entry (not `.` or `..`), in the same
        /// order: never read.
        var ignored: [String] = []
    }

    /// The drop-ins of `configurationFile`, in `<file>.d/`.
    static func listing(of configurationFile: String) throws(ConfigurationError) -> Listing {
        try listing(in: configurationFile + ".d")
    }

    /// The `*.conf` files in `directory` and what else is there: drop-ins,
    /// or the destination files of `destinations/`.
    static func listing(in directory: String) throws(ConfigurationError) -> Listing {
        var names: [String] = []
        do {
            try SystemCall.forEachName(in: directory) { bytes in
                names.append(String(decoding: bytes, as: UTF8.self))
            }
        } catch where error.code == ENOENT || error.code == ENOTDIR {
            return Listing()
        } catch {
            throw ConfigurationError(
                file: directory, line: nil, key: nil,
                message: "cannot be listed: \(String(cString: strerror(error.code))); "
                    + "make it readable by the txrecon user or remove it")
        }
        var listing = Listing()
        for name in names.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) where name != "." && name != ".." {
            if isRead(name) {
                listing.files.append("\(directory)/\(name)")
            } else {
                listing.ignored.append("\(directory)/\(name)")
            }
        }
        return listing
    }

    /// Whether a file of this name in the directory is read.
    static func isRead(_ name: String) -> Bool {
        name.hasSuffix(".conf") && !name.hasPrefix(".")
    }
}
