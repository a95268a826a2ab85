// ProcessHardening: what a process holding secrets does to itself at start.
//
// A core dump of the daemon (or the sweep) would hold the bearer token, the
// signing secret or the App Store key in plain memory, readable by whoever
// reads the dump. The process sets its own RLIMIT_CORE to 0, which holds
// however it is started (systemd-coredump honours the limit too: it logs
// the crash and stores nothing); the units also say LimitCORE=0, where
// `systemctl show` makes it visible. PR_SET_DUMPABLE is not used: prctl(2)
// is variadic, which Swift cannot call without a C wrapper, and the
// resource limit already keeps the secrets out of every dump.
//
// libcurl, as Debian builds it, writes every TLS session's keys to the file
// SSLKEYLOGFILE names when it is set: whoever reads that file and captured
// the traffic reads the bearer token and Apple's JWTs. The variable is
// dropped before curl is initialised (its first use, after this), whoever
// set it (a debugging drop-in, an inherited environment).
import Glibc

enum ProcessHardening {
    static func apply() {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none)
        unsetenv("SSLKEYLOGFILE")
    }
}
