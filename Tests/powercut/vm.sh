#!/bin/bash
# vm.sh - a small Debian virtual machine whose power can be cut, for txrecon's power-cut test.
#
# SIGKILL of a process cannot test "200 only after durable": the page cache
# survives a killed process. Here the programs run in a qemu guest, and
# SIGKILL of qemu loses the guest's page cache with it, like a power cut; the
# disk keeps what the guest had written to it, and every write it had flushed.
#
# The machine: Debian's own kernel (the package linux-image-amd64 depends on,
#   fetched with `apt-get download` and unpacked with `dpkg -x`, never installed
#   on the host), a small initramfs (busybox-static from Debian, the modules
#   virtio_pci, virtio_blk, virtio_net, virtio-rng, ext4 and their dependencies,
#   e2fsck), and a raw ext4 image made with `mke2fs -d` from a debootstrap'ed
#   bookworm root (the systemd test's cached one when present), plus /txrecon:
#   the disk's init (guest/init, instead of systemd) and busybox in /txrecon/bin.
#   qemu-system-x86_64 with software emulation only (-accel tcg; /dev/kvm exists
#   on these machines but does not run guests), one CPU, user-mode networking:
#   the guest is 10.0.2.15, reaches the host's 127.0.0.1:PORT as 10.0.2.2:PORT,
#   and FWD forwards host ports (bound to 127.0.0.1 only) to guest ports.
#   Everything lives in WORKDIR; nothing on the host's /boot or configuration
#   is touched, and no image is mounted on the host (debugfs writes into it).
#
# The disk's cache mode: cache=none (O_DIRECT on the host file; see DISK_CACHE
#   below and qemu_args for why it keeps the guest's flushes honest).
#
# Usage (as root):
#   vm.sh prepare WORKDIR            fetch and unpack the kernel and busybox (once),
#                                    build the initramfs, and a fresh disk image
#   vm.sh install WORKDIR SRC DEST   copy a file or a directory tree into the image
#                                    (DEST is the path in the guest, e.g. /txrecon/start.sh)
#   vm.sh fetch WORKDIR SRC DEST     copy a file or directory out of a stopped, clean image
#   vm.sh boot WORKDIR               boot; waits for "txrecon-vm: ready", prints qemu's PID
#   vm.sh wait WORKDIR REGEX [SECS]  wait for a line matching REGEX in this boot's serial log
#   vm.sh cut WORKDIR                the power cut: SIGKILL of qemu
#   vm.sh stop WORKDIR               clean power-off (the guest runs /txrecon/stop.sh, syncs,
#                                    remounts / read-only)
#   vm.sh fsck WORKDIR               host-side `e2fsck -fn` of a stopped, clean image
#   vm.sh status WORKDIR             "running PID boot N LOG" or "stopped"
#   vm.sh log WORKDIR                the path of this (or the last) boot's serial log
#   vm.sh pid WORKDIR                qemu's PID (exit 1 when not running)
#
# In the guest, /txrecon/start.sh (if executable) is started at every boot, after the
#   disk is mounted, with TXRECON_BOOT=N and GUEST_ENV in its environment, its output on
#   the serial console; /txrecon/stop.sh (if executable) is run by `vm.sh stop`.
#
# Environment:
#   FWD="HOSTPORT:GUESTPORT ..."  TCP ports forwarded from 127.0.0.1 (boot; default none)
#   GUEST_ENV="NAME=VALUE ..."    variables for start.sh (boot; no spaces in values)
#   KERNEL_ARGS="..."             more kernel command line (boot; e.g. loglevel=7)
#   MEM=MiB (512), BOOT_TIMEOUT=s (180), FSCK=1|0 (1: the initramfs runs e2fsck -fn
#     after the mount that replays the journal, at every boot), DISK_CACHE (none)
#   DISK_SIZE (prepare; 1G), ROOT_DIR (prepare; /var/cache/txrecon-systemd-test/bookworm,
#     else debootstrap --variant=minbase bookworm into WORKDIR/rootfs from MIRROR, with
#     the packages ROOT_PACKAGES (comma-separated) included),
#   KERNEL_PKG (prepare; default what linux-image-amd64 depends on)
#
# Files in WORKDIR: kernel/ busybox/ (unpacked packages), debs/, initramfs.img,
#   disk.img, logs/serial-N.log (console of boot N; serial.log links to the latest),
#   logs/qemu-N.log (qemu's own output), boots.log (one line per boot: times, journal
#   recovery, fsck), run/ (qemu.pid, the control pipes).
#
# Exit status: 0 done; 1 failed (the reason on stderr, with the serial log's tail for a
#   boot); 2 usage or a missing tool; 3 (boot) the guest is up but its fsck found errors;
#   4 (boot) the guest stalled before its disk was mounted (qemu killed; see MOUNT_TIMEOUT).
set -Eeuo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
MEM="${MEM:-512}"
BOOT_TIMEOUT="${BOOT_TIMEOUT:-180}"
# The initramfs mounts the disk about 6 s into a boot under TCG. A guest that has not
# by MOUNT_TIMEOUT s has stalled before anything of the disk ran (seen once in CI on
# 73f79a4: no line after "initramfs at 3.69 s" for 180 s; the same disk booted ten
# times in a row afterwards); boot says so with exit status 4, and the caller
# decides whether to boot again.
MOUNT_TIMEOUT="${MOUNT_TIMEOUT:-60}"
FSCK="${FSCK:-1}"
# cache=none: see qemu_args. directsync and writethrough keep flushes as honest (the
# guest then sees a disk without a volatile cache and sends no flushes); writeback
# too, with completed writes in the host's page cache; unsafe ignores the guest's
# flushes and is refused.
DISK_CACHE="${DISK_CACHE:-none}"
DISK_SIZE="${DISK_SIZE:-1G}"
ROOT_DIR="${ROOT_DIR:-/var/cache/txrecon-systemd-test/bookworm}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
FWD="${FWD:-}"
GUEST_ENV="${GUEST_ENV:-}"

log()  { printf '[%(%H:%M:%S)T] vm.sh: %s\n' -1 "$*" >&2; }
die()  { log "$*"; exit 1; }
usage() { sed -n '/^# Usage/,/^# In the guest/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
need() { local t; for t; do command -v "$t" >/dev/null || { log "$t is missing (apt-get install ${PKG_OF[$t]:-$t})"; exit 2; }; done; }
declare -A PKG_OF=([qemu-system-x86_64]=qemu-system-x86 [mke2fs]=e2fsprogs [debugfs]=e2fsprogs
  [e2fsck]=e2fsprogs [dumpe2fs]=e2fsprogs [cpio]=cpio [dpkg]=dpkg [apt-get]=apt)

# ---------------------------------------------------------------- paths of one WORKDIR
set_workdir() {
  [ -n "${1:-}" ] || usage
  mkdir -p "$1"
  W="$(cd "$1" && pwd)"
  DISK="$W/disk.img"; RUN="$W/run"; LOGS="$W/logs"
  PIDFILE="$RUN/qemu.pid"; COUNT="$RUN/boot.count"
}

# running_pid: qemu's PID if a qemu of this WORKDIR runs (its command line names our disk).
running_pid() {
  local pid
  [ -s "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE")
  [ -r "/proc/$pid/cmdline" ] || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || return 1
  tr '\0' '\n' < "/proc/$pid/cmdline" | grep -qF "file=$DISK," || return 1
  echo "$pid"
}
not_running() { ! running_pid >/dev/null || die "a qemu (pid $(running_pid)) uses $DISK; cut or stop it first"; }
current_log() { echo "$LOGS/serial-$(cat "$COUNT" 2>/dev/null || echo 0).log"; }

# needs_recovery: the image's journal holds transactions not yet replayed (after a cut).
needs_recovery() { dumpe2fs -h "$DISK" 2>/dev/null | grep '^Filesystem features:' | grep -qw needs_recovery; }
require_clean_image() {
  [ -f "$DISK" ] || die "$DISK is missing; run 'vm.sh prepare $W'"
  not_running
  if needs_recovery; then
    die "the journal of $DISK was not replayed (its power was cut): boot it and 'vm.sh stop' it first"
  fi
}

# ---------------------------------------------------------------- debugfs, the image's only writer on the host
# debugfs_run: runs the debugfs commands on stdin against the image; fails on any error
# it reports, except the ones that mean "already there" for mkdir and "not there" for rm.
debugfs_run() {
  local out bad
  out=$(debugfs -w -f - "$DISK" 2>&1) || die "debugfs failed: $out"
  bad=$(printf '%s\n' "$out" | grep -v -e '^debugfs ' -e '^debugfs: ' \
        -e '^Allocated inode: ' -e 'Ext2 directory already exists' \
        -e 'File not found by ext2_lookup' || true)
  [ -z "$bad" ] || die "debugfs: $bad"
}
# check_name PATH: debugfs splits its commands at blanks, so paths must have none.
check_name() { case "$1" in *[[:space:]\"\']*) die "path with a blank or a quote: '$1'";; esac; }

# copy_commands SRC DEST: the debugfs commands that copy the file, symlink or tree SRC to DEST,
# with each entry's mode, owner and group (mtime becomes now).
copy_commands() {
  local src=$1 dest=$2 rel path target
  check_name "$src"; check_name "$dest"
  while IFS= read -r -d '' path; do
    rel=${path#"$src"}; check_name "$path"
    local d="$dest$rel" dir base
    dir=$(dirname "$d"); base=$(basename "$d")
    if [ -L "$path" ]; then
      target=$(readlink "$path"); check_name "$target"
      printf 'cd %s\nrm %s\nsymlink %s %s\n' "$dir" "$base" "$base" "$target"
    elif [ -d "$path" ]; then
      printf 'mkdir %s\n' "$d"
    elif [ -f "$path" ]; then
      printf 'cd %s\nrm %s\nwrite %s %s\n' "$dir" "$base" "$path" "$base"
    else
      die "neither a file, a directory nor a symlink: $path"
    fi
    [ -L "$path" ] || printf 'sif %s mode 0x%s\n' "$d" "$(stat -c %f "$path")"
    printf 'sif %s uid %s\nsif %s gid %s\n' "$d" "$(stat -c %u "$path")" "$d" "$(stat -c %g "$path")"
  done < <(find "$src" -print0)
}
# mkdir of each parent of DEST, outermost first (debugfs has no mkdir -p).
parent_commands() {
  local p=$1 parents=()
  while p=$(dirname "$p"); [ "$p" != / ]; do parents=("$p" "${parents[@]}"); done
  for p in "${parents[@]}"; do echo "mkdir $p"; done
}

cmd_install() {
  [ $# = 3 ] || usage
  set_workdir "$1"; local src=$2 dest=$3
  [ -e "$src" ] || die "$src does not exist"
  case "$dest" in /*) ;; *) die "DEST must be an absolute path in the guest: $dest";; esac
  dest=${dest%/}; src=$(realpath -s "$src"); src=${src%/}
  need debugfs dumpe2fs
  require_clean_image
  { parent_commands "$dest"; copy_commands "$src" "$dest"; } | debugfs_run
  log "installed $src as $dest"
}

cmd_fetch() {
  [ $# = 3 ] || usage
  set_workdir "$1"; local src=$2 dest=$3
  need debugfs dumpe2fs
  require_clean_image
  check_name "$src"
  local kind
  kind=$(debugfs -R "stat $src" "$DISK" 2>/dev/null | sed -n 's/.*Type: \([a-z]*\).*/\1/p' | head -1)
  case "$kind" in
    directory) # rdump makes DIR/NAME; DEST is the copy itself, as for install
      [ ! -e "$dest" ] || die "$dest exists"
      local tmp; tmp=$(mktemp -d "$(dirname "$dest")/.fetch.XXXXXX")
      debugfs -R "rdump $src $tmp" "$DISK" >/dev/null 2>&1
      mv "$tmp/$(basename "$src")" "$dest"; rmdir "$tmp" ;;
    regular)   debugfs -R "dump -p $src $dest" "$DISK" >/dev/null 2>&1 ;;
    "")        die "$src is not in the image" ;;
    *)         die "$src is a $kind; fetch copies files and directories" ;;
  esac
  log "fetched $src to $dest"
}

cmd_fsck() {
  [ $# = 1 ] || usage
  set_workdir "$1"; need e2fsck dumpe2fs
  require_clean_image
  e2fsck -fn "$DISK"
}

# ---------------------------------------------------------------- prepare
# fetch_package NAME DIR: apt-get download NAME into WORKDIR/debs (once) and dpkg -x it into DIR.
fetch_package() {
  local name=$1 dir=$2 deb
  mkdir -p "$W/debs"
  deb=$(ls "$W/debs/${name}"_*.deb 2>/dev/null | head -1 || true)
  if [ -z "$deb" ]; then
    log "downloading $name"
    (cd "$W/debs" && apt-get download -q "$name" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2) \
      || die "apt-get download $name failed (run apt-get update?)"
    deb=$(ls "$W/debs/${name}"_*.deb | head -1)
  fi
  if [ ! -e "$dir/.unpacked" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    dpkg -x "$deb" "$dir"
    basename "$deb" > "$dir/.unpacked"
  fi
}

# module_order NAME...: the modules' paths relative to the module tree, dependencies first.
module_order() {
  local -A seen=() path=()
  local f n
  while IFS= read -r f; do n=${f##*/}; n=${n%.ko}; path[${n//-/_}]=$f; done \
    < <(cd "$MODDIR" && find kernel -name '*.ko')
  visit() {
    local m=${1//-/_} d
    [ -z "${seen[$m]:-}" ] || return 0
    seen[$m]=1
    [ -n "${path[$m]:-}" ] || die "module $1 is not in $MODDIR"
    for d in $(tr '\0' '\n' < "$MODDIR/${path[$m]}" | sed -n 's/^depends=//p' | tr ',' ' '); do visit "$d"; done
    echo "${path[$m]%.ko}"
  }
  for n; do visit "$n"; done
}

# extract_vmlinux BZIMAGE ELF: the uncompressed kernel inside Debian's xz-compressed
# bzImage. qemu boots an ELF kernel with a PVH note directly (Debian's has CONFIG_PVH),
# which skips the decompression that takes the emulated CPU about 5 s at every boot.
# Without an xz payload (another kernel build), boot uses the bzImage.
extract_vmlinux() {
  local bz=$1 elf=$2 off
  [ -s "$elf" ] && return 0
  for off in $(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$bz" | cut -d: -f1); do
    tail -c +$((off + 1)) "$bz" | xz -dc > "$elf.tmp" 2>/dev/null || true
    if [ "$(head -c 4 "$elf.tmp" | od -An -c | tr -d ' ')" = 177ELF ]; then mv "$elf.tmp" "$elf"; return 0; fi
  done
  rm -f "$elf.tmp"
  log "no ELF kernel found in $bz; booting the bzImage (about 5 s slower)"
}

# copy_with_libs BINARY DIR: BINARY from the guest's root, with its shared libraries, into DIR.
copy_with_libs() {
  local bin=$1 dir=$2 lib real
  install -D -m 0755 "$GUEST_ROOT$bin" "$dir/bin/$(basename "$bin")"
  for lib in $(chroot "$GUEST_ROOT" /lib64/ld-linux-x86-64.so.2 --list "$bin" \
               | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'); do
    real=$(chroot "$GUEST_ROOT" readlink -f "$lib")
    install -D -m 0755 "$GUEST_ROOT$real" "$dir$lib"
  done
}

cmd_prepare() {
  [ $# = 1 ] || usage
  set_workdir "$1"
  need apt-get apt-cache dpkg mke2fs debugfs dumpe2fs cpio gzip xz chroot
  not_running
  mkdir -p "$RUN" "$LOGS"

  local kpkg=${KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')}
  [ -n "$kpkg" ] || die "apt-cache knows no linux-image-amd64 (run apt-get update)"
  fetch_package "$kpkg" "$W/kernel"
  fetch_package busybox-static "$W/busybox"
  KVER=${kpkg#linux-image-}
  MODDIR="$W/kernel/lib/modules/$KVER"
  [ -f "$W/kernel/boot/vmlinuz-$KVER" ] && [ -d "$MODDIR" ] || die "$kpkg has no vmlinuz-$KVER or modules"
  local bb="$W/busybox/bin/busybox"
  extract_vmlinux "$W/kernel/boot/vmlinuz-$KVER" "$W/kernel/vmlinux-$KVER"

  GUEST_ROOT=$ROOT_DIR
  if [ ! -x "$GUEST_ROOT/usr/bin/dpkg" ]; then
    GUEST_ROOT="$W/rootfs"
    if [ "$(cat "$GUEST_ROOT/.debootstrapped" 2>/dev/null)" != "include=${ROOT_PACKAGES:-}" ]; then
      need debootstrap
      log "no root in $ROOT_DIR; debootstrap --variant=minbase bookworm $GUEST_ROOT"
      rm -rf "$GUEST_ROOT"
      debootstrap --variant=minbase ${ROOT_PACKAGES:+--include="$ROOT_PACKAGES"} bookworm "$GUEST_ROOT" "$MIRROR" \
        > "$LOGS/debootstrap.log" 2>&1 \
        || die "debootstrap failed; see $LOGS/debootstrap.log"
      echo "include=${ROOT_PACKAGES:-}" > "$GUEST_ROOT/.debootstrapped"
    fi
  fi

  log "initramfs: kernel $KVER, busybox, e2fsck from $GUEST_ROOT"
  local ird="$W/initramfs.d"
  rm -rf "$ird"; mkdir -p "$ird"/{bin,dev,proc,sys,lib/modules}
  install -m 0755 "$bb" "$ird/bin/busybox"
  install -m 0755 "$HERE/guest/initramfs-init" "$ird/init"
  mknod -m 0600 "$ird/dev/console" c 5 1
  local m
  module_order virtio_pci virtio_blk virtio_net virtio-rng crc32c_generic ext4 > "$ird/modules.list.paths"
  while read -r m; do
    install -m 0644 "$MODDIR/$m.ko" "$ird/lib/modules/$(basename "$m").ko"
    basename "$m" >> "$ird/modules.list"
  done < "$ird/modules.list.paths"
  rm "$ird/modules.list.paths"
  copy_with_libs /sbin/e2fsck "$ird"
  (cd "$ird" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) > "$W/initramfs.img"
  rm -rf "$ird"

  log "disk: $DISK_SIZE ext4 image of $GUEST_ROOT"
  rm -f "$DISK"
  mke2fs -q -t ext4 -L txrecon-vm -E lazy_itable_init=0,lazy_journal_init=0 \
    -d "$GUEST_ROOT" "$DISK" "$DISK_SIZE" > /dev/null
  local ov="$W/overlay.d"
  rm -rf "$ov"; mkdir -p "$ov/txrecon/bin"
  install -m 0755 "$HERE/guest/init" "$ov/txrecon/init"
  install -m 0755 "$bb" "$ov/txrecon/bin/busybox"
  for m in $("$bb" --list); do [ "$m" = busybox ] || ln -s busybox "$ov/txrecon/bin/$m"; done
  { parent_commands /txrecon/x; copy_commands "$ov/txrecon" /txrecon; } | debugfs_run
  rm -rf "$ov"
  e2fsck -fn "$DISK" > "$LOGS/prepare-fsck.log" 2>&1 || die "the new image is not clean: $LOGS/prepare-fsck.log"

  printf 'kernel=%s\nroot=%s\nprepared=%(%F %T)T\n' "$KVER" "$GUEST_ROOT" -1 > "$W/prepared"
  echo 0 > "$COUNT"; rm -f "$W/boots.log" "$RUN/last-cut"
  log "prepared $W (kernel $KVER, $(du -h --apparent-size "$DISK" | cut -f1) image, $(du -h "$DISK" | cut -f1) used on the host)"
}

# ---------------------------------------------------------------- boot, wait, cut, stop
# qemu_args N: qemu's command line for boot N.
qemu_args() {
  local n=$1 kver kernel fwd="" p
  kver=$(sed -n 's/^kernel=//p' "$W/prepared")
  kernel="$W/kernel/vmlinux-$kver"
  [ -s "$kernel" ] || kernel="$W/kernel/boot/vmlinuz-$kver"
  for p in $FWD; do
    [[ $p =~ ^[0-9]+:[0-9]+$ ]] || die "FWD entry '$p' is not HOSTPORT:GUESTPORT"
    fwd+=",hostfwd=tcp:127.0.0.1:${p%%:*}-:${p##*:}"
  done
  local append="console=ttyS0 panic=-1 loglevel=4 txrecon.boot=$n txrecon.fsck=$FSCK${KERNEL_ARGS:+ $KERNEL_ARGS}"
  for p in $GUEST_ENV; do
    [[ $p =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]] || die "GUEST_ENV entry '$p' is not NAME=VALUE"
    append+=" txrecon.env.$p"
  done
  # The disk's cache mode. cache=none: qemu opens the image with O_DIRECT and shows
  # the guest a disk with a volatile write cache (virtio-blk's FLUSH feature; the
  # guest's /sys/block/vda/queue/write_cache says "write back", as on a real server
  # disk), so ext4 in the guest sends a flush for every fsync and journal commit,
  # as it would on hardware. qemu completes a write request once pwrite() to the
  # host file returned, and a flush only once fdatasync() of the host file
  # returned: when the guest's fsync returns, what it covers is in the host file
  # and on the host's disk. SIGKILL of qemu then loses what the guest had not yet
  # written out (its page cache, and requests still in flight, which the guest
  # never saw complete), and keeps what it flushed. cache=unsafe would complete
  # flushes without fdatasync(), so "flushed" would no longer mean "on the host's
  # disk", and it is refused.
  # What no cache mode emulates: a qemu killed keeps every write it had completed,
  # flushed or not (the host kernel holds them), as if the disk's volatile cache
  # survived the cut. The test thus loses the guest's page cache, which is what
  # SIGKILL of the daemon cannot lose, but not a disk's cache; a program whose
  # durability depends on the disk's flush (rather than on fsync) is not tested.
  case "$DISK_CACHE" in
    none|directsync|writethrough|writeback) ;;
    *) die "DISK_CACHE=$DISK_CACHE refused: use none, directsync, writethrough or writeback" ;;
  esac
  # -cpu qemu64: under TCG "max" boots 2 s slower (more to emulate; 5-level paging).
  QEMU=(qemu-system-x86_64 -name "txrecon-vm,process=txrecon-vm" -accel tcg -M pc -cpu qemu64
    -smp 1 -m "$MEM" -nographic -monitor none -no-reboot -nodefaults -no-user-config
    -kernel "$kernel" -initrd "$W/initramfs.img" -append "$append"
    -chardev "file,id=con,path=$LOGS/serial-$n.log" -serial chardev:con
    -chardev "pipe,id=ctl,path=$RUN/ctl" -serial chardev:ctl
    -drive "file=$DISK,if=none,id=disk0,format=raw,cache=$DISK_CACHE,aio=threads"
    -device virtio-blk-pci,drive=disk0
    -netdev "user,id=net0$fwd" -device virtio-net-pci,netdev=net0,romfile=
    -device virtio-rng-pci
    -pidfile "$PIDFILE")
}

# serial_tail: the end of the current boot's console, for a failure message.
serial_tail() { local f; f=$(current_log); [ -f "$f" ] && tail -n "${1:-30}" "$f" | sed 's/^/  | /' >&2; true; }

cmd_boot() {
  [ $# = 1 ] || usage
  set_workdir "$1"; need qemu-system-x86_64
  [ -f "$W/prepared" ] && [ -f "$DISK" ] || die "run 'vm.sh prepare $W' first"
  not_running
  local n=$(( $(cat "$COUNT" 2>/dev/null || echo 0) + 1 ))
  qemu_args "$n"
  echo "$n" > "$COUNT"
  rm -f "$PIDFILE" "$RUN/ctl.in" "$RUN/ctl.out"
  mkfifo "$RUN/ctl.in" "$RUN/ctl.out"
  : > "$LOGS/serial-$n.log"
  ln -sfn "logs/serial-$n.log" "$W/serial.log"
  printf '%q ' "${QEMU[@]}" > "$RUN/qemu.cmdline"
  local t0; t0=$(now_ms)
  setsid "${QEMU[@]}" < /dev/null > "$LOGS/qemu-$n.log" 2>&1 &
  local spawned=$!
  local serial="$LOGS/serial-$n.log" deadline=$(( t0 + BOOT_TIMEOUT * 1000 ))
  local mount_deadline=$(( t0 + MOUNT_TIMEOUT * 1000 ))
  until grep -q '^txrecon-vm: ready' "$serial"; do
    if ! kill -0 "$spawned" 2>/dev/null || grep -q '^txrecon-vm: FAILED' "$serial"; then
      sleep 0.5; kill -KILL "$spawned" 2>/dev/null || true
      log "boot $n failed; qemu said: $(tr '\n' ' ' < "$LOGS/qemu-$n.log")"; serial_tail; exit 1
    fi
    if [ "$(now_ms)" -gt "$mount_deadline" ] && ! grep -q '^txrecon-vm: mounted' "$serial"; then
      kill -KILL "$spawned" 2>/dev/null || true
      wait "$spawned" 2>/dev/null || true
      rm -f "$PIDFILE"
      log "boot $n: the guest did not mount its disk within $MOUNT_TIMEOUT s; qemu killed"; serial_tail; exit 4
    fi
    if [ "$(now_ms)" -gt "$deadline" ]; then
      kill -KILL "$spawned" 2>/dev/null || true
      log "boot $n: no 'txrecon-vm: ready' within $BOOT_TIMEOUT s; qemu killed"; serial_tail; exit 1
    fi
    sleep 0.2
  done
  local t1; t1=$(now_ms)
  [ "$(cat "$PIDFILE" 2>/dev/null)" = "$spawned" ] || die "qemu's pidfile does not name $spawned"
  local since_cut=- recovery=no fsck=off uptime
  [ -s "$RUN/last-cut" ] && since_cut=$(( t1 - $(cat "$RUN/last-cut") ))
  rm -f "$RUN/last-cut"
  grep -q '^txrecon-vm: recovery: .*recovery complete' "$serial" && recovery=yes
  [ "$FSCK" = 1 ] && fsck=$(sed -n 's/^txrecon-vm: fsck: \(clean\|FAILED\).*/\1/p' "$serial" | head -1)
  uptime=$(sed -n 's/^txrecon-vm: ready .*uptime=\([0-9.]*\).*/\1/p' "$serial")
  printf 'boot=%s ready_ms=%s since_cut_ms=%s guest_uptime_s=%s journal_recovered=%s fsck=%s\n' \
    "$n" $(( t1 - t0 )) "$since_cut" "$uptime" "$recovery" "${fsck:-missing}" >> "$W/boots.log"
  log "boot $n ready in $(( t1 - t0 )) ms (guest uptime $uptime s, journal recovered: $recovery, fsck: ${fsck:-missing}); serial log $serial"
  echo "$spawned"
  if [ "$FSCK" = 1 ] && [ "$fsck" != clean ]; then
    log "boot $n: the guest's e2fsck found errors (the VM is left running)"; serial_tail 60; exit 3
  fi
}

cmd_wait() {
  [ $# -ge 2 ] && [ $# -le 3 ] || usage
  set_workdir "$1"; local re=$2 secs=${3:-60} log
  log=$(current_log)
  local deadline=$(( $(now_ms) + secs * 1000 ))
  until grep -qE -- "$re" "$log" 2>/dev/null; do
    running_pid >/dev/null || { log "qemu is not running; no line matches '$re'"; serial_tail; exit 1; }
    [ "$(now_ms)" -lt "$deadline" ] || { log "no line matches '$re' within $secs s"; serial_tail; exit 1; }
    sleep 0.2
  done
}

cmd_cut() {
  [ $# = 1 ] || usage
  set_workdir "$1"
  local pid; pid=$(running_pid) || die "no qemu runs for $W"
  kill -KILL "$pid"
  now_ms > "$RUN/last-cut"
  local i
  for i in $(seq 100); do running_pid >/dev/null || break; sleep 0.05; done
  ! running_pid >/dev/null || die "qemu $pid survived SIGKILL"
  rm -f "$PIDFILE"
  log "power cut: qemu $pid killed (boot $(cat "$COUNT"))"
}

cmd_stop() {
  [ $# = 1 ] || usage
  set_workdir "$1"
  local pid; pid=$(running_pid) || die "no qemu runs for $W"
  timeout 5 sh -c "echo poweroff > '$RUN/ctl.in'" || die "cannot write to the guest's control line"
  local deadline=$(( $(now_ms) + 60000 ))
  while running_pid >/dev/null; do
    if [ "$(now_ms)" -gt "$deadline" ]; then
      kill -KILL "$pid"; now_ms > "$RUN/last-cut"; log "no clean power-off within 60 s: power cut instead"; serial_tail; exit 1
    fi
    sleep 0.2
  done
  rm -f "$PIDFILE"
  grep -q '^txrecon-vm: powered off cleanly' "$(current_log)" || { log "the guest did not power off cleanly"; serial_tail; exit 1; }
  log "powered off cleanly (boot $(cat "$COUNT"))"
}

cmd_status() {
  [ $# = 1 ] || usage
  set_workdir "$1"
  local pid
  if pid=$(running_pid); then echo "running $pid boot $(cat "$COUNT") $(current_log)"; else echo stopped; fi
}
cmd_log() { [ $# = 1 ] || usage; set_workdir "$1"; current_log; }
cmd_pid() { [ $# = 1 ] || usage; set_workdir "$1"; running_pid; }

[ $# -ge 1 ] || usage
[ "$(id -u)" = 0 ] || { echo "vm.sh: must run as root" >&2; exit 2; }
cmd=$1; shift
case "$cmd" in
  prepare|install|fetch|fsck|boot|wait|cut|stop|status|log|pid) "cmd_$cmd" "$@" ;;
  *) usage ;;
esac
