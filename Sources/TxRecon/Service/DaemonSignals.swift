// DaemonSignals: how a long-running txrecon process receives SIGTERM, SIGINT,
// SIGHUP (and, in test builds, SIGUSR2): blocked in every thread from the
// first statement of main, and read from a signalfd(2) that the command's
// own event loop (`txrecon-main`, a ThreadExecutor) watches, so no thread
// waits for signals alone.
//
// Not Dispatch signal sources: on Linux libdispatch reads a signal through a
// signalfd, which sees only a signal no thread takes first, and a source
// needs the SIG_IGN disposition, so a signal delivered to any thread that
// does not block it is discarded. That happened: under load, a SIGHUP sent
// right after READY=1 was now and then never seen (the reload test failed
// about once in 60 runs with two busy loops beside it). With the signals
// blocked everywhere (the mask every later thread inherits, libcurl's,
// libmicrohttpd's and libnats' included), a signal stays pending until the
// signalfd is read, whichever thread it was sent to; one sent during
// start-up also waits until the daemon can act on it, instead of ending the
// process half started.
import CGlibcExtras
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

    /// Calls `deliver` with each handled signal, on `loop`'s thread, for the
    /// life of the process: a signalfd watched in the loop's epoll.
    static func watch(on loop: ThreadExecutor, _ deliver: @escaping @Sendable (Int32) -> Void) throws(WatchError) {
        block()
        var set = signalSet()
        let fd = signalfd(-1, &set, Int32(SFD_NONBLOCK | SFD_CLOEXEC))
        guard fd >= 0 else { throw WatchError(code: errno) }
        loop.submit {
            loop.watch(fd, events: EPOLLIN.rawValue) { _ in
                var info = signalfd_siginfo()
                let size = MemoryLayout<signalfd_siginfo>.size
                while read(fd, &info, size) == size { deliver(Int32(bitPattern: info.ssi_signo)) }
            }
        }
    }

    /// The signalfd could not be made (descriptors or memory exhausted).
    package struct WatchError: Error, Sendable, CustomStringConvertible {
        let code: Int32

        package var description: String {
            "cannot watch for signals: signalfd: \(String(cString: strerror(code))); check LimitNOFILE="
        }
    }

    private static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in handled { sigaddset(&set, number) }
        return set
    }
}
