// DaemonSignals: how a long-running txrecon process receives SIGTERM, SIGINT,
// SIGHUP (and, in test builds, SIGUSR2): blocked in every thread from the
// first statement of main, and taken by one dedicated thread in sigwait(2).
//
// Not Dispatch signal sources: on Linux libdispatch reads a signal through a
// signalfd, which sees only a signal no thread takes first, and a source
// needs the SIG_IGN disposition, so a signal delivered to any thread that
// does not block it is discarded. That happened: under load, a SIGHUP sent
// right after READY=1 was now and then never seen (the reload test failed
// about once in 60 runs with two busy loops beside it). With the signals
// blocked everywhere, one sent during start-up also waits until the daemon
// can act on it, instead of ending the process half started.
import Glibc

package enum DaemonSignals {
    /// The signals a daemon acts on.
    static let handled: [Int32] = [SIGTERM, SIGINT, SIGHUP, SIGUSR2]

    /// Blocks the handled signals in the calling thread, and so in every
    /// thread started from it later. Call it first thing in main, before
    /// any other thread exists.
    package static func block() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Starts the thread that waits for the handled signals and calls
    /// `deliver` with each, on that thread, for the life of the process.
    static func startWaiting(_ deliver: @escaping @Sendable (Int32) -> Void) throws(ThreadStartError) {
        block()
        try DedicatedThread.start(name: "txrecon-signals") {
            var set = signalSet()
            while true {
                var number: Int32 = 0
                guard sigwait(&set, &number) == 0 else { continue }
                deliver(number)
            }
        }
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in handled { sigaddset(&set, number) }
        return set
    }
}
