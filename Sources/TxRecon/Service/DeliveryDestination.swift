// DeliveryDestination: one destination while the daemon runs (its spool as
// its engine sees it, its HTTP or JetStream client, its engine, its done/ reaper), and
// what start-up does about destination directories no configuration names
// any more.

struct DeliveryDestination: Sendable {
    let name: String
    let spool: Spool
    let transport: any DestinationTransport
    let engine: DeliveryEngine
    let reaper: DoneReaper

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

    /// Warns about each destinations/NAME/ that holds items not delivered
    /// yet but that no destinations/NAME.conf names now: they wait there,
    /// untouched, until it is back (`txrecon status`, `list` and `show`
    /// show them, as not configured).
    static func reportLeftovers(_ layout: SpoolLayout, configured: [String], log: any LogSink) {
        for place in DestinationDirectories.leftovers(layout, configured: configured) {
            guard let pending = try? SpoolInspector(layout: place.layout).destinationCounts().pending, pending > 0 else {
                continue
            }
            let name = LogText.escaped(place.name)
            log.write(LogEntry(.warning, "destinations/\(name)/ holds \(pending) items not delivered yet, but no "
                               + "destination \(name) is configured: they wait there until destinations/\(name).conf "
                               + "is back (docs/remove-destination.md: \"How do I remove a destination?\")",
                               fields: [("TXRECON_DESTINATION", place.name)]))
        }
    }
}
