/* CMalloc: glibc's malloc extensions, which Swift's Glibc module leaves out
 * (malloc_trim, to hand memory freed after start-up back to the kernel).
 * No logic lives here. */
#ifndef TXRECON_CMALLOC_SHIM_H
#define TXRECON_CMALLOC_SHIM_H
#include <malloc.h>
#endif
