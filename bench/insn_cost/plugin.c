// SPDX-License-Identifier: GPL-2.0
/*
 * insn_cost: a QEMU TCG plugin that counts the guest instructions each call
 * made from BPF JIT code costs, everything the vCPU runs between the call and
 * its return included (the kfuncs and helpers it calls, the kernel code they
 * run, a lock's spinning), and charges the count to the call site. It also
 * charges whole functions of JIT code entered from the kernel (a BPF
 * timer's callback, a struct_ops trampoline, a tracing program) to their
 * entry point, and counts `pause` instructions (spinning) on their own.
 *
 * Only what runs inside a window counts: a guest program executes `cpuid`
 * with eax = INSN_COST_START or INSN_COST_STOP and ecx = the window's id
 * (1..63); the plugin sees it before the instruction runs. A frame belongs
 * to the window that was open when its call was made.
 *
 * Load: qemu-system-x86_64 -accel tcg,thread=multi
 *         -plugin insn_cost.so,out=FILE[,jit_base=0xffffffffc0000000]
 * Multi-threaded TCG only: with thread=single QEMU >= 10 shares translated
 * blocks between vCPUs and per-vCPU callbacks see the wrong vCPU
 * (tests/vm/run refuses --plugin without --mttcg).
 *
 * How a call is followed (per vCPU, a shadow stack of open frames):
 *  - every translated block adds its instruction count to the vCPU's
 *    counter when it starts (an inline op: no call into the plugin);
 *  - a `call` in JIT code pushes {return address, stack pointer, counter};
 *  - the first instruction of every JIT block has a conditional callback
 *    that fires only when the block's address is the return address of the
 *    frame on top (an inline comparison with the scoreboard): with the
 *    stack pointer as at the call it pops the frame and charges the site;
 *  - an `endbr64` that starts a JIT block with no call frame just made for
 *    it is a function entered from outside the JIT code: an entry frame,
 *    closed by the `ret` that runs with the stack pointer of the entry;
 *  - a frame whose stack is unwound past without its return having been
 *    seen (a new call at or above its stack pointer, same stack) is
 *    dropped and counted as lost.
 *
 * Output (FILE, at exit), one record a line:
 *   window ID insns N pauses P               every vCPU, over the window
 *   site ID KIND SITE TARGET CALLS INSNS PAUSES MAX
 *       KIND call: SITE the call instruction, TARGET its direct target (0
 *       when indirect), INSNS the sum over CALLS of the instructions from
 *       the call to the return, both included; entry: SITE the entry
 *       point, TARGET 0, INSNS from the entry to its `ret`, both included;
 *       nested: an entry while another frame was open (a helper's
 *       callback, e.g. bpf_loop's: its instructions are in that frame's).
 *   health lost L mismatch M overflow O sites S dropped D reg_fail R
 *
 * The QEMU plugin API (version 7) is declared here, function by function,
 * for what this file uses: no qemu-plugin.h or glib header is needed. Each
 * name is one qemu-system-x86_64 exports (nm -D), with the argument order
 * its code shows: callbacks do not receive the plugin id, registrations
 * take a trailing user data pointer.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- QEMU plugin API, version 7 (the part used here) --- */
#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qp_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_scoreboard;
struct qemu_plugin_register;

/* A u64 field of a scoreboard (a per-vCPU array), passed by value. */
struct qp_u64 {
	struct qemu_plugin_scoreboard *score;
	size_t offset;
};

enum qp_cb_flags { QP_NO_REGS, QP_R_REGS, QP_RW_REGS };
enum qp_cond {
	QP_COND_NEVER, QP_COND_ALWAYS, QP_COND_EQ, QP_COND_NE,
	QP_COND_LT, QP_COND_LE, QP_COND_GT, QP_COND_GE,
};
enum qp_op { QP_INLINE_ADD_U64, QP_INLINE_STORE_U64 };

/* An element of qemu_plugin_get_registers()'s array (32 bytes). */
struct qp_reg_desc {
	struct qemu_plugin_register *handle;
	const char *name;
	const char *feature;
	bool read_only;
};

/* The public heads of glib's GArray and GByteArray. */
struct g_array {
	char *data;
	unsigned int len;
};

struct g_byte_array {
	uint8_t *data;
	unsigned int len;
};

typedef void (*qp_vcpu_udata_cb)(unsigned int vcpu, void *udata);
typedef void (*qp_tb_trans_cb)(struct qemu_plugin_tb *tb, void *udata);
typedef void (*qp_udata_cb)(void *udata);

void qemu_plugin_register_vcpu_init_cb(qp_id_t id, qp_vcpu_udata_cb cb, void *udata);
void qemu_plugin_register_vcpu_tb_trans_cb(qp_id_t id, qp_tb_trans_cb cb, void *udata);
void qemu_plugin_register_atexit_cb(qp_id_t id, qp_udata_cb cb, void *udata);
void qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(struct qemu_plugin_tb *tb, enum qp_op op,
							struct qp_u64 entry, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(struct qemu_plugin_insn *insn,
							  enum qp_op op, struct qp_u64 entry,
							  uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qp_vcpu_udata_cb cb,
					    enum qp_cb_flags flags, void *udata);
void qemu_plugin_register_vcpu_insn_exec_cond_cb(struct qemu_plugin_insn *insn,
						 qp_vcpu_udata_cb cb, enum qp_cb_flags flags,
						 enum qp_cond cond, struct qp_u64 entry,
						 uint64_t imm, void *udata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
size_t qemu_plugin_insn_data(const struct qemu_plugin_insn *insn, void *dest, size_t len);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
struct qemu_plugin_scoreboard *qemu_plugin_scoreboard_new(size_t element_size);
void *qemu_plugin_scoreboard_find(struct qemu_plugin_scoreboard *score, unsigned int vcpu);
uint64_t qemu_plugin_u64_sum(struct qp_u64 entry);
struct g_array *qemu_plugin_get_registers(void);
bool qemu_plugin_read_register(struct qemu_plugin_register *handle, struct g_byte_array *buf);
void qemu_plugin_outs(const char *string);

/* glib, which QEMU has loaded (resolved when the plugin is). */
struct g_byte_array *g_byte_array_new(void);
struct g_byte_array *g_byte_array_set_size(struct g_byte_array *array, unsigned int len);

EXPORT int qemu_plugin_version = 7;

/* --- the plugin --- */
#define INSN_COST_START 0x43484d53u /* "CHMS" */
#define INSN_COST_STOP 0x43484d45u  /* "CHME" */
#define MAX_WINDOWS 64
#define MAX_VCPUS 1024
#define DEPTH 64
#define STACK_SPAN 16384 /* a kernel stack (THREAD_SIZE) */
#define TAB_BITS 12
#define MAX_SITES (1 << 18)

enum kind { K_CALL, K_ENTRY, K_NESTED };

/* What each vCPU's inline ops and conditions read (one scoreboard element). */
struct sb {
	uint64_t insns;     /* instructions run, added per block at its start */
	uint64_t pauses;    /* pause instructions run */
	uint64_t top_ret;   /* return address of the call frame on top, or 0 */
	uint64_t top_entry; /* 1 when the frame on top is an entry frame */
};

struct frame {
	uint64_t ret, sp, site, target, insns0, pauses0;
	uint32_t window, kind;
};

struct site_stat {
	uint64_t site, target, calls, insns, pauses, max;
	uint32_t window, kind;
};

struct vcpu {
	struct frame stack[DEPTH];
	int depth;
	struct g_byte_array *buf;
	struct site_stat *tab; /* 1 << TAB_BITS entries, open addressing */
	uint64_t lost, mismatch, overflow, dropped, reg_fail;
};

/* A call instruction, as translated (the callback's user data). */
struct site {
	uint64_t vaddr, target;
	uint32_t len;
};

struct window {
	uint64_t insns0, pauses0, insns, pauses;
	int seen;
};

static struct qemu_plugin_scoreboard *score;
static struct qp_u64 sb_insns, sb_pauses, sb_top_ret, sb_top_entry;
static struct vcpu *vcpus[MAX_VCPUS];
static struct qemu_plugin_register *reg_rsp, *reg_rax, *reg_rcx;
static uint64_t jit_base = 0xffffffffc0000000ull;
static char *out_path;
static volatile uint32_t cur_window;
static struct window windows[MAX_WINDOWS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct site *sites;
static uint32_t *site_index; /* hash of sites: index + 1, 0 = free */
static uint32_t nr_sites;

static inline struct sb *sb_of(unsigned int vcpu)
{
	return qemu_plugin_scoreboard_find(score, vcpu);
}

static uint64_t read_reg(struct vcpu *v, struct qemu_plugin_register *reg)
{
	uint64_t val = 0;

	g_byte_array_set_size(v->buf, 0);
	if (!qemu_plugin_read_register(reg, v->buf) || v->buf->len < 4) {
		v->reg_fail++;
		return 0;
	}
	memcpy(&val, v->buf->data, v->buf->len < 8 ? v->buf->len : 8);
	return val;
}

static inline uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void record(struct vcpu *v, const struct frame *f, uint64_t insns, uint64_t pauses)
{
	uint64_t h;
	size_t mask = (1u << TAB_BITS) - 1, i, n;

	if (!f->window)
		return;
	if (!v->tab) {
		v->tab = calloc(1u << TAB_BITS, sizeof(*v->tab));
		if (!v->tab) {
			v->dropped++;
			return;
		}
	}
	h = hash64(f->site ^ (f->target * 31) ^ ((uint64_t)f->window << 40) ^ f->kind);
	for (n = 0, i = h & mask; n <= mask; n++, i = (i + 1) & mask) {
		struct site_stat *s = &v->tab[i];

		if (!s->calls) {
			s->site = f->site;
			s->target = f->target;
			s->window = f->window;
			s->kind = f->kind;
		} else if (s->site != f->site || s->target != f->target ||
			   s->window != f->window || s->kind != f->kind) {
			continue;
		}
		s->calls++;
		s->insns += insns;
		s->pauses += pauses;
		if (insns > s->max)
			s->max = insns;
		return;
	}
	v->dropped++;
}

static void set_top(struct vcpu *v, struct sb *s)
{
	const struct frame *t = v->depth ? &v->stack[v->depth - 1] : NULL;

	s->top_ret = t && t->kind == K_CALL ? t->ret : 0;
	s->top_entry = t && t->kind != K_CALL;
}

/* Frames whose stack has been unwound past (same stack) never return. */
static void drop_dead(struct vcpu *v, uint64_t sp)
{
	while (v->depth) {
		const struct frame *t = &v->stack[v->depth - 1];

		if (sp < t->sp || sp - t->sp >= STACK_SPAN)
			break;
		v->depth--;
		v->lost++;
	}
}

static void push(struct vcpu *v, struct sb *s, const struct frame *f)
{
	if (v->depth == DEPTH) {
		/* Stale frames of another stack filled it: start again. */
		v->lost += DEPTH;
		v->overflow++;
		v->depth = 0;
	}
	v->stack[v->depth++] = *f;
	set_top(v, s);
}

static void on_call(unsigned int vcpu, void *udata)
{
	const struct site *site = udata;
	struct vcpu *v = vcpus[vcpu];
	struct sb *s = sb_of(vcpu);
	struct frame f = {
		.ret = site->vaddr + site->len, .site = site->vaddr,
		.target = site->target, .insns0 = s->insns, .pauses0 = s->pauses,
		.window = cur_window, .kind = K_CALL,
	};
	uint64_t sp;

	if (!v)
		return;
	f.sp = sp = read_reg(v, reg_rsp);
	drop_dead(v, sp);
	push(v, s, &f);
}

/* udata of a block-start callback: its address's low 48 bits, its size. */
static inline void *pack(uint64_t vaddr, size_t n)
{
	return (void *)(uintptr_t)((vaddr & 0xffffffffffffull) | ((uint64_t)n << 48));
}

static inline uint64_t unpack_vaddr(void *udata)
{
	return ((uintptr_t)udata & 0xffffffffffffull) | 0xffff000000000000ull;
}

static inline uint64_t unpack_n(void *udata)
{
	return (uintptr_t)udata >> 48;
}

/* First instruction of a JIT block whose address is the top frame's return. */
static void on_return(unsigned int vcpu, void *udata)
{
	struct vcpu *v = vcpus[vcpu];
	struct sb *s = sb_of(vcpu);
	struct frame *t;

	if (!v || !v->depth)
		return;
	t = &v->stack[v->depth - 1];
	if (t->kind != K_CALL || t->ret != unpack_vaddr(udata) || t->sp != read_reg(v, reg_rsp)) {
		v->mismatch++;
		return;
	}
	/* The block's own instructions are counted already: not the call's. */
	record(v, t, s->insns - unpack_n(udata) - t->insns0 + 1, s->pauses - t->pauses0);
	v->depth--;
	set_top(v, s);
}

/* endbr64 starting a JIT block: a function entry. */
static void on_entry(unsigned int vcpu, void *udata)
{
	struct vcpu *v = vcpus[vcpu];
	struct sb *s = sb_of(vcpu);
	struct frame f = {
		.site = unpack_vaddr(udata),
		.insns0 = s->insns - unpack_n(udata), .pauses0 = s->pauses,
		.window = cur_window, .kind = K_ENTRY,
	};
	uint64_t sp;

	if (!v)
		return;
	f.sp = sp = read_reg(v, reg_rsp);
	if (v->depth) {
		const struct frame *t = &v->stack[v->depth - 1];

		/* Called from JIT code: its call frame covers it. */
		if (t->kind == K_CALL && t->sp == sp + 8)
			return;
	}
	drop_dead(v, sp + 8);
	if (v->depth)
		f.kind = K_NESTED;
	push(v, s, &f);
}

/* A ret in JIT code while an entry frame is on top. */
static void on_ret(unsigned int vcpu, void *udata)
{
	struct vcpu *v = vcpus[vcpu];
	struct sb *s = sb_of(vcpu);
	struct frame *t;

	(void)udata;
	if (!v || !v->depth)
		return;
	t = &v->stack[v->depth - 1];
	if (t->kind == K_CALL || t->sp != read_reg(v, reg_rsp))
		return; /* a nested function's ret */
	record(v, t, s->insns - t->insns0, s->pauses - t->pauses0);
	v->depth--;
	set_top(v, s);
}

/* cpuid: the window markers. */
static void on_cpuid(unsigned int vcpu, void *udata)
{
	struct vcpu *v = vcpus[vcpu];
	uint32_t eax, id;
	char msg[96];

	(void)udata;
	if (!v)
		return;
	eax = (uint32_t)read_reg(v, reg_rax);
	if (eax != INSN_COST_START && eax != INSN_COST_STOP)
		return;
	id = (uint32_t)read_reg(v, reg_rcx);
	if (!id || id >= MAX_WINDOWS)
		return;
	pthread_mutex_lock(&lock);
	if (eax == INSN_COST_START) {
		windows[id].insns0 = qemu_plugin_u64_sum(sb_insns);
		windows[id].pauses0 = qemu_plugin_u64_sum(sb_pauses);
		__atomic_store_n(&cur_window, id, __ATOMIC_RELEASE);
	} else if (__atomic_load_n(&cur_window, __ATOMIC_ACQUIRE) == id) {
		__atomic_store_n(&cur_window, 0, __ATOMIC_RELEASE);
		windows[id].insns += qemu_plugin_u64_sum(sb_insns) - windows[id].insns0;
		windows[id].pauses += qemu_plugin_u64_sum(sb_pauses) - windows[id].pauses0;
		windows[id].seen = 1;
	}
	pthread_mutex_unlock(&lock);
	snprintf(msg, sizeof(msg), "insn_cost: window %u %s on vCPU %u\n", id,
		 eax == INSN_COST_START ? "start" : "stop", vcpu);
	qemu_plugin_outs(msg);
}

/* The one descriptor of a call instruction (translation time, locked). */
static struct site *site_of(uint64_t vaddr, uint64_t target, uint32_t len)
{
	size_t mask = 2 * MAX_SITES - 1, i;
	struct site *s = NULL;

	pthread_mutex_lock(&lock);
	for (i = hash64(vaddr ^ target * 7 ^ len) & mask; site_index[i]; i = (i + 1) & mask) {
		struct site *c = &sites[site_index[i] - 1];

		if (c->vaddr == vaddr && c->target == target && c->len == len) {
			s = c;
			break;
		}
	}
	if (!s && nr_sites < MAX_SITES) {
		s = &sites[nr_sites++];
		*s = (struct site){ .vaddr = vaddr, .target = target, .len = len };
		site_index[i] = nr_sites;
	}
	pthread_mutex_unlock(&lock);
	return s;
}

static inline bool in_jit(uint64_t vaddr)
{
	return vaddr >= jit_base;
}

static void on_tb_trans(struct qemu_plugin_tb *tb, void *udata)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	uint64_t tb_vaddr = qemu_plugin_tb_vaddr(tb);
	bool jit = in_jit(tb_vaddr);

	(void)udata;
	qemu_plugin_register_vcpu_tb_exec_inline_per_vcpu(tb, QP_INLINE_ADD_U64, sb_insns, n);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		size_t len = qemu_plugin_insn_size(insn);
		uint8_t b[16] = { 0 };
		size_t got = qemu_plugin_insn_data(insn, b, len < sizeof(b) ? len : sizeof(b));
		size_t p = 0;

		if (got < len && got < sizeof(b))
			continue;
		if (jit && i == 0) {
			/* Any JIT block may be where a call returns. */
			qemu_plugin_register_vcpu_insn_exec_cond_cb(insn, on_return, QP_R_REGS,
								    QP_COND_EQ, sb_top_ret, vaddr,
								    pack(vaddr, n));
			if (len == 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_entry, QP_R_REGS,
								       pack(vaddr, n));
		}
		if (len == 2 && b[0] == 0xf3 && b[1] == 0x90) {
			qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn, QP_INLINE_ADD_U64,
									    sb_pauses, 1);
			continue;
		}
		if (len == 2 && b[0] == 0x0f && b[1] == 0xa2) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_cpuid, QP_R_REGS, NULL);
			continue;
		}
		if (!jit)
			continue;
		/* Prefixes a call or ret may carry: notrack/segment, REX. */
		while (p < len && (b[p] == 0x2e || b[p] == 0x3e || b[p] == 0xf3))
			p++;
		if (p < len && (b[p] & 0xf0) == 0x40)
			p++;
		if (p >= len)
			continue;
		if (b[p] == 0xe8 && len == p + 5) {
			int32_t rel;
			struct site *s;

			memcpy(&rel, &b[p + 1], 4);
			s = site_of(vaddr, vaddr + len + (int64_t)rel, len);
			if (s)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_call, QP_R_REGS, s);
		} else if (b[p] == 0xff && p + 1 < len && ((b[p + 1] >> 3) & 7) == 2) {
			struct site *s = site_of(vaddr, 0, len);

			if (s)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_call, QP_R_REGS, s);
		} else if (b[p] == 0xc3 || b[p] == 0xc2) {
			qemu_plugin_register_vcpu_insn_exec_cond_cb(insn, on_ret, QP_R_REGS,
								    QP_COND_EQ, sb_top_entry, 1,
								    NULL);
		}
	}
}

static void on_vcpu_init(unsigned int vcpu, void *udata)
{
	struct vcpu *v;

	(void)udata;
	if (vcpu >= MAX_VCPUS) {
		qemu_plugin_outs("insn_cost: too many vCPUs\n");
		abort();
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		abort();
	v->buf = g_byte_array_new();
	pthread_mutex_lock(&lock);
	if (!reg_rsp) {
		struct g_array *regs = qemu_plugin_get_registers();
		unsigned int i;

		for (i = 0; regs && i < regs->len; i++) {
			struct qp_reg_desc *d = &((struct qp_reg_desc *)regs->data)[i];

			if (!strcmp(d->name, "rsp"))
				reg_rsp = d->handle;
			else if (!strcmp(d->name, "rax"))
				reg_rax = d->handle;
			else if (!strcmp(d->name, "rcx"))
				reg_rcx = d->handle;
		}
		if (!reg_rsp || !reg_rax || !reg_rcx) {
			qemu_plugin_outs("insn_cost: no rsp/rax/rcx register (not x86_64?)\n");
			abort();
		}
	}
	pthread_mutex_unlock(&lock);
	__atomic_store_n(&vcpus[vcpu], v, __ATOMIC_RELEASE);
}

static int cmp_stat(const void *a, const void *b)
{
	const struct site_stat *x = a, *y = b;

	if (x->window != y->window)
		return x->window < y->window ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->site != y->site)
		return x->site < y->site ? -1 : 1;
	if (x->target != y->target)
		return x->target < y->target ? -1 : 1;
	return 0;
}

static void plugin_exit(void *udata)
{
	uint64_t lost = 0, mismatch = 0, overflow = 0, dropped = 0, reg_fail = 0;
	struct site_stat *all = NULL;
	size_t nr = 0, cap = 0, i, k;
	unsigned int c;
	FILE *out;

	(void)udata;
	for (c = 0; c < MAX_VCPUS; c++) {
		struct vcpu *v = vcpus[c];

		if (!v)
			continue;
		lost += v->lost;
		mismatch += v->mismatch;
		overflow += v->overflow;
		dropped += v->dropped;
		reg_fail += v->reg_fail;
		for (i = 0; v->tab && i < (1u << TAB_BITS); i++) {
			if (!v->tab[i].calls)
				continue;
			if (nr == cap) {
				cap = cap ? 2 * cap : 4096;
				all = realloc(all, cap * sizeof(*all));
				if (!all)
					abort();
			}
			all[nr++] = v->tab[i];
		}
	}
	qsort(all, nr, sizeof(*all), cmp_stat);
	out = fopen(out_path, "w");
	if (!out) {
		qemu_plugin_outs("insn_cost: cannot write the output file\n");
		return;
	}
	fprintf(out, "# insn_cost 1\n");
	for (c = 1; c < MAX_WINDOWS; c++)
		if (windows[c].seen)
			fprintf(out, "window %u insns %" PRIu64 " pauses %" PRIu64 "\n", c,
				windows[c].insns, windows[c].pauses);
	for (i = 0; i < nr; i = k) {
		struct site_stat m = all[i];

		for (k = i + 1; k < nr && !cmp_stat(&all[k], &m); k++) {
			m.calls += all[k].calls;
			m.insns += all[k].insns;
			m.pauses += all[k].pauses;
			if (all[k].max > m.max)
				m.max = all[k].max;
		}
		fprintf(out, "site %u %s %" PRIx64 " %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 "\n", m.window, m.kind == K_CALL ? "call" : m.kind == K_ENTRY ? "entry" : "nested", m.site,
			m.target, m.calls, m.insns, m.pauses, m.max);
	}
	fprintf(out, "health lost %" PRIu64 " mismatch %" PRIu64 " overflow %" PRIu64
		" sites %u dropped %" PRIu64 " reg_fail %" PRIu64 "\n", lost, mismatch, overflow,
		nr_sites, dropped, reg_fail);
	fclose(out);
	free(all);
}

EXPORT int qemu_plugin_install(qp_id_t id, const void *info, int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4)) {
			out_path = strdup(argv[i] + 4);
		} else if (!strncmp(argv[i], "jit_base=", 9)) {
			jit_base = strtoull(argv[i] + 9, NULL, 0);
		} else {
			fprintf(stderr, "insn_cost: unknown argument '%s' (out=FILE, jit_base=ADDR)\n",
				argv[i]);
			return -1;
		}
	}
	if (!out_path) {
		fprintf(stderr, "insn_cost: needs out=FILE\n");
		return -1;
	}
	sites = calloc(MAX_SITES, sizeof(*sites));
	site_index = calloc(2 * MAX_SITES, sizeof(*site_index));
	score = qemu_plugin_scoreboard_new(sizeof(struct sb));
	if (!sites || !site_index || !score)
		return -1;
	sb_insns = (struct qp_u64){ score, offsetof(struct sb, insns) };
	sb_pauses = (struct qp_u64){ score, offsetof(struct sb, pauses) };
	sb_top_ret = (struct qp_u64){ score, offsetof(struct sb, top_ret) };
	sb_top_entry = (struct qp_u64){ score, offsetof(struct sb, top_entry) };
	qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init, NULL);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans, NULL);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
