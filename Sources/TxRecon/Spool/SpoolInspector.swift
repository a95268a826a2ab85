// SpoolInspector: read-only views of a spool for `txrecon status`, `list`
// and `show`. It never moves or changes anything (the daemon is the single
// writer), so it is safe to run while the daemon works; an item it lists may
// have moved on by the time it is printed.
import Glibc

package struct SpoolInspector: Sendable {
    /// A directory `list` can show.
    package enum Listable: String, Sendable, CaseIterable {
        case queue, hold, rejected, done
    }

    /// One row of `txrecon list`.
    package struct Row: Sendable, Equatable {
        /// The item key (queue, hold, done) or the file name (rejected).
        package var name: String
        /// The file's modification time, ms since 1970.
        package var modifiedAt: Int64
        /// queue: attempts failed so far; nil when never tried or not queued.
        package var attempts: Int?
        /// queue: when the next attempt is due (ms since 1970), if it waits.
        package var nextAttemptAt: Int64?
        /// queue: last error; hold and rejected: the first line of the reason;
        /// done: `superseded` for snapshots that were never delivered.
        package var note: String?
    }

    package let layout: SpoolLayout
    private let receipts: ReceiptLibrary

    package init(layout: SpoolLayout) {
        self.layout = layout
        receipts = ReceiptLibrary(store: ReceiptStore(layout: layout))
    }

    package func list(_ directory: Listable) throws(SpoolError) -> [Row] {
        let path = self.path(directory)
        let names = try SystemCall.listDirectory(path)
        let present = Set(names)
        var rows: [Row] = []
        for name in names where !name.hasPrefix(".") {
            if name.hasSuffix(".state") { continue }
            // A key's file name holds no dot: in queue/ and hold/ a reason is
            // never an item, even one whose item is gone (a hold or release
            // between its two steps, or cut short). rejected/ holds drops
            // under their producers' names, which may end so.
            if name.hasSuffix(".reason"), directory != .rejected || present.contains(String(name.dropLast(7))) {
                continue
            }
            guard let info = try SystemCall.linkStatus(path + "/" + name) else { continue }
            var row = Row(name: name, modifiedAt: Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000)
            switch directory {
            case .queue:
                if let state = readState(name, in: layout.queue) {
                    row.attempts = state.attempts
                    row.nextAttemptAt = state.nextAttemptAt
                    row.note = state.lastError
                }
                row.name = ItemKey(fileName: name)?.rawValue ?? name
            case .hold:
                row.note = firstLine(path + "/" + name + ".reason")
                row.name = ItemKey(fileName: name)?.rawValue ?? name
            case .rejected:
                row.note = firstLine(path + "/" + name + ".reason")
            case .done:
                let parts = name.split(separator: ".", maxSplits: 1)
                if parts.count == 2, parts[1].hasPrefix("superseded-") {
                    row.name = ItemKey(fileName: String(parts[0]))?.rawValue ?? name
                    row.note = "superseded " + parts[1].dropFirst("superseded-".count)
                } else {
                    row.name = ItemKey(fileName: name)?.rawValue ?? name
                }
            }
            rows.append(row)
        }
        return rows.sorted { ($0.modifiedAt, $0.name) < ($1.modifiedAt, $1.name) }
    }

    /// One destination's items, each directory counted as `list` counts
    /// it. A directory that does not exist holds none: a destination added
    /// since the daemon last started has none yet, and one left behind may
    /// lack some.
    package struct DestinationCounts: Sendable, Equatable {
        /// Its inbox (destinations/NAME/new): copies not taken yet.
        package var inbox = 0
        package var queue = 0
        package var hold = 0
        package var done = 0
        /// The oldest queued item's modification time, ms since 1970.
        package var oldestQueuedAt: Int64?

        /// What is still to be delivered: inbox, queue and hold.
        package var pending: Int { inbox + queue + hold }
    }

    /// This layout's destination items: its inbox, queue/, hold/ and done/.
    package func destinationCounts() throws(SpoolError) -> DestinationCounts {
        var counts = DestinationCounts()
        if !SystemCall.isMissing(layout.new) { counts.inbox = try inboxCount() }
        if !SystemCall.isMissing(layout.queue) {
            let queued = try list(.queue)
            counts.queue = queued.count
            counts.oldestQueuedAt = queued.map(\.modifiedAt).min()
        }
        if !SystemCall.isMissing(layout.hold) { counts.hold = try list(.hold).count }
        if !SystemCall.isMissing(layout.done) { counts.done = try list(.done).count }
        return counts
    }

    /// Files in new/: dropped and not yet taken, or taken and not yet tried
    /// (a fresh item waits there for its first attempt). Hidden names are
    /// producers' temporaries and not counted.
    package func inboxCount() throws(SpoolError) -> Int {
        var count = 0
        try SystemCall.forEachName(in: layout.new) { name in
            if name.first != UInt8(ascii: ".") { count += 1 }
        }
        return count
    }

    /// The spool's root, or else the first of `directories` (after new/ when
    /// `inbox`), that does not exist; nil when all do. A spool never set up,
    /// or a `Directory=` naming the wrong place, can then be told as such
    /// instead of as the first read that fails.
    package func missingDirectory(reading directories: [Listable], inbox: Bool = false) -> String? {
        ([layout.root] + (inbox ? [layout.new] : []) + directories.map(path)).first { SystemCall.isMissing($0) }
    }

    /// Everything known about one key: where it is, its content, its state.
    package struct Report: Sendable {
        package var key: ItemKey
        package var location: SpoolLocation
        package var path: String
        /// nil when the file cannot be decoded any more.
        package var item: Item?
        package var state: DeliveryState?
        /// hold: the whole reason file.
        package var reason: String?
    }

    /// Where `key` is now, looking in queue/, then hold/, then done/. A
    /// file there that cannot be read (too large to show, not permitted)
    /// is an error naming it, never "no such item".
    package func show(_ key: ItemKey) throws(SpoolError) -> Report? {
        for location in [SpoolLocation.queue, .hold, .done] {
            let path = self.path(location) + "/" + key.fileName
            let bytes: [UInt8]
            do {
                bytes = try SystemCall.readFile(path, limit: 16 << 20)
            } catch where error.code == ENOENT {
                continue
            }
            var report = Report(key: key, location: location, path: path, item: item(decoding: bytes))
            // In done/, the failures before this delivery (none: it went at once).
            if location != .hold { report.state = readState(key.fileName, in: self.path(location)) }
            if location == .hold, let reason = try? SystemCall.readFile(path + ".reason", limit: 1 << 20) {
                report.reason = String(decoding: reason, as: UTF8.self)
            }
            return report
        }
        return nil
    }

    /// The bundle id the item `name` of `directory` (a key, as `list`
    /// gives it) names, decoded as `show` decodes it (a receipt's purchase
    /// with its receipt); nil when it names none (an envelope) or cannot
    /// be read.
    package func bundleID(ofItemNamed name: String, in directory: Listable) -> String? {
        guard directory != .rejected, let key = ItemKey(name),
              let bytes = try? SystemCall.readFile(path(directory) + "/" + key.fileName, limit: 16 << 20) else {
            return nil
        }
        return item(decoding: bytes)?.fields.bundleId
    }

    /// A stored item's file decoded, not verified (the daemon verified
    /// it); a part of a receipt upload with the receipt it names in
    /// receipts/ (each receipt parsed once per inspector).
    private func item(decoding bytes: [UInt8]) -> Item? {
        switch try? InputDecoder(acceptEnvelopes: true).decode(bytes) {
        case let .item(decoded)?: decoded
        case let .receiptPart(part)?: try? receipts.item(for: part, verifier: nil)
        default: nil
        }
    }

    /// Whether a daemon runs, and the status it wrote.
    package enum DaemonState: Sendable, Equatable {
        /// A daemon holds the spool's lock; its status, nil until it first
        /// wrote one.
        case running(JSONValue?)
        /// No daemon holds the lock; the status the last one wrote before
        /// it ended, nil when none did. Its counts are that daemon's, not
        /// the spool's now.
        case notRunning(last: WrittenStatus?)
    }

    /// The status file (SpoolLayout.statusFile) as the daemon left it.
    package struct WrittenStatus: Sendable, Equatable {
        /// What StatusPublisher wrote: pid, status line, phase, counts.
        package var document: JSONValue
        /// The file's modification time, ms since 1970: when it was written.
        package var writtenAt: Int64
    }

    /// The daemon as the spool's lock and status file tell it. A daemon
    /// that stopped, or died, leaves its last status behind.
    package func daemonState() -> DaemonState {
        let running = SpoolLock.isHeld(layout)
        var written: WrittenStatus?
        if let info = try? SystemCall.linkStatus(layout.statusFile),
           let bytes = try? SystemCall.readFile(layout.statusFile, limit: 1 << 20),
           let document = try? JSONValue.parse(bytes) {
            written = WrittenStatus(document: document,
                                    writtenAt: Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000)
        }
        return running ? .running(written?.document) : .notRunning(last: written)
    }

    private func path(_ directory: Listable) -> String {
        switch directory {
        case .queue: return layout.queue
        case .hold: return layout.hold
        case .rejected: return layout.rejected
        case .done: return layout.done
        }
    }

    private func path(_ location: SpoolLocation) -> String {
        switch location {
        case .queue: return layout.queue
        case .hold: return layout.hold
        case .done: return layout.done
        }
    }

    private func readState(_ fileName: String, in directory: String) -> DeliveryState? {
        guard let bytes = try? SystemCall.readFile(directory + "/" + fileName + ".state", limit: 64 * 1024) else {
            return nil
        }
        return DeliveryState(json: bytes)
    }

    private func firstLine(_ path: String) -> String? {
        guard let bytes = try? SystemCall.readFile(path, limit: 64 * 1024) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }
}
