// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A tiny SMP scheduler kernel (64-bit only) for the l3-cache and halt-polling
 * experiments: its wakeup path makes the decisions Linux's does, so the IPIs
 * and idle exits the machine counts follow from the topology CPUID reports.
 *
 * What it has, and which Linux code each part follows:
 * - Tasks with their own 16 KiB stacks; switch.S saves the callee-saved
 *   registers and RSP. The task struct sits at the bottom of its stack, so
 *   current() is RSP rounded down (Linux 2.4's way: no per-CPU segment).
 * - Per-CPU FIFO runqueues under spinlocks. A task runs until it blocks:
 *   there is no time slice, no wakeup preemption and no load balancing
 *   (Linux would also pull tasks to idle CPUs with newidle/periodic
 *   balancing; leaving it out keeps every migration a wakeup decision).
 * - try_to_wake_up with Linux's p->pi_lock / p->on_rq / p->on_cpu handshake
 *   (wake.c), select_task_rq = wake_wide (decayed wakee flips) +
 *   wake_affine_idle + select_idle_sibling, ttwu_queue with a direct enqueue
 *   inside the LLC and the remote wake list (plus a RES or CAL IPI) outside
 *   it.
 * - The local APIC's mode and MMIO address cached per CPU when it comes up
 *   (Linux keeps x2apic_mode and a fixed APIC mapping from boot), so an IPI
 *   or an EOI is one ICR write or one EOI write, with no RDMSR of
 *   IA32_APIC_BASE: under KVM every RDMSR of it is an MSR exit (wake.c).
 * - Per-operation kernel work: every channel write and read of the pipe and
 *   messaging workloads burns op_ns of TSC time, standing in for the
 *   syscall, copy and socket work of a Linux pipe or socket operation
 *   (wait.c; the default and its source are in main.c).
 * - need_resched and polling in one word of one per-CPU cache line, set with
 *   Linux's set_nr_and_not_polling / set_nr_if_polling, so a polling or
 *   MWAITing idle CPU is woken by a store and no IPI (idle.c).
 * - The LLC from CPUID as Linux decodes it (llc.c).
 *
 * Locks, outermost first: a channel's lock, then a task's pi_lock, then one
 * runqueue lock (never two). pi_lock and runqueue locks are taken with
 * interrupts off, since the IPI handler takes this CPU's runqueue lock.
 */
#ifndef SCHED_SCHED_H
#define SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/spinlock.h"

#define SCHED_MAX_CPUS		256	/* more CPUs stay in the library's idle loop */
#define TASK_STACK_SIZE		16384	/* also the alignment current() relies on */
#define TASK_CANARY		0x5ca1ab1eu

/* Linux x86's vectors (arch/x86/include/asm/irq_vectors.h). */
#define RESCHEDULE_VECTOR		0xFD	/* "RES" in /proc/interrupts */
#define CALL_FUNCTION_SINGLE_VECTOR	0xFB	/* "CAL" */

/* The measurement window port (devices/, see the issue 4 contract). */
#define MEASURE_PORT		0x4A0
#define MEASURE_BEGIN		1
#define MEASURE_END		2

enum task_state {
	TASK_RUNNING,
	TASK_SLEEPING,
	TASK_DEAD,
};

struct task {
	uint64_t rsp;			/* saved by switch_to */
	volatile int state;		/* enum task_state */
	volatile int on_rq;		/* queued on a runqueue or running */
	volatile int on_cpu;		/* its registers are still live on a CPU */
	volatile int cpu;		/* the runqueue it is on or last ran on */
	int pinned;			/* -1, or the only CPU it may run on */
	unsigned id;
	const char *name;
	spinlock_t pi_lock;		/* serialises wakeups of this task */
	struct task *rq_next;		/* runqueue FIFO or wake list */
	struct task *wq_next;		/* wait queue */
	void (*fn)(void *arg);
	void *arg;
	/* wake_wide's heuristic (Linux task_struct): how often this task woke
	 * a different task than the last one, halved once per second. */
	struct task *last_wakee;
	uint32_t wakee_flips;
	uint64_t wakee_flip_decay_ts;	/* TSC of the last halving */
	uint32_t canary;		/* last: the stack grows down onto it first */
};

/* Counters of one CPU, each written by that CPU only. */
struct sched_stats {
	uint64_t wakeups;		/* try_to_wake_up calls that woke a task */
	uint64_t direct;		/* ... by enqueueing on the target runqueue */
	uint64_t queued;		/* ... by pushing onto the target's wake list */
	uint64_t migrations;		/* ... onto another CPU than it last ran on */
	uint64_t wide;			/* ... where wake_wide() ruled out wake_affine */
	uint64_t forks;			/* wake_up_new_task */
	uint64_t ipi_res;		/* RES IPIs sent */
	uint64_t ipi_cal;		/* CAL IPIs sent */
	uint64_t poll_wakes;		/* idle CPUs woken by their flag, no IPI */
	uint64_t recv_res, recv_cal;	/* IPIs taken */
	uint64_t switches;
	uint64_t idle_entries;
	uint64_t halts;			/* HLTs executed */
	uint64_t mwaits;		/* MWAITs executed */
	uint64_t poll_timeouts;		/* haltpoll windows that ended in HLT */
};

struct rq {
	spinlock_t lock;
	unsigned cpu;
	struct task *head, *tail;	/* FIFO of runnable tasks, curr not included */
	volatile unsigned nr_queued;
	struct task *volatile curr;
	struct task *idle;
	struct task *switch_prev;	/* handed from schedule() to finish_switch() */
	struct task *volatile wake_list; /* LIFO pushed by remote wakers (llist) */
	volatile bool started;		/* the CPU runs its idle task */
	struct sched_stats stats;
} __attribute__((aligned(64)));

/*
 * The cache line an idle CPU MONITORs (Linux: thread_info->flags). Only
 * these flags live in it, so the only stores that wake an MWAIT are wakeups.
 */
#define FLAG_NEED_RESCHED	(1u << 0)
#define FLAG_POLLING		(1u << 1)

struct cpu_flags {
	volatile uint32_t flags;
} __attribute__((aligned(64)));

enum idle_mode {
	IDLE_HALT,
	IDLE_POLL,
	IDLE_MWAIT,
	IDLE_HALTPOLL,
};

enum wakelist_ipi {
	WAKELIST_RES,	/* 2016 kernels: smp_send_reschedule */
	WAKELIST_CAL,	/* Linux 6.x: call-function-single, also for idle LLC siblings */
};

enum workload {
	WORKLOAD_PIPE,
	WORKLOAD_MESSAGING,
	WORKLOAD_CTXSW,
};

struct sched_config {
	enum workload workload;
	enum idle_mode idle;
	uint32_t haltpoll_ns;
	enum wakelist_ipi wakelist;
	uint32_t loops;
	uint32_t groups;
	unsigned ncpus;			/* CPUs in use: indices 0..ncpus-1 */
	uint32_t tsc_khz;
	uint32_t op_ns;			/* kernel work per channel write or read */
	uint64_t op_cycles;		/* op_ns in TSC cycles */
	bool quiet;
	bool mwait_sti;			/* QEMU TCG: "sti; mwait" with ECX = 0 */
};

extern struct sched_config cfg;
extern struct rq runqueues[SCHED_MAX_CPUS];
extern struct cpu_flags cpu_flags[SCHED_MAX_CPUS];

static inline struct rq *cpu_rq(unsigned cpu)
{
	return &runqueues[cpu];
}

/* The running task: its struct is at the bottom of the stack RSP is in. */
static inline struct task *current(void)
{
	uintptr_t sp;

	__asm__("mov %%rsp, %0" : "=r"(sp));
	return (struct task *)(sp & ~(uintptr_t)(TASK_STACK_SIZE - 1));
}

static inline unsigned this_cpu(void)
{
	return (unsigned)current()->cpu;
}

static inline uint64_t irq_save(void)
{
	uint64_t flags;

	__asm__ volatile("pushfq; pop %0; cli" : "=r"(flags) : : "memory");
	return flags;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & (1u << 9))	/* RFLAGS.IF */
		__asm__ volatile("sti" ::: "memory");
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

/* task.c: allocation, creation, exit. */
void heap_init(uintptr_t end);
void *heap_alloc(uint64_t size, uint64_t align);
struct task *task_create(const char *name, void (*fn)(void *), void *arg,
			 unsigned cpu, int pinned);
/* Switches this CPU from its boot stack to idle, which runs idle_loop. */
__attribute__((noreturn)) void task_start_cpu(unsigned cpu);
__attribute__((noreturn)) void task_exit(void);
bool task_canaries_ok(void);

/* runqueue.c */
void rq_init(unsigned cpu, struct task *idle);
void rq_push(struct rq *rq, struct task *p);	/* rq->lock held */
void schedule(void);
void finish_switch(struct task *self);
void switch_to(uint64_t *prev_rsp, uint64_t next_rsp);	/* switch.S */

/* wake.c */
bool cpus_share_cache(unsigned a, unsigned b);
bool available_idle_cpu(unsigned cpu);
bool try_to_wake_up(struct task *p, bool sync);
void wake_up_new_task(struct task *p);
void sched_ttwu_pending(struct rq *rq);
void wake_ipi_init(void);
void apic_cache_this_cpu(unsigned cpu);	/* once per CPU, when it comes up */
void set_need_resched_local(unsigned cpu);
void clear_need_resched(unsigned cpu);

/* idle.c */
bool idle_mode_usable(const char **why);
__attribute__((noreturn)) void idle_loop(void);

/* llc.c */
void llc_detect_this_cpu(unsigned cpu);
unsigned llc_size(unsigned cpu);
void llc_sizes_init(void);		/* sd_llc_size[], once cfg.ncpus is known */
extern unsigned sd_llc_size[SCHED_MAX_CPUS];
void llc_print(void);
extern uint32_t llc_id[SCHED_MAX_CPUS];

/* wait.c: wait queues, blocking channels, completions. */
struct waitq {
	struct task *head, *tail;
};

struct chan {
	spinlock_t lock;
	uint32_t cap, size;		/* messages, bytes per message */
	uint32_t head, count;
	uint32_t wake_writers_at;	/* wake blocked writers once count <= this */
	uint8_t *buf;
	struct waitq readers, writers;
};

struct completion {
	spinlock_t lock;
	uint32_t remaining;
	struct waitq waiters;
};

void burn_calibrate(void);		/* once, before the workload */
void burn_op(void);			/* op_cycles of TSC time, if any */
void chan_init(struct chan *c, uint32_t cap, uint32_t size, uint32_t wake_writers_at);
void chan_send(struct chan *c, const void *msg);
void chan_recv(struct chan *c, void *msg);
void completion_init(struct completion *c, uint32_t n);
void complete_one(struct completion *c);
void wait_for_completion(struct completion *c);

/* workloads.c */
struct workload_result {
	uint64_t ops;		/* round trips, messages or switches */
	bool ok;
	const char *what;	/* what went wrong, when !ok */
};
void workload_prepare(void);	/* creates the tasks (not yet runnable) */
void workload_start(void);	/* makes them runnable */
void workload_wait(void);
void workload_check(struct workload_result *r);
const char *workload_name(enum workload w);

#endif
