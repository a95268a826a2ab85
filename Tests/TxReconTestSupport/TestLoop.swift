// TestLoop: the event loop the transport tests drive CurlTransport on, as
// the daemon drives it on its engine's thread. One for the test process:
// like the daemon's, it serves every transport at once.
import TxRecon

package enum TestLoop {
    package static let shared: ThreadExecutor = {
        do {
            return try ThreadExecutor(name: "txr-test-loop")
        } catch {
            fatalError("cannot start the test's event loop: \(error)")
        }
    }()
}
