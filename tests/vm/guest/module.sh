#!/bin/sh
# (e) chameleon_proxy inserts, answers its INFO ioctl, refuses a bad ioctl
# with ENOTTY, and removes cleanly.
. /opt/chameleon/guest/lib.sh

ko=/opt/chameleon/chameleon_proxy.ko
insmod "$ko" || fail "insmod failed"
[ -d /sys/module/chameleon_proxy ] || fail "/sys/module/chameleon_proxy missing"
[ -c /dev/chameleon_proxy ] || fail "/dev/chameleon_proxy missing"
ok "inserted: $(dmesg | grep 'chameleon_proxy: loaded' | tail -n 1)"
out=$(proxy_ctl info) || fail "INFO ioctl failed: $out"
echo "$out" | grep -q "abi_version=4 nr_cpu_ids=$(nproc)" || fail "unexpected INFO: $out"
ok "INFO: $out"
out=$(proxy_ctl bad-ioctl) || fail "bad ioctl: $out"
ok "$out"
rmmod chameleon_proxy || fail "rmmod failed"
[ ! -d /sys/module/chameleon_proxy ] || fail "module still present after rmmod"
[ ! -e /dev/chameleon_proxy ] || fail "/dev/chameleon_proxy left behind"
ok "removed cleanly"
# Twice more: insert/remove must be repeatable.
for i in 1 2; do insmod "$ko" && rmmod chameleon_proxy || fail "cycle $i failed"; done
ok "insert/remove cycles repeat"
pass
