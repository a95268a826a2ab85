// Intake+Destinations: how intake hands drops over when there are further
// destinations (Spool+FanOut): each verified drop linked into the inbox of
// every destination whose [Match] takes it and removed from new/ before any
// engine sees it; the copies an engine could not take, or that a crash left,
// handed to it again by the next full scan.
import Glibc

extension Intake {
    /// Links each drop into the inbox of every destination that takes it,
    /// removes it from new/ once those are durable (Spool+FanOut), then
    /// offers each engine its copies. Returns false: new/ never waits for
    /// one full destination (see `offer`).
    func fanOut(_ drops: [Drop], via senders: [IntakeHandOff], rejected: Int, failures: inout IntakeBacklog.Failures,
                whenWaiting: @escaping @Sendable () -> Void) -> Bool {
        let (matches, apps, maximumSize) = settings.withLock { ($0.matches, $0.apps, $0.maximumFileSize) }
        var rejected = rejected
        var copies = Array(repeating: [Drop](), count: routes.count)
        var fanned: [(name: String, file: FileIdentity)] = []
        for drop in drops {
            let targets = routes.indices.filter { matches[$0].accepts(drop.item) }
            do throws(SpoolError) {
                guard !targets.isEmpty else {
                    try rejectUnrouted(drop, apps: apps, rejected: &rejected)
                    continue
                }
                let file = try spool.fanOut(drop: drop.name, into: targets.map { routes[$0].spool.layout.new },
                                            maximumSize: maximumSize)
                for target in targets { copies[target].append(drop) }
                fanned.append((drop.name, file))
            } catch {
                note(error, name: drop.name, failures: &failures)
            }
        }
        let count = rejected
        if count > 0 { engine.post { $0.noteRejected(count: count) } }
        do throws(SpoolError) {
            try spool.completeFanOut(of: fanned, into: routes.indices.filter { !copies[$0].isEmpty }
                .map { routes[$0].spool.layout.new })
        } catch {
            // Every drop is still in new/, its copies untouched: the next
            // scan links them again (an existing copy counts) and goes on.
            note(error, name: fanned.first?.name ?? "", failures: &failures)
            return false
        }
        offer(copies, via: senders, failures: &failures, whenWaiting: whenWaiting)
        return false
    }

    /// Offers each route its copies. A destination whose engine is full
    /// (HighWater pending) is not offered any: its copies wait in its inbox,
    /// on disk, until it asks for a scan, so that it never holds up the
    /// others. A copy an engine could not take stays there too.
    private func offer(_ copies: [[Drop]], via senders: [IntakeHandOff], failures: inout IntakeBacklog.Failures,
                       whenWaiting: @escaping @Sendable () -> Void) {
        for (index, (route, copies)) in zip(routes, copies).enumerated() where !copies.isEmpty {
            guard !fullRoutes.withLock({ $0.contains(index) }) else { continue }
            var drops = copies
            for drop in drops.indices {
                drops[drop].confirmed = confirmedVersion(route.name, drops[drop].item.key)
            }
            let offered = senders[index].offer(drops, waitsForWindow: !drops.allSatisfy(\.bulk),
                                               whenWaiting: whenWaiting)
            noteRefused(offered.refused, route: index, failures: &failures)
            if offered.full, fullRoutes.withLock({ $0.insert(index).inserted }) {
                log.write(LogEntry(.notice, "\(route.name) has too many items pending: its copies wait in "
                                   + "\(route.spool.layout.relative(nil))/ until it has delivered some; the other "
                                   + "destinations go on", fields: [("TXRECON_DESTINATION", route.name)]))
            }
        }
    }

    /// Hands every destination's copies left in its inbox to its engine
    /// again: at start, after a crash, when an engine could not take one,
    /// or when a full one has room again. Read a part at a time and offered
    /// a batch at a time, until the inbox is empty or the engine is full.
    func takeCopies(via senders: [IntakeHandOff], verifiers: VerifierSlot,
                    whenWaiting: @escaping @Sendable () -> Void) -> IntakeBacklog.Failures {
        var failures = IntakeBacklog.Failures()
        let settings = self.settings.withLock { $0 }
        let decoder = InputDecoder(acceptEnvelopes: settings.acceptEnvelopes)
        let verifier = verifiers.verifier(for: settings.verification)
        let maximumSize = settings.maximumFileSize
        // A full scan asks every engine again: one that is still full says
        // so after its first batch.
        fullRoutes.withLock { $0.removeAll() }
        for (index, route) in routes.enumerated() {
            do throws(SpoolError) {
                let inbox = try DirectoryReader(route.spool.layout.new)
                while !fullRoutes.withLock({ $0.contains(index) }) {
                    let (part, _) = try inbox.names(upTo: Intake.scanPart)
                    if part.isEmpty { break }
                    // A copy whose drop is still in new/ under its name is a
                    // fan-out a crash interrupted: taking it now would let
                    // the engine move it before new/NAME is gone
                    // (Spool+FanOut); the scan of new/ completes it.
                    var drops: [Drop] = []
                    for name in part where !spool.isInInbox(name, sameFileAs: route.spool) {
                        do throws(SpoolError) {
                            if let drop = try copy(name, of: route, decoder: decoder, verifier: verifier,
                                                   maximumSize: maximumSize) {
                                drops.append(drop)
                            }
                        } catch {
                            log.write(LogEntry(.error, "\(route.spool.layout.relative(nil))/\(LogText.escaped(name)) "
                                               + "not taken: \(error); tried again shortly",
                                               fields: [("TXRECON_FILE", name), ("TXRECON_DESTINATION", route.name)]))
                            failures.record(error)
                        }
                    }
                    for start in stride(from: 0, to: drops.count, by: Intake.batchSize) {
                        guard !fullRoutes.withLock({ $0.contains(index) }) else { break }
                        var batch = Array(repeating: [Drop](), count: routes.count)
                        batch[index] = Array(drops[start..<min(start + Intake.batchSize, drops.count)])
                        offer(batch, via: senders, failures: &failures, whenWaiting: whenWaiting)
                    }
                }
            } catch {
                log.write(LogEntry(.error, "\(route.spool.layout.relative(nil)) cannot be listed: \(error); "
                                   + "tried again shortly", fields: [("TXRECON_DESTINATION", route.name)]))
                failures.record(error)
            }
        }
        settle(senders, &failures)
        return failures
    }

    /// One copy in a route's inbox as a drop; nil when it is gone or was
    /// rejected (it no longer decodes or verifies, or is larger than
    /// MaxFileSize= now). Verified again, as an attempt verifies a queued
    /// file whose item it does not hold: this copy waited here across a
    /// start or a reload, and AcceptEnvelopes=, [Verification] and the apps
    /// may have changed since intake verified its drop.
    private func copy(_ name: String, of route: DeliveryRoute, decoder: InputDecoder, verifier: SignedDataVerifier?,
                      maximumSize: Int) throws(SpoolError) -> Drop? {
        let read: (bytes: [UInt8], receivedAt: Int64)?
        do {
            read = try route.spool.readCopy(name, maximumSize: maximumSize)
        } catch where error.code == EFBIG {
            let rejection = Rejection("too-large", "it is larger than MaxFileSize= (\(maximumSize) bytes) now; "
                                      + "raise it, then requeue it")
            events.rejected(file: name, rejection: rejection,
                            movedTo: try route.spool.reject(drop: name, because: rejection, at: Timestamp.nowMilliseconds()))
            return nil
        }
        guard let (bytes, receivedAt) = read else { return nil }
        // A part is read with its stored receipt, checked against its name.
        // A receipt that cannot be read just now (EIO, EMFILE, …) leaves
        // the copy where it is: tried again shortly, as a drop in new/ would be.
        var rejection = Rejection("undecodable-copy", "the copy intake made of a verified drop is no item; look at "
                                  + "it, then requeue it")
        var novelties: [AppleNovelty] = []
        do throws(ItemReadFailure) {
            let verified = try decoder.decode(bytes, verifyingWith: verifier, receipts: receipts, novelties: &novelties)
            if case let .item(item) = verified { return Drop(name: name, item: item, receivedAt: receivedAt) }
        } catch {
            switch error {
            case let .unreadable(failure): throw failure
            case let .rejected(why):
                rejection = Rejection(why.code, "the copy intake made of a verified drop is refused now (the "
                                      + "settings changed since, or the file did): \(why.detail)")
            }
        }
        events.rejected(file: name, rejection: rejection,
                        movedTo: try route.spool.reject(drop: name, because: rejection, at: Timestamp.nowMilliseconds()))
        return nil
    }

    /// Why a drop that no destination's [Match] takes is rejected.
    static func noDestination(_ item: Item) -> Rejection {
        Rejection("no-destination", "no destination's [Match] takes it (environment "
                  + "\(item.fields.environment ?? "none"), kind \(item.kind.rawValue)"
                  + (item.fields.notificationType.map { ", notificationType \($0)" } ?? "")
                  + "); widen a [Match], then txrecon requeue-rejected it")
    }
}
