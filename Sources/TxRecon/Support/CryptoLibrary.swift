// CryptoLibrary: OpenSSL's process-wide set-up, made once at the top of
// main, before any thread or library (libcurl, libnats) touches OpenSSL.
//
// By default OpenSSL frees its global locks and tables from an atexit(3)
// handler. `txrecon` exits from main's thread once its command has
// returned, while the command's thread (and in the daemon, workers) may
// still be releasing certificates and keys: such a release then takes a
// freed lock, and the process dies of SIGSEGV on its way out with its
// buffered output lost (seen as `check-config` exiting 139 with nothing on
// stdout, pthread_rwlock_rdlock on a null lock in the command's thread).
// Without the handler nothing is freed at exit; the kernel reclaims it.
// Reports: nothing.
import CCrypto

package enum CryptoLibrary {
    /// Initializes libcrypto without its exit-time clean-up. Only the
    /// first initialization decides that, so call this first of all.
    package static func initializeWithoutExitCleanup() {
        _ = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil)
    }
}
