// DestinationDirectories: every destination whose items a spool holds, the
// configured ones and those left behind. A destination whose file was
// removed keeps its undelivered items in destinations/NAME/ (inbox, queue/,
// hold/, done/), untouched, until the file is back; nothing else would show
// them. The one place that decides what counts as such a leftover: the
// daemon's start-up warning and `txrecon status`, `list` and `show` ask it.
//
// Read-only and safe beside a running daemon; a directory that cannot be
// listed counts as holding nothing (the caller reports the spool's own
// directories when they are missing).
import Glibc

/// The destinations under a spool, with where each one's items are.
package enum DestinationDirectories {
    /// One destination's items in the spool.
    package struct Place: Sendable, Equatable {
        /// Its name: `backend` for `[Backend]`, else the destination file's.
        package var name: String
        /// Its directories: `SpoolLayout.destination(name)` (`[Backend]`
        /// keeps queue/, hold/ and done/ at the top, its inbox is
        /// destinations/backend/new/).
        package var layout: SpoolLayout
        /// false: no destinations/NAME.conf names it now, and its items wait
        /// for the file to come back.
        package var configured: Bool
    }

    /// `configured` (their names, `[Backend]`'s first), then every
    /// directory under destinations/ that none of them names, in name
    /// order. `backend` is always configured: the main file's `[Backend]`.
    package static func places(_ root: SpoolLayout, configured: [String]) -> [Place] {
        var names = configured
        if !names.contains(Destination.primaryName) { names.insert(Destination.primaryName, at: 0) }
        let onDisk = ((try? SystemCall.listDirectory(root.destinations)) ?? []).filter { name in
            // Hidden names are the daemon's own temporaries, never a destination.
            guard !name.hasPrefix("."), let info = try? SystemCall.linkStatus(root.destinations + "/" + name) else {
                return false
            }
            return info.st_mode & S_IFMT == S_IFDIR
        }
        let leftovers = onDisk.filter { !names.contains($0) }.sorted()
        return names.map { Place(name: $0, layout: root.destination($0), configured: true) }
            + leftovers.map { Place(name: $0, layout: root.destination($0), configured: false) }
    }

    /// The destinations left behind: under destinations/, named by no
    /// configuration file now.
    package static func leftovers(_ root: SpoolLayout, configured: [String]) -> [Place] {
        places(root, configured: configured).filter { !$0.configured }
    }
}
