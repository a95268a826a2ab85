// Intake+Destinations: how intake hands drops over when there are further
// destinations (Spool+FanOut): each verified drop linked into the inbox of
// every destination whose [Match] takes it and removed from new/ before any
// engine sees it; the copies an engine could not take, or that a crash left,
// handed to it again by the next full scan.
import Glibc

extension Intake {
    /// Links each drop into the inbox of every destination that takes it,
    /// removes it from new/ once those are durable (Spool+FanOut), then
    /// offers each engine its copies.
    func fanOut(_ drops: [Drop], rejected: Int, failures: inout IntakeBacklog.Failures,
                        whenWaiting: @escaping @Sendable () -> Void) -> Bool {
        let matches = settings.withLock { $0.matches }
        var rejected = rejected
        var copies = Array(repeating: [Drop](), count: routes.count)
        var fanned: [(name: String, file: FileIdentity)] = []
        for drop in drops {
            let targets = routes.indices.filter { matches[$0].accepts(drop.item) }
            do throws(SpoolError) {
                guard !targets.isEmpty else {
                    try reject(drop.name, Intake.noDestination(drop.item), rejected: &rejected)
                    continue
                }
                let file = try spool.fanOut(drop: drop.name, into: targets.map { routes[$0].spool.layout.new })
                for target in targets { copies[target].append(drop) }
                fanned.append((drop.name, file))
            } catch {
                note(error, name: drop.name, failures: &failures)
            }
        }
        let engine = self.engine, count = rejected
        if count > 0 { waitFor { await engine.noteRejected(count: count) } }
        do throws(SpoolError) {
            try spool.completeFanOut(of: fanned, into: routes.indices.filter { !copies[$0].isEmpty }
                .map { routes[$0].spool.layout.new })
        } catch {
            // Every drop is still in new/, its copies untouched: the next
            // scan links them again (an existing copy counts) and goes on.
            note(error, name: fanned.first?.name ?? "", failures: &failures)
            return false
        }
        return offer(copies, failures: &failures, whenWaiting: whenWaiting)
    }

    /// Offers each route its copies; returns whether an engine is full. A
    /// copy an engine could not take stays in its inbox for the next scan.
    private func offer(_ copies: [[Drop]], failures: inout IntakeBacklog.Failures,
                       whenWaiting: @escaping @Sendable () -> Void) -> Bool {
        var full = false
        for (route, drops) in zip(routes, copies) where !drops.isEmpty {
            let engine = route.engine
            let offered = waitFor { await engine.offer(drops, whenWaiting: whenWaiting) }
            for (name, error) in offered.refused {
                log.write(LogEntry(.error, "\(route.spool.layout.relative(nil))/\(LogText.escaped(name)) not taken: "
                                   + "\(error); it stays there and is tried again shortly",
                                   fields: [("TXRECON_FILE", name), ("TXRECON_DESTINATION", route.name)]))
                failures.record(error)
            }
            full = full || offered.full
        }
        return full
    }

    /// Hands every destination's copies left in its inbox to its engine
    /// again: at start, after a crash, or when an engine could not take one.
    func takeCopies(whenWaiting: @escaping @Sendable () -> Void)
        -> (failures: IntakeBacklog.Failures, full: Bool) {
        var failures = IntakeBacklog.Failures()
        let decoder = InputDecoder(acceptEnvelopes: true)
        let maximumSize = settings.withLock { $0.maximumFileSize }
        var copies = Array(repeating: [Drop](), count: routes.count)
        for (index, route) in routes.enumerated() {
            let names: [String]
            do throws(SpoolError) {
                names = try route.spool.copies()
            } catch {
                log.write(LogEntry(.error, "\(route.spool.layout.relative(nil)) cannot be listed: \(error); "
                                   + "tried again shortly", fields: [("TXRECON_DESTINATION", route.name)]))
                failures.record(error)
                continue
            }
            // A copy whose drop is still in new/ under its name is a
            // fan-out a crash interrupted: taking it now would let the
            // engine move it before new/NAME is gone (Spool+FanOut);
            // the scan of new/ completes it and hands it over.
            for name in names where !spool.isInInbox(name, sameFileAs: route.spool) {
                do throws(SpoolError) {
                    if let drop = try copy(name, of: route, decoder: decoder, maximumSize: maximumSize) {
                        copies[index].append(drop)
                    }
                } catch {
                    log.write(LogEntry(.error, "\(route.spool.layout.relative(nil))/\(LogText.escaped(name)) not "
                                       + "taken: \(error); tried again shortly",
                                       fields: [("TXRECON_FILE", name), ("TXRECON_DESTINATION", route.name)]))
                    failures.record(error)
                }
            }
        }
        let full = offer(copies, failures: &failures, whenWaiting: whenWaiting)
        return (failures, full)
    }

    /// One copy in a route's inbox as a drop; nil when it is gone or was
    /// rejected (it no longer decodes, or is larger than MaxFileSize= now).
    private func copy(_ name: String, of route: DeliveryRoute, decoder: InputDecoder,
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
        guard case let .item(item)? = try? decoder.decode(bytes) else {
            let rejection = Rejection("undecodable-copy", "the copy intake made of a verified drop no longer "
                                      + "decodes; look at it, then requeue it")
            events.rejected(file: name, rejection: rejection,
                            movedTo: try route.spool.reject(drop: name, because: rejection, at: Timestamp.nowMilliseconds()))
            return nil
        }
        return Drop(name: name, item: item, receivedAt: receivedAt)
    }

    /// Why a drop that no destination's [Match] takes is rejected.
    static func noDestination(_ item: Item) -> Rejection {
        Rejection("no-destination", "no destination's [Match] takes it (environment "
                  + "\(item.fields.environment ?? "none"), kind \(item.kind.rawValue)"
                  + (item.fields.notificationType.map { ", notificationType \($0)" } ?? "")
                  + "); widen a [Match], then txrecon requeue-rejected it")
    }
}
