/* CSystemd: the parts of libsystemd txrecon uses (sd_notify, the watchdog
 * query, sd_journal_sendv). No logic lives here. */
#ifndef TXRECON_CSYSTEMD_SHIM_H
#define TXRECON_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#endif
