// Outbox: the spool's outbox/, where answers to Apple wait for `txrecon
// answer` (docs/outbox.md). Like the spool, state is where a file is, and
// every transition is a rename:
//
//   outbox/tmp/        an entry being written (fsynced before its rename)
//   outbox/new/        entries the daemon wrote; txrecon-answer.path starts
//                      `txrecon answer` while it is not empty
//   outbox/queue/      entries `txrecon answer` took and could not send yet
//                      (Apple or the network failing), each dated (its
//                      modification time) as it was taken; the timer's run
//                      goes on
//   outbox/sent/       entries Apple took, kept `sentRetention` from when
//                      they were sent (their modification time, set as they
//                      move in), so that an item confirmed again is not
//                      answered again
//   outbox/aside/      entries Apple refused for good, that came too late
//                      or a finish queued for 30 days, each with
//                      NAME.reason; a person looks at them
//   outbox/confirmed/  for a purchase several destinations take: one marker
//                      per destination that confirmed it, NAME.DESTINATION,
//                      until the last one writes the entry (or `txrecon
//                      answer` gives the purchase up after 30 days and sets
//                      its entry aside)
//
// The daemon writes into tmp/, confirmed/ and new/; `txrecon answer` moves
// entries on from new/ and removes markers. Both run as the user txrecon,
// and both look at and change confirmed/ only under outbox/confirmed.lock
// (`withConfirmationsLocked`). Blocks on disk I/O; reports nothing.
import Glibc

package struct Outbox: Sendable {
    package let root: String
    package let tmp: String
    package let new: String
    package let queue: String
    package let sent: String
    package let aside: String
    package let confirmed: String

    /// How long sent/ keeps an entry: 30 days, longer than any redelivery
    /// of the item it answers is likely to take.
    package static let sentRetention: Duration = .seconds(30 * 86_400)

    /// How long a purchase several destinations take waits in confirmed/
    /// for the last of them: 30 days, far beyond any outage a destination's
    /// retries ride out. Past it the purchase is given up (never finished
    /// at Apple, with a warning): a destination removed, its `[Match]`
    /// changed, or the item dropped by an operator would otherwise leave
    /// its markers there for ever.
    package static let confirmationRetention: Duration = .seconds(30 * 86_400)

    /// The outbox of the spool at `spool`.
    package init(spool: String) {
        root = spool + "/outbox"
        tmp = root + "/tmp"
        new = root + "/new"
        queue = root + "/queue"
        sent = root + "/sent"
        aside = root + "/aside"
        confirmed = root + "/confirmed"
    }

    /// Runs `body` holding outbox/confirmed.lock, an flock(2) the daemon
    /// (recording a confirmation) and `txrecon answer` (removing markers)
    /// both take: neither sees confirmed/ half changed by the other. Waits
    /// for the other side, which holds it for a few file operations.
    package func withConfirmationsLocked<T>(_ body: () throws(SpoolError) -> T) throws(SpoolError) -> T {
        let path = root + "/confirmed.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o640)
        guard fd >= 0 else { throw SpoolError("open", path) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw SpoolError("flock", path) }
        }
        return try body()
    }

    /// Makes the directories that are missing (0750: the entries name
    /// customers' transactions).
    package func prepare() throws(SpoolError) {
        for directory in [root, tmp, new, queue, sent, aside, confirmed] where SystemCall.isMissing(directory) {
            try SystemCall.makeDirectory(directory, mode: 0o750)
        }
    }

    /// What `write` did.
    package enum Written: Equatable, Sendable {
        /// Durable in new/ (written, fsynced, renamed, new/ fsynced).
        case written
        /// The same answer is queued, sent or set aside already: not again.
        case alreadyIn(String)
    }

    /// Writes `entry` into new/, durable when this returns, unless the same
    /// answer (the same file name) is past new/ already. One in new/ is
    /// replaced: it is the same answer, not sent yet.
    package func write(_ entry: OutboxEntry) throws(SpoolError) -> Written {
        let name = entry.fileName
        if let past = pastNew(name) { return .alreadyIn(past) }
        let temporary = try writeTemporary(entry)
        do {
            try SystemCall.rename(temporary, new + "/" + name)
        } catch {
            unlink(temporary)
            throw error
        }
        try SystemCall.syncDirectory(new)
        return .written
    }

    /// Writes `entry` into tmp/ under its name, fsynced; its path there.
    private func writeTemporary(_ entry: OutboxEntry) throws(SpoolError) -> String {
        let temporary = tmp + "/" + entry.fileName
        try SystemCall.unlinkIfPresent(temporary)
        try SystemCall.writeNewFile(temporary, entry.json, mode: 0o640, sync: true)
        return temporary
    }

    /// Where the entry `name` is once `txrecon answer` took it (queue,
    /// sent, aside); nil while it is not there.
    package func pastNew(_ name: String) -> String? {
        [(queue, "queue"), (sent, "sent"), (aside, "aside")].first { !SystemCall.isMissing($0.0 + "/" + name) }?.1
    }

    /// Records, durably, that `destination` confirmed the purchase the
    /// finish entry `name` is for.
    package func markConfirmed(_ name: String, by destination: String) throws(SpoolError) {
        let marker = confirmed + "/" + name + "." + destination
        guard SystemCall.isMissing(marker) else { return }
        try SystemCall.writeNewFile(marker, [], mode: 0o640, sync: true)
        try SystemCall.syncDirectory(confirmed)
    }

    /// Whether `destination` confirmed the purchase of `name` before.
    package func isConfirmed(_ name: String, by destination: String) -> Bool {
        !SystemCall.isMissing(confirmed + "/" + name + "." + destination)
    }

    /// Removes the markers of `name`: its entry is written, or it was
    /// given up.
    package func clearConfirmations(_ name: String, of destinations: [String]) throws(SpoolError) {
        for destination in destinations {
            try SystemCall.unlinkIfPresent(confirmed + "/" + name + "." + destination)
        }
    }

    /// A purchase with markers in confirmed/: its finish entry's name, the
    /// destinations that confirmed it, and when the first of them did (ms
    /// since 1970: a marker is written once and never touched again).
    package struct ConfirmedPurchase: Sendable, Equatable {
        package var name: String
        package var destinations: [String]
        package var since: Int64
    }

    /// Every purchase with markers in confirmed/, in entry name order.
    /// Anything there not shaped `ENTRY.DESTINATION` is left alone.
    package func confirmedPurchases() throws(SpoolError) -> [ConfirmedPurchase] {
        var byName: [String: ConfirmedPurchase] = [:]
        for marker in try SystemCall.listDirectory(confirmed) {
            // A destination's name has no dot: the entry's name ends at the
            // last one.
            guard let dot = marker.lastIndex(of: ".") else { continue }
            let name = String(marker[..<dot]), destination = String(marker[marker.index(after: dot)...])
            guard OutboxEntry.isEntryName(name), !destination.isEmpty,
                  let info = try? SystemCall.linkStatus(confirmed + "/" + marker) else { continue }
            let written = Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
            byName[name, default: ConfirmedPurchase(name: name, destinations: [], since: written)].destinations
                .append(destination)
            byName[name]!.since = min(byName[name]!.since, written)
        }
        return byName.values.map { var purchase = $0; purchase.destinations.sort(); return purchase }
            .sorted { $0.name < $1.name }
    }

    /// The entry names in `directory`, oldest name first.
    package func entries(in directory: String) throws(SpoolError) -> [String] {
        try SystemCall.listDirectory(directory).filter(OutboxEntry.isEntryName).sorted()
    }

    /// Reads the entry `name` in `directory`.
    package func read(_ name: String, in directory: String) throws(SpoolError) -> [UInt8] {
        try SystemCall.readFile(directory + "/" + name, limit: OutboxEntry.maximumFileSize)
    }

    /// When the entry `name` in queue/ was taken into it (ms since 1970):
    /// its modification time, set by `txrecon answer` as it took it from
    /// new/. nil when it is not there.
    package func queuedAt(_ name: String) -> Int64? {
        guard let info = try? SystemCall.linkStatus(queue + "/" + name) else { return nil }
        return Int64(info.st_mtim.tv_sec) * 1000 + Int64(info.st_mtim.tv_nsec) / 1_000_000
    }

    /// Moves `name` from queue/ into sent/, dated `now` (ms since 1970):
    /// sent/ is pruned by modification time, and a rename keeps the one of
    /// when the entry was written, which may be weeks before it was sent.
    /// Dated first, durably: a crash in between leaves it in queue/, where
    /// its time means nothing.
    package func moveToSent(_ name: String, at now: Int64) throws(SpoolError) {
        try SystemCall.setModificationTime(queue + "/" + name, to: now)
        try move(name, from: queue, to: sent)
    }

    /// Moves `name` from `source` to `target` (replacing one there) and
    /// makes the move durable.
    package func move(_ name: String, from source: String, to target: String) throws(SpoolError) {
        try SystemCall.rename(source + "/" + name, target + "/" + name)
        try SystemCall.syncDirectory(target)
    }

    /// Gives `purchase` up: its finish entry, made from its name, set aside
    /// with `reason`, so that a destination confirming it later finds it
    /// answered and leaves no marker; then its markers go. The caller
    /// holds the confirmations' lock.
    package func giveUp(_ purchase: ConfirmedPurchase, reason: String, at now: Int64) throws(SpoolError) {
        if let entry = OutboxEntry(finishNamed: purchase.name, confirmedAt: purchase.since,
                                   by: purchase.destinations.joined(separator: ", ")) {
            _ = try writeTemporary(entry)
            try setAside(purchase.name, from: tmp, reason: reason, at: now)
        }
        try clearConfirmations(purchase.name, of: purchase.destinations)
    }

    /// Moves `name` from `source` into aside/ with `reason` beside it
    /// (written first, so an entry in aside/ always has one).
    package func setAside(_ name: String, from source: String, reason: String, at now: Int64) throws(SpoolError) {
        let text = "\(LogText.singleLine(reason))\nset-aside-at: \(Timestamp.rfc3339(milliseconds: now))\n"
        try SystemCall.replaceFile(aside + "/" + name + ".reason", Array(text.utf8),
                                   temporaryName: tmp + "/" + name + ".reason", sync: true, mode: 0o640)
        try move(name, from: source, to: aside)
    }

    /// The reason beside an entry in aside/, its first line.
    package func reason(of name: String) -> String? {
        guard let bytes = try? SystemCall.readFile(aside + "/" + name + ".reason", limit: 64 * 1024) else { return nil }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").first.map(String.init)
    }

    /// How many entries wait (new/ and queue/), were sent, were set aside.
    package struct Counts: Sendable, Equatable {
        package var waiting = 0
        package var sent = 0
        package var setAside = 0

        package init(waiting: Int = 0, sent: Int = 0, setAside: Int = 0) {
            self.waiting = waiting
            self.sent = sent
            self.setAside = setAside
        }
    }

    /// The counts as the directories hold them now (zero for a missing one).
    package func counts() -> Counts {
        func count(_ directory: String) -> Int { (try? entries(in: directory).count) ?? 0 }
        return Counts(waiting: count(new) + count(queue), sent: count(sent), setAside: count(aside))
    }
}

extension OutboxEntry {
    /// The largest entry file read: 1 MiB (the consumption information is
    /// at most 64 KiB).
    package static let maximumFileSize = 1 << 20
}

extension Outbox {
    /// One entry as `txrecon list outbox` shows it.
    package struct Row: Sendable {
        /// `new`, `queue`, `sent` or `aside`.
        package var directory: String
        package var name: String
        /// The entry, when its file reads as one.
        package var entry: OutboxEntry?
        /// Why it is in aside/.
        package var reason: String?
    }

    /// Every entry: waiting (new/, queue/), then set aside, then sent; each
    /// directory in name order.
    package func rows() throws(SpoolError) -> [Row] {
        var rows: [Row] = []
        for (label, directory) in [("new", new), ("queue", queue), ("aside", aside), ("sent", sent)] {
            for name in try entries(in: directory) {
                let entry = (try? read(name, in: directory)).flatMap { try? OutboxEntry(json: $0) }
                rows.append(Row(directory: label, name: name, entry: entry,
                                reason: label == "aside" ? reason(of: name) : nil))
            }
        }
        return rows
    }
}
