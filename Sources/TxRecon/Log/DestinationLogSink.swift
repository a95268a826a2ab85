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
        // Lengths first: this runs for every entry, and most field names
        // (ours, all ASCII) differ from this one in length alone.
        let field = "TXRECON_DESTINATION"
        let named = entry.fields.withUnsafeBufferPointer { fields in
            fields.contains { $0.name.utf8.count == field.utf8.count && $0.name == field }
        }
        if !named { entry.fields.append((field, name)) }
        inner.write(entry)
    }
}
