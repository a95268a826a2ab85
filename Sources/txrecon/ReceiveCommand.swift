// txrecon receive: the HTTP receiver in the foreground (what
// txrecon-receive.service starts).
import TxRecon

enum ReceiveCommand: Command {
    static let summary = "receive Apple's notifications and the app's uploads over HTTP, durably"
    static let help = """
        Usage: txrecon receive [--config PATH]

        Serves POST /appstore/notifications (Apple's App Store Server Notifications V2),
        POST /appstore/transactions (an app's signed transactions and StoreKit 1 receipts,
        behind UploadTokenFile= when set), POST /envelopes (with AcceptEnvelopes=yes) and
        GET /healthz, on the socket systemd passes (txrecon-receive.socket) or on Listen=
        under [Receive]. A body is verified, then written into the spool's new/ and fsynced
        before it is answered 200; what Apple did not sign is refused and never written.
        SIGHUP reloads the configuration; SIGTERM stops after the requests in flight.
        Exit status 78 on a configuration error.
        """

    static func run(_ arguments: Arguments) async -> Int32 {
        guard arguments.positional.isEmpty else { Usage.fail("receive: unexpected argument '\(arguments.positional[0])'") }
        return await Receiver.run(configurationPath: arguments.configurationPath,
                                  environment: ProcessEnvironment.current, version: TxReconVersion.current)
    }
}
