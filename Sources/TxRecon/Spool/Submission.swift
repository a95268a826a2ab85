// Submission: how a producer drops a file the right way (what `txrecon
// submit` does): write it under a unique name in tmp/, fsync it, rename it
// into new/, fsync new/. The daemon only ever sees complete files, and once
// submit returns the drop survives a power cut.
import Glibc
import Synchronization

package final class Submission: Sendable {
    package let layout: SpoolLayout
    private let counter = Atomic<Int>(0)

    package init(layout: SpoolLayout) { self.layout = layout }

    /// Drops `bytes`; returns the name it got in new/.
    @discardableResult
    package func drop(_ bytes: [UInt8]) throws(SpoolError) -> String {
        let name = try place(bytes)
        try SystemCall.syncDirectory(layout.new)
        return name
    }

    /// Writes `bytes` to tmp/ under a unique name, fsyncs it and renames it
    /// into new/; durable once new/ is fsynced (`drop` does that, a
    /// receiver's group commit does it once for many). Returns the name.
    /// `temporary`: what the file is while in tmp/ (TemporaryFile), for a
    /// program that removes its own leftovers there; nil for a producer's.
    /// `sync` false only for the power-cut test's broken receiver
    /// (GroupCommit), which must be caught losing what it answered.
    func place(_ bytes: [UInt8], as purpose: TemporaryFile? = nil, sync: Bool = true) throws(SpoolError) -> String {
        let name = uniqueName()
        let temporary = purpose?.path(in: layout, name) ?? layout.tmp + "/" + name
        // 0640 whatever the umask: the daemon reads a drop root (or another
        // producer) wrote through group txrecon; under umask 077 it would
        // be rejected as unreadable after submit said it was taken.
        try SystemCall.writeNewFile(temporary, bytes, mode: 0o640, exactMode: true, sync: sync)
        do {
            // A name taken already (clocks, PIDs and host names alike) is an
            // error, never the acknowledged drop under it replaced.
            try SystemCall.renameToNewName(temporary, layout.new + "/" + name)
        } catch {
            unlink(temporary)
            throw error
        }
        return name
    }

    /// Maildir-style: time, pid, a counter and the host, unique across
    /// producers and machines sharing the spool.
    private func uniqueName() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var host = [UInt8](repeating: 0, count: 256)
        host.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { _ = gethostname($0.baseAddress!, 255) }
        }
        let hostName = String(decoding: host.prefix { $0 != 0 }, as: UTF8.self).map { $0 == "/" || $0 == "." || $0 == ":" ? "_" : $0 }
        let serial = counter.add(1, ordering: .relaxed).newValue
        return "\(now.tv_sec).M\(now.tv_nsec / 1000)P\(getpid())Q\(serial).\(String(hostName))"
    }
}
