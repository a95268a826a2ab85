// ControlClient: the CLI's side of ctl/. Writes a request the way producers
// drop files (tmp/, fsync, rename into ctl/) and waits a bounded time for the
// daemon's answer; when no daemon runs, the request waits in ctl/ and takes
// effect at the next start.
import Glibc

package struct ControlClient: Sendable {
    package let layout: SpoolLayout

    package init(layout: SpoolLayout) { self.layout = layout }

    /// Places the request in ctl/; returns its name there.
    package func submit(_ request: ControlRequest) throws(SpoolError) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let name = "\(now.tv_sec).\(now.tv_nsec).\(getpid()).\(request.command.rawValue)"
        let temporary = layout.tmp + "/.ctl-" + name
        // Readable by the daemon's group, writable by no one else: a
        // request group txrecon could write (or, under
        // fs.protected_hardlinks, link elsewhere) could be rewritten into
        // another while it still belongs to root.
        try SystemCall.writeNewFile(temporary, request.json.serialized, mode: 0o640, exactMode: true, sync: true)
        try SystemCall.rename(temporary, layout.ctl + "/" + name)
        return name
    }

    /// The daemon's answer to request `name`, waiting up to `timeout`
    /// (polling: this is a short-lived command, not the daemon). The answer
    /// file is removed once read. nil when no answer came in time. Only a
    /// file owned by root or by the daemon's user (the owner of the lock
    /// file it made, or of ctl/) is an answer: a producer in group txrecon
    /// can write ctl/ too, and could put a made-up answer there first.
    package func result(of name: String, timeout: Duration) -> ControlResult? {
        let path = layout.ctl + "/" + name + ".result"
        let deadline = ContinuousClock.now + timeout
        var answering: Set<uid_t> = [0]
        for owned in [layout.lockFile, layout.ctl] {
            var info = stat()
            if stat(owned, &info) == 0 { answering.insert(info.st_uid) }
        }
        while true {
            if let contents = try? RegularFile.read(path, limit: 16 << 20, followingLinks: false),
               answering.contains(contents.owner),
               let result = ControlResult(json: contents.bytes) {
                unlink(path)
                return result
            }
            if ContinuousClock.now >= deadline { return nil }
            usleep(20_000)
        }
    }
}
