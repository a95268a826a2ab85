/* CSQLite: SQLite 3 (Debian's libsqlite3-dev) for Swift, for the ledger of
 * what each destination confirmed. No logic lives here. */
#ifndef TXRECON_CSQLITE_SHIM_H
#define TXRECON_CSQLITE_SHIM_H
#include <sqlite3.h>

/* SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot
 * import: SQLite copies the bound bytes before the call returns. */
static inline void (*txrecon_sqlite_transient(void))(void *) { return SQLITE_TRANSIENT; }
/* sqlite3_config is variadic, which Swift cannot call: SQLite's memory
 * statistics off (a global mutex taken around every allocation it makes,
 * for counters txrecon never reads), as SQLite's own documentation advises
 * for speed. Only before the first connection opens; SQLITE_MISUSE after. */
static inline int txrecon_sqlite_disable_memory_statistics(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
