// InboxWatcher: inotify on new/, ctl/ and rejected/, read on the intake thread.
//
// No polling: the thread sleeps in poll(2) until a producer renames a file in
// (IN_MOVED_TO) or closes one it wrote in place (IN_CLOSE_WRITE), creates
// something in place (IN_CREATE: files being written, links, FIFOs), changes
// a watched directory's own mode or owner (IN_ATTRIB), until the caller's
// timeout, or until `stop()`. When the kernel's event queue overflows (a
// burst of more than fs.inotify.max_queued_events files) the caller is told
// to rescan instead.
// Reports: `.lost` when new/ or ctl/ is removed or moved away,
// `.attributesChanged` when its permissions may have changed, and
// `.rejectedChanged` when an item enters or leaves rejected/ (by the daemon,
// the receipt splitter, an operator's `rm`), so that its count is listed
// again rather than kept by adding up what each thread says it did.
import Glibc

/// One wake-up's worth of news from the spool.
enum InboxEvent: Equatable {
    /// Names that appeared in new/, in event order (may repeat, may be gone already).
    case drops([String])
    /// Names created in new/ in place (IN_CREATE). A regular file created
    /// in place is still being written and is taken at IN_CLOSE_WRITE (or,
    /// for a hard link, which is never written, once it has settled); any
    /// other kind (symlink, FIFO, directory) never closes after writing and
    /// must be set aside now.
    case created([String])
    /// Names that appeared in ctl/.
    case controls([String])
    /// A name other than a temporary one (`.tmp-…`) entered or left rejected/.
    case rejectedChanged
    /// Events were lost (queue overflow), or `requestRescan()` was called:
    /// scan new/ and ctl/ again.
    case rescan
    /// A watched directory went away; intake cannot go on.
    case lost(String)
    /// A watched directory's own mode, owner or ACL changed (the path given):
    /// the daemon may have lost access to it.
    case attributesChanged(String)
    /// The timeout passed to `next` ran out first.
    case timedOut
    /// `stop()` was called.
    case stopped
}

/// Owns the inotify descriptor and a stop pipe. `next()` is called from
/// one thread only (the intake thread); `stop()` from any.
final class InboxWatcher: Sendable {
    private let inotify: Int32
    /// The read and write ends of a pipe that `stop()` writes to.
    private let wake: Int32
    private let wakeWriter: Int32
    private let newWatch: Int32
    private let ctlWatch: Int32
    private let rejectedWatch: Int32
    private let layout: SpoolLayout

    init(layout: SpoolLayout) throws(SpoolError) {
        self.layout = layout
        inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0 else { throw SpoolError("inotify_init1 for", layout.new) }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(inotify)
            throw SpoolError("pipe for", layout.new)
        }
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        wake = ends[0]
        wakeWriter = ends[1]
        let mask = UInt32(IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_ONLYDIR)
        newWatch = inotify_add_watch(inotify, layout.new, mask | UInt32(IN_CREATE))
        ctlWatch = inotify_add_watch(inotify, layout.ctl, mask)
        rejectedWatch = inotify_add_watch(inotify, layout.rejected,
                                          UInt32(IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ONLYDIR))
        guard newWatch >= 0, ctlWatch >= 0, rejectedWatch >= 0 else {
            let failure = SpoolError("inotify_add_watch", newWatch < 0 ? layout.new : ctlWatch < 0 ? layout.ctl : layout.rejected)
            close(inotify)
            close(wake)
            close(wakeWriter)
            throw failure
        }
    }

    deinit {
        close(inotify)
        close(wake)
        close(wakeWriter)
    }

    /// Wakes a thread blocked in `next()`; it then returns `.stopped`, now
    /// and on every later call.
    func stop() {
        var byte = InboxWatcher.stopByte
        _ = write(wakeWriter, &byte, 1)
    }

    /// Wakes a thread blocked in `next()` with `.rescan`; callable from any
    /// thread (the engine calls it when a drop it was handed stays in new/).
    func requestRescan() {
        var byte = InboxWatcher.rescanByte
        _ = write(wakeWriter, &byte, 1)
    }

    private static let stopByte: UInt8 = 1
    private static let rescanByte: UInt8 = 2

    /// Blocks until something happens or `timeout` passes (nil: no limit);
    /// returns every event available then.
    func next(timeout: Duration? = nil) -> [InboxEvent] {
        var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        let milliseconds = timeout.map { Int32(clamping: max(0, ($0.milliseconds))) + ($0 > .zero ? 1 : 0) } ?? -1
        while true {
            let ready = poll(&fds, 2, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { return [.timedOut] }
            if fds[1].revents != 0 {
                if wakeReasons().contains(InboxWatcher.stopByte) {
                    stop()
                    return [.stopped]
                }
                return [.rescan] + (fds[0].revents != 0 ? readEvents() : [])
            }
            if fds[0].revents != 0 { break }
        }
        return readEvents()
    }

    /// Drains the wake pipe (it is written rarely: a stop, a rescan request).
    private func wakeReasons() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { read(wake, $0.baseAddress, $0.count) }
        return count > 0 ? Array(bytes[..<count]) : []
    }

    private func readEvents() -> [InboxEvent] {
        var drops: [String] = []
        var created: [String] = []
        var controls: [String] = []
        var rejectedChanged = false
        var result: [InboxEvent] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            buffer.withUnsafeBytes { raw in
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let event = raw.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                    let nameStart = offset + MemoryLayout<inotify_event>.size
                    let nameBytes = raw[nameStart..<(nameStart + Int(event.len))].prefix { $0 != 0 }
                    // A name that is not UTF-8 cannot be addressed through a
                    // Swift path: a scan renames it first (Spool.renameUndecodableDrop).
                    let name = String(validating: nameBytes, as: UTF8.self)
                    offset = nameStart + Int(event.len)
                    guard let name else {
                        if event.wd == rejectedWatch { rejectedChanged = true }
                        if event.wd == newWatch, !result.contains(.rescan) { result.append(.rescan) }
                        continue
                    }
                    if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                        result.append(.rescan)
                    } else if event.wd == rejectedWatch {
                        // Its own removal (IN_IGNORED) is intake's to find
                        // when it next sets something aside.
                        if !name.isEmpty, !name.hasPrefix(".tmp-") { rejectedChanged = true }
                    } else if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                        result.append(.lost(event.wd == newWatch ? layout.new : layout.ctl))
                    } else if event.mask & UInt32(IN_ATTRIB) != 0 {
                        // A file's attributes inside new/ are read when it is
                        // taken; only the directory's own matter here.
                        if event.len == 0 { result.append(.attributesChanged(event.wd == newWatch ? layout.new : layout.ctl)) }
                    } else if !name.isEmpty {
                        if event.wd == ctlWatch {
                            controls.append(name)
                        } else if event.mask & UInt32(IN_CREATE) != 0 {
                            created.append(name)
                        } else {
                            drops.append(name)
                        }
                    }
                }
            }
        }
        // Creations before closes and moves: a file created and closed
        // within one read is known as written in place before its close
        // is seen, as when the two come in reads of their own.
        if rejectedChanged { result.append(.rejectedChanged) }
        if !controls.isEmpty { result.insert(.controls(controls), at: 0) }
        if !drops.isEmpty { result.insert(.drops(drops), at: 0) }
        if !created.isEmpty { result.insert(.created(created), at: 0) }
        return result
    }
}
