#!/bin/sh
# owner_away.sh with an owner that cannot migrate most of the time: spin -M
# burns its CPU in the kernel with migration disabled (BPF_PROG_TEST_RUN's
# loop, preemptible), so it is mostly preempted inside migrate_disable(),
# its nr_cpus_allowed unchanged. Found away from its representative so (it
# got its object while it ran elsewhere, or it was moved off), it must be
# queued where it is: the kernel ends a scheduler that puts a
# migration-disabled task into another CPU's local queue (7.1+, "cannot
# move migration disabled"), and no other CPU could run it from a queue.
# The scheduler stays attached, the owner reaches its representative.
OWNER_SPIN=-M . /opt/chameleon/guest/owner_away.sh
