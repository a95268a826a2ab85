// DeliveryDestination: one destination while the daemon runs (its spool as
// its engine sees it, its HTTP or JetStream client, its engine, its done/ reaper), and
// what start-up does about destination directories no configuration names
// any more.

struct DeliveryDestination: Sendable {
    let name: String
    let spool: Spool
    let transport: any DestinationTransport
    let engine: DeliveryEngine
    let reaper: DoneReaper?

    /// With one destination: `[Backend]`'s copies that an earlier run with
    /// several left in destinations/backend/new/ go back into new/, to be
    /// taken as drops (Spool.returnCopies).
    static func returnPrimaryCopies(_ layout: SpoolLayout) throws(SpoolError) {
        let primary = layout.destination(Destination.primaryName)
        guard !SystemCall.isMissing(primary.new) else { return }
        _ = try Spool(layout: primary).returnCopies(to: layout.new)
    }

    /// The inboxes under destinations/ (each destinations/NAME/new),
    /// configured or not: a drop's other names there are intake's own
    /// (Spool+FanOut), never a producer's hard link.
    static func inboxesOnDisk(_ layout: SpoolLayout) throws(SpoolError) -> [String] {
        guard !SystemCall.isMissing(layout.destinations) else { return [] }
        return try SystemCall.listDirectory(layout.destinations)
            .filter { !$0.hasPrefix(".") }
            .map { layout.destination($0).new }
            .filter { !SystemCall.isMissing($0) }
    }

    /// Warns about each destinations/NAME/ that holds items but that no
    /// destinations/NAME.conf names now: they wait there, untouched, until
    /// it is back.
    static func reportLeftovers(_ layout: SpoolLayout, configured: [String], log: any LogSink) {
        guard let names = try? SystemCall.listDirectory(layout.destinations) else { return }
        for name in names where !name.hasPrefix(".") && !configured.contains(name) && name != Destination.primaryName {
            let destination = layout.destination(name)
            let count = [destination.new, destination.queue, destination.hold].reduce(0) { count, directory in
                count + ((try? SystemCall.listDirectory(directory))?.count { !$0.hasPrefix(".") } ?? 0)
            }
            guard count > 0 else { continue }
            log.write(LogEntry(.warning, "destinations/\(LogText.escaped(name))/ holds \(count) files, but no "
                               + "destination \(LogText.escaped(name)) is configured: they wait there until "
                               + "destinations/\(LogText.escaped(name)).conf is back (README: \"How do I remove a destination?\")",
                               fields: [("TXRECON_DESTINATION", name)]))
        }
    }
}
