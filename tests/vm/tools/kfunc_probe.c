// SPDX-License-Identifier: GPL-2.0
/*
 * kfunc_probe: may this process load a BPF program that calls one of
 * chameleon_proxy's kfuncs? The module lets only its owner's process load
 * one, and only as a syscall program or a sched_ext struct_ops program
 * (chameleon_proxy.h): any other program that could call them could lend CPUs
 * and move IRQs behind the agent's back.
 *
 *   kfunc_probe [-v] [--open | --claim] [--hold SECONDS] [--pin PATH] [PROGRAM]
 *   kfunc_probe --run PATH
 *
 * PROGRAM is the smallest program that calls chameleon_proxy_abi():
 *   syscall      BPF_PROG_TYPE_SYSCALL (sleepable, as libbpf loads the
 *                agent's SEC("syscall") park program)
 *   sched_ext    BPF_PROG_TYPE_STRUCT_OPS for sched_ext_ops.init
 *   tcp_cong     BPF_PROG_TYPE_STRUCT_OPS for tcp_congestion_ops.init: a
 *                struct_ops program that is not a scheduler
 *   socket       BPF_PROG_TYPE_SOCKET_FILTER: a type the module registers
 *                its kfuncs for in no case, refused by the verifier alone
 * or one that changes the module's state:
 *   lend CPU REP a syscall program returning chameleon_proxy_lend(CPU, REP,
 *                GEN), GEN the owner generation our CLAIM answered (ABI 4;
 *                0 without --claim; an ABI 3 module's kfunc takes two
 *                arguments and ignores the third register)
 * --open opens /dev/chameleon_proxy first, --claim also makes this file its
 * owner (CLAIM); either way the file stays open until we exit. --hold keeps
 * everything (device, program) for SECONDS before exiting, so that another
 * process can try while we own the module; without PROGRAM it prints
 * "claimed" (or "opened") once it holds the device. --pin pins a loaded
 * program at PATH (in bpffs), where it outlives us and our claim. -v copies
 * the whole verifier log to stderr.
 *
 * Prints one line: "loaded", or "refused E<NAME> (<errno>)" and, if the
 * verifier logged why, ": <that line>"; exits 0 either way: the verdict is
 * the caller's.
 * --run runs the syscall program pinned at PATH once (BPF_PROG_RUN), in
 * this process, which need not own the module, and prints "ret N": its
 * return value as a signed int (for lend: 0 or -errno).
 * Anything else that goes wrong (no module BTF, a failed CLAIM) is a tool
 * error: a line on stderr and exit 1; bad usage exits 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

#include "chameleon_proxy.h"

#define MODULE_NAME	"chameleon_proxy"
#define KFUNC_ABI	"chameleon_proxy_abi"
#define KFUNC_LEND	"chameleon_proxy_lend"
/* Far more than the verifier says of three instructions: never truncated. */
#define LOG_SIZE	(1 << 20)

static const char *errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "ok";

	return n ? n : "E?";
}

static void die(const char *what, int e)
{
	fprintf(stderr, "kfunc_probe: %s: %s (%s)\n", what, errname(e), strerror(e));
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: kfunc_probe [-v] [--open | --claim] [--hold SECONDS] [--pin PATH] [syscall|sched_ext|tcp_cong|socket|lend CPU REP]\n"
		"       kfunc_probe --run PATH\n");
	exit(2);
}

/*
 * The module's BTF object, by name among the kernel's: its fd goes into the
 * program's fd_array, which is how a kfunc call names the module it calls.
 */
static int module_btf_fd(__u32 *btf_id)
{
	__u32 id = 0;

	for (;;) {
		struct bpf_btf_info info;
		__u32 len = sizeof(info);
		char name[64];
		int fd;

		if (bpf_btf_get_next_id(id, &id)) {
			if (errno == ENOENT) {
				fprintf(stderr, "kfunc_probe: no BTF named " MODULE_NAME
					": module not loaded, or built without BTF\n");
				exit(1);
			}
			die("BPF_BTF_GET_NEXT_ID", errno);
		}
		fd = bpf_btf_get_fd_by_id(id);
		if (fd < 0) {
			if (errno == ENOENT)	/* freed since: another module gone */
				continue;
			die("BPF_BTF_GET_FD_BY_ID", errno);
		}
		memset(&info, 0, sizeof(info));
		memset(name, 0, sizeof(name));
		info.name = (uintptr_t)name;
		info.name_len = sizeof(name);
		if (bpf_btf_get_info_by_fd(fd, &info, &len))
			die("BPF_OBJ_GET_INFO_BY_FD (BTF)", errno);
		if (info.kernel_btf && !strcmp(name, MODULE_NAME)) {
			*btf_id = id;
			return fd;
		}
		close(fd);
	}
}

static __s32 find_type(const struct btf *btf, const char *name, __u32 kind)
{
	__s32 id = btf__find_by_name_kind(btf, name, kind);

	if (id < 0) {
		fprintf(stderr, "kfunc_probe: no %s '%s' in the kernel's BTF\n",
			kind == BTF_KIND_FUNC ? "function" : "struct", name);
		exit(1);
	}
	return id;
}

/* A struct_ops member is named to the verifier by its index in the struct. */
static __u32 member_index(const struct btf *btf, __s32 struct_id, const char *member)
{
	const struct btf_type *t = btf__type_by_id(btf, struct_id);
	const struct btf_member *m = btf_members(t);
	__u32 i;

	for (i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
			return i;
	fprintf(stderr, "kfunc_probe: no member '%s' in struct %s\n", member,
		btf__name_by_offset(btf, t->name_off));
	exit(1);
}

/*
 * The verifier's last word: the line that says why it gave up. Its
 * statistics ("processed N insns ...", "verification time ...") follow even a
 * refusal, and 7.x adds a report after a blank line ("Verification failed:
 * ...", the instructions, a suggestion), which 6.x does not have.
 */
static const char *last_line(char *log)
{
	char *blank = strstr(log, "\n\n");
	size_t n;
	char *p;

	if (blank)
		blank[1] = 0;
	n = strlen(log);
	for (;;) {
		while (n && log[n - 1] == '\n')
			log[--n] = 0;
		p = strrchr(log, '\n');
		p = p ? p + 1 : log;
		if (p == log || (strncmp(p, "processed ", 10) &&
				 strncmp(p, "verification time ", 18)))
			return p;
		n = p - log;
		log[n] = 0;
	}
}

/* The owner generation our CLAIM answered, 0 if none. */
static __u64 generation;

static int open_device(int claim)
{
	struct chameleon_proxy_claim c;
	int fd = open("/dev/chameleon_proxy", O_RDWR);

	if (fd < 0)
		die("open /dev/chameleon_proxy", errno);
	if (!claim)
		return fd;
	memset(&c, 0, sizeof(c));
	if (ioctl(fd, CHAMELEON_PROXY_IOC_CLAIM, &c))
		die("CLAIM", errno);
	generation = c.generation;
	return fd;
}

/* A CPU id for the lend program: a non-negative int. */
static int parse_cpu(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || !*s || v < 0 || v > INT_MAX)
		usage();
	return v;
}

/* --run: the pinned syscall program, once, without a context. */
static int run_pinned(const char *path)
{
	LIBBPF_OPTS(bpf_test_run_opts, topts);
	int prog = bpf_obj_get(path);

	if (prog < 0)
		die(path, errno);
	if (bpf_prog_test_run_opts(prog, &topts))
		die("BPF_PROG_RUN", errno);
	printf("ret %d\n", (int)topts.retval);
	return 0;
}

int main(int argc, char **argv)
{
	/*
	 * abi: call chameleon_proxy_abi; r0 = 0; exit.
	 * lend: r1 = CPU; r2 = REP; r3 = GEN (ld_imm64: two instructions);
	 * call chameleon_proxy_lend; exit.
	 * .off = 1 in a call: fd_array[1].
	 */
	struct bpf_insn abi_insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_KFUNC_CALL, .off = 1 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_insn lend_insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2 },
		{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_3 },
		{ .imm = 0 },
		{ .code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_KFUNC_CALL, .off = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	/*
	 * A kfunc call's .off indexes fd_array for its module's BTF fd; 0
	 * means vmlinux, so slot 0 is never read (-1: no fd).
	 */
	int fd_array[2] = { -1, -1 };
	LIBBPF_OPTS(bpf_prog_load_opts, opts);
	enum bpf_prog_type type = BPF_PROG_TYPE_UNSPEC;
	const char *what = NULL, *st_name = NULL, *pin = NULL;
	int open_dev = 0, claim = 0, verbose = 0, dev = -1, prog, e, i;
	struct bpf_insn *insns = abi_insns;
	size_t nr_insns = sizeof(abi_insns) / sizeof(abi_insns[0]);
	int call = 0, lend = 0;
	struct btf *vmlinux, *mod;
	unsigned long hold = 0;
	char *log, *end;
	__u32 mod_id;

	if (argc == 3 && !strcmp(argv[1], "--run"))
		return run_pinned(argv[2]);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v")) {
			verbose = 1;
		} else if (!strcmp(argv[i], "--open")) {
			open_dev = 1;
		} else if (!strcmp(argv[i], "--claim")) {
			claim = 1;
		} else if (!strcmp(argv[i], "--pin") && i + 1 < argc) {
			pin = argv[++i];
		} else if (!strcmp(argv[i], "--hold") && i + 1 < argc) {
			const char *s = argv[++i];

			errno = 0;
			hold = strtoul(s, &end, 10);
			if (errno || *end || !*s || *s == '-' || hold > UINT_MAX)
				usage();
		} else {
			usage();
		}
	}
	what = i < argc ? argv[i++] : NULL;
	if (what && !strcmp(what, "lend")) {
		if (i + 2 > argc)
			usage();
		lend = 1;
		insns = lend_insns;
		nr_insns = sizeof(lend_insns) / sizeof(lend_insns[0]);
		insns[0].imm = parse_cpu(argv[i++]);
		insns[1].imm = parse_cpu(argv[i++]);
		call = 4;
	}
	if (i < argc || (open_dev && claim) || (!what && !hold) ||
	    (hold && !open_dev && !claim) || (pin && !what))
		usage();
	if (what && (!strcmp(what, "syscall") || lend)) {
		type = BPF_PROG_TYPE_SYSCALL;
		/* The kernel takes syscall programs sleepable only. */
		opts.prog_flags = BPF_F_SLEEPABLE;
	} else if (what && !strcmp(what, "sched_ext")) {
		type = BPF_PROG_TYPE_STRUCT_OPS;
		st_name = "sched_ext_ops";
	} else if (what && !strcmp(what, "tcp_cong")) {
		type = BPF_PROG_TYPE_STRUCT_OPS;
		st_name = "tcp_congestion_ops";
	} else if (what && !strcmp(what, "socket")) {
		type = BPF_PROG_TYPE_SOCKET_FILTER;
	} else if (what) {
		usage();
	}

	/* Before the load: the filter looks at who owns the module then. */
	if (open_dev || claim)
		dev = open_device(claim);
	if (lend) {
		insns[2].imm = (__u32)generation;
		insns[3].imm = (__u32)(generation >> 32);
	}
	if (!what) {
		printf("%s\n", claim ? "claimed" : "opened");
		fflush(stdout);
		sleep(hold);
		return 0;
	}

	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux)
		die("vmlinux BTF", errno);
	fd_array[1] = module_btf_fd(&mod_id);
	mod = btf__load_from_kernel_by_id_split(mod_id, vmlinux);
	if (!mod)
		die("load the module's BTF", errno);
	/* Split BTF: the module's ids follow vmlinux's, as the kernel numbers them. */
	insns[call].imm = find_type(mod, lend ? KFUNC_LEND : KFUNC_ABI, BTF_KIND_FUNC);
	if (st_name) {
		/* init: s32 (void) in sched_ext_ops, void (struct sock *) in tcp's. */
		opts.attach_btf_id = find_type(vmlinux, st_name, BTF_KIND_STRUCT);
		opts.expected_attach_type = member_index(vmlinux, opts.attach_btf_id, "init");
	}

	log = calloc(1, LOG_SIZE);
	if (!log)
		die("calloc", errno);
	opts.fd_array = fd_array;
	opts.log_buf = log;
	opts.log_size = LOG_SIZE;
	opts.log_level = 1;
	/* Struct_ops and kfunc calls both need a GPL-compatible program. */
	prog = bpf_prog_load(type, "kfunc_probe", "GPL", insns, nr_insns, &opts);
	if (verbose)
		fprintf(stderr, "%s", log);
	if (prog >= 0) {
		if (pin && bpf_obj_pin(prog, pin))
			die(pin, errno);
		printf("loaded\n");
	} else {
		const char *why = last_line(log);	/* after -v's copy: it cuts */

		e = -prog;
		printf("refused %s (%d)%s%s\n", errname(e), e, *why ? ": " : "", why);
	}
	fflush(stdout);
	if (hold)
		sleep(hold);
	/* dev and prog go with the process: the module's release, the prog's free. */
	(void)dev;
	return 0;
}
