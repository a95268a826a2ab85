// ControlClient: the CLI's side of ctl/. Writes a request the way producers
// drop files (tmp/, fsync, rename into ctl/) and waits a bounded time for the
// daemon's answer; when no daemon runs, the request waits in ctl/ and takes
// effect at the next start.
import Glibc

public struct ControlClient: Sendable {
    public let layout: SpoolLayout

    public init(layout: SpoolLayout) { self.layout = layout }

    /// Places the request in ctl/; returns its name there.
    public func submit(_ request: ControlRequest) throws(SpoolError) -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let name = "\(now.tv_sec).\(now.tv_nsec).\(getpid()).\(request.command.rawValue)"
        let temporary = layout.tmp + "/.ctl-" + name
        try SystemCall.writeNewFile(temporary, request.json.serialized, mode: 0o660, sync: true)
        try SystemCall.rename(temporary, layout.ctl + "/" + name)
        return name
    }

    /// The daemon's answer to request `name`, waiting up to `timeout`
    /// (polling: this is a short-lived command, not the daemon). The answer
    /// file is removed once read. nil when no answer came in time.
    public func result(of name: String, timeout: Duration) -> ControlResult? {
        let path = layout.ctl + "/" + name + ".result"
        let deadline = ContinuousClock.now + timeout
        while true {
            if let bytes = try? SystemCall.readFile(path, limit: 16 << 20), let result = ControlResult(json: bytes) {
                unlink(path)
                return result
            }
            if ContinuousClock.now >= deadline { return nil }
            usleep(20_000)
        }
    }
}
