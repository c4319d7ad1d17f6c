// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Wakeups, as Linux's kernel/sched/core.c and fair.c make them.
 *
 * try_to_wake_up(p): under p->pi_lock, a task that is no longer
 * TASK_SLEEPING needs nothing; one still on its runqueue (it set
 * TASK_SLEEPING but has not got through schedule() yet) is just made
 * TASK_RUNNING under that runqueue's lock (ttwu_runnable); otherwise wait
 * until its CPU has saved its registers (on_cpu == 0), pick a CPU and queue.
 *
 * Picking a CPU (select_task_rq_fair, simplified):
 * - record_wakee + wake_wide (fair.c since Linux 4.2, "sched/fair: Beef up
 *   wake_wide()", unchanged since): each task counts its wakee flips, the
 *   wakeups of a different task than the one it woke last, and halves the
 *   count at its first wakeup more than a second (HZ jiffies; here TSC time
 *   from tsc_khz) after the last halving. wake_wide(p) is true when the
 *   smaller of the waker's and p's flips is at least the waker CPU's LLC
 *   size (sd_llc_size) and the larger is at least that many times the
 *   smaller: a 1:N waker/wakee pattern wider than the LLC. The flips are
 *   recorded on every wakeup that has to place its task, pinned or not, as
 *   the 4.2-era kernels did in task_waking_fair (later ones do it in
 *   select_task_rq_fair, which pinned tasks skip: no decision here
 *   differs). Note that without a shared LLC sd_llc_size is 1, so any two
 *   tasks that have each woken someone count as wide.
 * - want_affine = !wake_wide(p). wake_affine_idle: an affine sync wakeup
 *   (pipes and sockets wake their readers with WF_SYNC) from a waker that
 *   is alone on its runqueue goes to the waker's CPU; every other wakeup
 *   targets the CPU the task last ran on (prev). Linux would also weigh
 *   loads (wake_affine_weight); that is not modelled.
 * - select_idle_sibling(target): target if idle; else prev if it shares the
 *   LLC with target and is idle; else the first idle CPU of target's LLC
 *   scanning from target + 1 with wrap-around (select_idle_cpu without the
 *   SIS_PROP scan limit, idle-core search or recent_used_cpu); else target.
 *   Without a shared LLC the task therefore stays where the affine choice
 *   put it.
 *
 * Queueing (ttwu_queue):
 * - The target shares this CPU's LLC (and, with wakelist=cal, is not a
 *   remote idle CPU): lock its runqueue and enqueue; if it is another CPU
 *   and idle, resched_curr: set its need_resched flag and send a RES IPI
 *   unless it was polling (set_nr_and_not_polling).
 * - Otherwise push p onto the target's wake list; only the push that finds
 *   the list empty signals it: set_nr_if_polling, else a RES IPI (2016
 *   kernels, ttwu_queue_remote) or a CAL IPI (Linux 6.x,
 *   __smp_call_single_queue). 6.x also queues a task still on its old CPU
 *   (WF_ON_CPU) there; here the waker waits for on_cpu instead.
 * - The IPI handler, and the idle loop after a wake without IPI, move the
 *   wake list onto the runqueue (sched_ttwu_pending).
 *
 * APIC access (Linux: apic->send_IPI and apic->eoi of the driver chosen at
 * boot, x2apic_mode, the APIC page mapped at a fixed address): each CPU
 * switches to x2APIC mode when CPUID offers it, then reads IA32_APIC_BASE
 * once and keeps its mode and MMIO address. lib/apic.c would read that MSR for every register access, and
 * under KVM each read is an MSR exit. The hot paths then are:
 * - x2APIC: an IPI is one 64-bit WRMSR of the ICR (after MFENCE, as
 *   Linux's x2apic_wrmsr_fence: x2APIC MSR writes are not serializing), an
 *   EOI one WRMSR of the EOI MSR;
 * - xAPIC: an IPI waits (bounded) for the ICR's delivery status to clear,
 *   then writes ICR high and ICR low (__default_send_IPI_dest_field, which
 *   waits before sending, not after); an EOI is one MMIO write.
 */
#include "lib/apic.h"
#include "lib/idt.h"
#include "lib/msr.h"
#include "lib/smp.h"

#include "sched/sched.h"

#define X2APIC_MSR_EOI		0x80B	/* 0x800 + APIC_EOI / 16 */
#define X2APIC_MSR_ICR		0x830	/* 0x800 + APIC_ICR_LO / 16 */
#define ICR_IDLE_POLLS		10000000u

struct cpu_flags cpu_flags[SCHED_MAX_CPUS];

/* ---- per-CPU cached APIC access ---- */

struct cpu_apic {
	volatile uint32_t *mmio;	/* the xAPIC page; NULL in x2APIC mode */
	bool x2apic;
};

static struct cpu_apic cpu_apic[SCHED_MAX_CPUS];

/* On the CPU itself, once lib/smp.c is done with it. Like Linux
 * (x2apic_enable at boot whenever CPUID offers x2APIC, as KVM does), the
 * CPU then goes to x2APIC mode if it can: an IPI is one ICR write instead of
 * ICR high and ICR low, which under KVM are two exits. */
void apic_cache_this_cpu(unsigned cpu)
{
	uint64_t base;

	if (cpu >= SCHED_MAX_CPUS)
		return;
	if (!apic_x2apic_mode() && x2apic_supported())
		x2apic_enable();
	base = apic_base_msr();
	cpu_apic[cpu].x2apic = (base & APIC_BASE_EXTD) != 0;
	cpu_apic[cpu].mmio = cpu_apic[cpu].x2apic ? NULL :
			     (volatile uint32_t *)(uintptr_t)(base & APIC_BASE_ADDR_MASK);
}

static void apic_send_fixed(unsigned this, uint32_t dest, unsigned vector)
{
	const struct cpu_apic *a = &cpu_apic[this];
	uint32_t icr_lo = ICR_FIXED | ICR_ASSERT | ICR_VECTOR(vector);

	if (a->x2apic) {
		__asm__ volatile("mfence" ::: "memory");
		wrmsr(X2APIC_MSR_ICR, (uint64_t)dest << 32 | icr_lo);
		return;
	}
	for (uint32_t i = 0; i < ICR_IDLE_POLLS && (a->mmio[APIC_ICR_LO / 4] & ICR_BUSY); i++)
		cpu_relax();
	a->mmio[APIC_ICR_HI / 4] = dest << 24;	/* the low dword's write sends */
	a->mmio[APIC_ICR_LO / 4] = icr_lo;
}

static void apic_eoi_fast(unsigned this)
{
	const struct cpu_apic *a = &cpu_apic[this];

	if (a->x2apic)
		wrmsr(X2APIC_MSR_EOI, 0);
	else
		a->mmio[APIC_EOI / 4] = 0;
}

/* ---- wakeups ---- */

bool cpus_share_cache(unsigned a, unsigned b)
{
	return llc_id[a] == llc_id[b];
}

/* Linux idle_cpu(): running idle with nothing queued or pending. */
bool available_idle_cpu(unsigned cpu)
{
	struct rq *rq = cpu_rq(cpu);

	return rq->curr == rq->idle && rq->nr_queued == 0 && rq->wake_list == NULL;
}

void set_need_resched_local(unsigned cpu)
{
	__atomic_fetch_or(&cpu_flags[cpu].flags, FLAG_NEED_RESCHED, __ATOMIC_SEQ_CST);
}

void clear_need_resched(unsigned cpu)
{
	__atomic_fetch_and(&cpu_flags[cpu].flags, ~FLAG_NEED_RESCHED, __ATOMIC_SEQ_CST);
}

/* Linux set_nr_and_not_polling: true if the CPU needs an IPI. */
static bool set_nr_and_not_polling(unsigned cpu)
{
	uint32_t old = __atomic_fetch_or(&cpu_flags[cpu].flags, FLAG_NEED_RESCHED,
					 __ATOMIC_SEQ_CST);

	return !(old & FLAG_POLLING);
}

/* Linux set_nr_if_polling: true if the CPU polls and now sees the flag.
 * One compare-exchange on the word that holds both flags, so it cannot
 * race with the idle CPU clearing FLAG_POLLING and then testing. */
static bool set_nr_if_polling(unsigned cpu)
{
	volatile uint32_t *f = &cpu_flags[cpu].flags;
	uint32_t old = *f;

	for (;;) {
		if (!(old & FLAG_POLLING))
			return false;
		if (old & FLAG_NEED_RESCHED)
			return true;
		if (__atomic_compare_exchange_n(f, &old, old | FLAG_NEED_RESCHED, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			return true;
	}
}

static void send_ipi(unsigned cpu, unsigned this, unsigned vector, struct sched_stats *st)
{
	if (vector == RESCHEDULE_VECTOR)
		st->ipi_res++;
	else
		st->ipi_cal++;
	apic_send_fixed(this, smp_cpus[cpu].apic_id, vector);
}

/* resched_curr for a CPU whose runqueue just got a task (its lock held, as
 * in Linux): a remote idle CPU is told by its flag if it polls, else by a
 * RES IPI. */
static void kick_if_idle(unsigned cpu, unsigned this, bool was_idle, struct sched_stats *st)
{
	if (cpu == this || !was_idle)
		return;
	if (set_nr_and_not_polling(cpu))
		send_ipi(cpu, this, RESCHEDULE_VECTOR, st);
	else
		st->poll_wakes++;
}

/* llist_add: true if the list was empty. */
static bool wake_list_add(struct rq *rq, struct task *p)
{
	struct task *old = rq->wake_list;

	do {
		p->rq_next = old;
	} while (!__atomic_compare_exchange_n(&rq->wake_list, &old, p, false,
					      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
	return old == NULL;
}

/* This CPU, IRQs off: the wake list (LIFO) onto the runqueue, oldest first. */
void sched_ttwu_pending(struct rq *rq)
{
	struct task *list = __atomic_exchange_n(&rq->wake_list, NULL, __ATOMIC_SEQ_CST);
	struct task *fifo = NULL;

	if (!list)
		return;
	while (list) {
		struct task *next = list->rq_next;

		list->rq_next = fifo;
		fifo = list;
		list = next;
	}
	spin_lock(&rq->lock);
	while (fifo) {
		struct task *next = fifo->rq_next;

		fifo->on_rq = 1;
		rq_push(rq, fifo);
		fifo = next;
	}
	spin_unlock(&rq->lock);
	set_need_resched_local(rq->cpu);
}

static unsigned select_idle_sibling(unsigned prev, unsigned target)
{
	if (available_idle_cpu(target))
		return target;
	if (prev != target && cpus_share_cache(prev, target) && available_idle_cpu(prev))
		return prev;
	for (unsigned i = 1; i < cfg.ncpus; i++) {
		unsigned cpu = (target + i) % cfg.ncpus;

		if (cpus_share_cache(cpu, target) && available_idle_cpu(cpu))
			return cpu;
	}
	return target;
}

/* Linux record_wakee, by the waker (current) about the task it wakes. */
static void record_wakee(struct task *p)
{
	struct task *curr = current();
	uint64_t now = rdtsc();

	/* time_after(jiffies, decay_ts + HZ): halve once, however long ago. */
	if (now - curr->wakee_flip_decay_ts > (uint64_t)cfg.tsc_khz * 1000) {
		curr->wakee_flips >>= 1;
		curr->wakee_flip_decay_ts = now;
	}
	if (curr->last_wakee != p) {
		curr->last_wakee = p;
		curr->wakee_flips++;
	}
}

/* Linux wake_wide: true for a waker/wakee pair wider than this CPU's LLC. */
static bool wake_wide(struct task *p, unsigned this)
{
	uint32_t master = current()->wakee_flips;
	uint32_t slave = p->wakee_flips;
	uint32_t factor = sd_llc_size[this];

	if (master < slave) {
		uint32_t t = master;

		master = slave;
		slave = t;
	}
	if (slave < factor || master < slave * factor)
		return false;
	return true;
}

static unsigned select_task_rq(struct task *p, unsigned this, bool sync, struct sched_stats *st)
{
	unsigned prev = (unsigned)p->cpu;
	unsigned target = prev;

	record_wakee(p);
	if (p->pinned >= 0)
		return (unsigned)p->pinned;
	if (wake_wide(p, this))
		st->wide++;	/* want_affine = 0: prev, then select_idle_sibling */
	else if (sync && cpu_rq(this)->nr_queued == 0)
		target = this;
	return select_idle_sibling(prev, target);
}

static void ttwu_queue(struct task *p, unsigned cpu, unsigned this)
{
	struct rq *rq = cpu_rq(cpu);
	struct sched_stats *st = &cpu_rq(this)->stats;
	bool remote_idle = cpu != this && rq->curr == rq->idle && rq->nr_queued == 0;

	if (!cpus_share_cache(this, cpu) || (cfg.wakelist == WAKELIST_CAL && remote_idle)) {
		st->queued++;
		if (wake_list_add(rq, p)) {
			if (set_nr_if_polling(cpu))
				st->poll_wakes++;
			else
				send_ipi(cpu, this, cfg.wakelist == WAKELIST_CAL ?
					 CALL_FUNCTION_SINGLE_VECTOR : RESCHEDULE_VECTOR, st);
		}
		return;
	}
	st->direct++;
	spin_lock(&rq->lock);
	bool was_idle = rq->curr == rq->idle;

	p->on_rq = 1;
	rq_push(rq, p);
	kick_if_idle(cpu, this, was_idle, st);
	spin_unlock(&rq->lock);
}

bool try_to_wake_up(struct task *p, bool sync)
{
	uint64_t irq = irq_save();
	unsigned this = this_cpu();
	struct sched_stats *st = &cpu_rq(this)->stats;
	bool woke = false;

	spin_lock(&p->pi_lock);
	if (p->state != TASK_SLEEPING)
		goto out;
	woke = true;
	st->wakeups++;
	if (p->on_rq) {
		struct rq *rq = cpu_rq((unsigned)p->cpu);

		spin_lock(&rq->lock);
		if (p->on_rq) {
			p->state = TASK_RUNNING;
			spin_unlock(&rq->lock);
			goto out;
		}
		spin_unlock(&rq->lock);
	}
	while (__atomic_load_n(&p->on_cpu, __ATOMIC_ACQUIRE))
		cpu_relax();
	p->state = TASK_RUNNING;
	unsigned cpu = select_task_rq(p, this, sync, st);

	if (cpu != (unsigned)p->cpu)
		st->migrations++;
	p->cpu = (int)cpu;
	ttwu_queue(p, cpu, this);
out:
	spin_unlock(&p->pi_lock);
	irq_restore(irq);
	return woke;
}

/* A task made by task_create starts on the CPU fork placement chose, by a
 * direct enqueue and resched_curr, as Linux's wake_up_new_task does. */
void wake_up_new_task(struct task *p)
{
	uint64_t irq = irq_save();
	unsigned this = this_cpu(), cpu = (unsigned)p->cpu;
	struct rq *rq = cpu_rq(cpu);
	struct sched_stats *st = &cpu_rq(this)->stats;

	spin_lock(&p->pi_lock);
	spin_lock(&rq->lock);
	bool was_idle = rq->curr == rq->idle;

	p->state = TASK_RUNNING;
	p->on_rq = 1;
	rq_push(rq, p);
	st->forks++;
	kick_if_idle(cpu, this, was_idle, st);
	spin_unlock(&rq->lock);
	spin_unlock(&p->pi_lock);
	irq_restore(irq);
}

/* scheduler_ipi / generic_smp_call_function_single_interrupt: both only
 * move the wake list here and ask for a reschedule. */
static void sched_ipi(struct irq_frame *f)
{
	unsigned this = this_cpu();
	struct rq *rq = cpu_rq(this);

	if (f->vector == RESCHEDULE_VECTOR)
		rq->stats.recv_res++;
	else
		rq->stats.recv_cal++;
	apic_eoi_fast(this);
	sched_ttwu_pending(rq);
	set_need_resched_local(rq->cpu);
}

void wake_ipi_init(void)
{
	idt_set_handler(RESCHEDULE_VECTOR, sched_ipi);
	idt_set_handler(CALL_FUNCTION_SINGLE_VECTOR, sched_ipi);
}
