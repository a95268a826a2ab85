/* CNATS: the NATS C client (libnats, Debian's libnats-dev) for Swift, for
 * the JetStream destination. No logic lives here. */
#ifndef TXRECON_CNATS_SHIM_H
#define TXRECON_CNATS_SHIM_H
#include <nats/nats.h>
#endif
