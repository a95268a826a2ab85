// A DaemonStatus of one destination, `[Backend]`, as the daemon has without
// destinations/.
@testable import TxRecon

extension DaemonStatus {
    init(_ primary: EngineStatus) {
        self.init(destinations: [Entry(name: Destination.primaryName, status: primary)])
    }
}
