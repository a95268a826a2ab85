/* CGlibcExtras: glibc functions Swift's Glibc module leaves out: malloc_trim,
 * to hand memory freed after start-up back to the kernel, epoll(7),
 * eventfd(2) and signalfd(2) for the event loops (ThreadExecutor,
 * DaemonSignals), renameat2, syncfs
 * and O_PATH, the last three declared here because glibc declares them only under
 * _GNU_SOURCE, which the Glibc module is built without. No logic lives here. */
#ifndef TXRECON_CGLIBCEXTRAS_SHIM_H
#define TXRECON_CGLIBCEXTRAS_SHIM_H
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>

/* renameat2(2), glibc 2.28 and later; fails with EEXIST under
 * RENAME_NOREPLACE when the new path exists, EINVAL where the file system
 * does not support the flag. */
extern int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags);
#define TXR_RENAME_NOREPLACE (1 << 0)

/* syncfs(2), glibc 2.14 and later: writes out every dirty page and inode of
 * the file system that holds fd, and waits for it. */
extern int syncfs(int fd);

/* open(2)'s O_PATH: a descriptor that only names a directory for the *at(2)
 * calls (asm-generic/fcntl.h, the same on x86-64 and arm64). */
#define TXR_O_PATH 010000000
#endif
