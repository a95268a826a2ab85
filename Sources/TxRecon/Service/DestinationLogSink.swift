// DestinationLogSink: marks every entry one destination's engine writes
// with TXRECON_DESTINATION=NAME, so `journalctl TXRECON_DESTINATION=…`
// shows one destination's events. With several destinations the message
// also starts with the name, so a person reading the plain log can tell.

struct DestinationLogSink: LogSink {
    let inner: any LogSink
    let name: String
    let namesMessages: Bool

    func write(_ entry: consuming LogEntry) {
        if namesMessages { entry.message = name + ": " + entry.message }
        if entry.field("TXRECON_DESTINATION") == nil { entry.fields.append(("TXRECON_DESTINATION", name)) }
        inner.write(entry)
    }
}
