// NATSConnectionEvents: what libnats says of a connection on its own
// threads — lost, back, an asynchronous error — as journal entries, so that
// an operator sees a dropped connection as such and not only as publishes
// that time out.
//
// libnats calls back with a closure pointer, also after the connection was
// destroyed (its close reports a disconnection from libnats' own thread). So
// the one instance a transport makes is kept for the life of the process
// (`init` takes a retain that is never given back), and it reports only the
// events of the connection the transport currently uses (`follow`): a
// connection being replaced or closed by txrecon itself is not news.
import CNATS
import Synchronization

final class NATSConnectionEvents: Sendable {
    private let log: any LogSink
    /// The bits of the current connection's pointer, and its URL= (which
    /// can carry no credentials); nil when there is none.
    private let current = Mutex<(connection: UInt, server: String)?>(nil)

    init(log: any LogSink) {
        self.log = log
        // Never released: libnats may call back after any connection is
        // gone, and one instance per destination is all that is ever kept.
        _ = Unmanaged.passRetained(self)
    }

    /// What libnats is handed as the callbacks' closure.
    var closure: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    /// Reports the events of `connection`, made for `server`, from now on.
    func follow(_ connection: OpaquePointer, server: String) {
        current.withLock { $0 = (UInt(bitPattern: connection), server) }
    }

    /// Reports no connection's events any more (the transport stops).
    func stopFollowing() {
        current.withLock { $0 = nil }
    }

    /// Sets the callbacks on connection options.
    func register(on options: OpaquePointer) -> natsStatus {
        var status = natsOptions_SetDisconnectedCB(options, Self.disconnected, closure)
        if status == NATS_OK { status = natsOptions_SetReconnectedCB(options, Self.reconnected, closure) }
        if status == NATS_OK { status = natsOptions_SetErrorHandler(options, Self.asyncError, closure) }
        return status
    }

    private enum Event {
        case lost, back, error(natsStatus)
    }

    /// Connections are told apart by their pointer: libnats keeps a
    /// connection alive for every callback it has queued, so no other
    /// connection can have that address while its events arrive.
    private func report(_ event: Event, on connection: OpaquePointer?) {
        guard let connection, let (followed, server) = current.withLock({ $0 }),
              followed == UInt(bitPattern: connection) else { return }
        switch event {
        case .lost where natsConnection_IsClosed(connection):
            // libnats gave up (the server refused us for good); closed never
            // reverts, so this reading cannot be stale.
            var text: UnsafePointer<CChar>?
            let status = natsConnection_GetLastError(connection, &text)
            let reason = text.map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
                ?? String(cString: natsStatus_GetText(status))
            log.write(LogEntry(.warning, "libnats closed the connection to the NATS server \(server) for good: "
                               + "\(LogText.singleLine(reason, limit: 300)); the next attempt connects again"))
        case .lost:
            log.write(LogEntry(.warning, "the connection to the NATS server \(server) was lost; libnats keeps "
                               + "reconnecting, and publishes meanwhile wait for it or time out and are retried"))
        case .back:
            log.write(LogEntry(.notice, "reconnected to the NATS server \(server)"))
        case let .error(status):
            // libnats has stored the server's own words (an -ERR) for this
            // thread just before calling back; failure() reads them.
            log.write(LogEntry(.warning, "libnats reported an asynchronous error on the connection to the NATS "
                               + "server \(server): \(LogText.singleLine(NATSSession.failure(status, .other).message, limit: 300))"))
        }
    }

    private static func instance(_ closure: UnsafeMutableRawPointer?) -> NATSConnectionEvents? {
        closure.map { Unmanaged<NATSConnectionEvents>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let disconnected: natsConnectionHandler = { connection, closure in
        instance(closure)?.report(.lost, on: connection)
    }

    private static let reconnected: natsConnectionHandler = { connection, closure in
        instance(closure)?.report(.back, on: connection)
    }

    private static let asyncError: natsErrHandler = { connection, _, status, closure in
        instance(closure)?.report(.error(status), on: connection)
    }
}
