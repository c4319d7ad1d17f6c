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
 * - wake_affine_idle: a sync wakeup (pipes and sockets wake their readers
 *   with WF_SYNC) from a waker that is alone on its runqueue goes to the
 *   waker's CPU; otherwise to the CPU it last ran on (prev). Linux would
 *   then weigh loads (wake_affine_weight) and skip affine wakeups for wide
 *   wakers (wake_wide); neither is modelled.
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
 */
#include "lib/apic.h"
#include "lib/idt.h"
#include "lib/smp.h"

#include "sched/sched.h"

struct cpu_flags cpu_flags[SCHED_MAX_CPUS];

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

static void send_ipi(unsigned cpu, unsigned vector, struct sched_stats *st)
{
	if (vector == RESCHEDULE_VECTOR)
		st->ipi_res++;
	else
		st->ipi_cal++;
	apic_send_ipi(smp_cpus[cpu].apic_id, ICR_FIXED | ICR_ASSERT | vector);
}

/* resched_curr for a CPU whose runqueue just got a task (its lock held, as
 * in Linux): a remote idle CPU is told by its flag if it polls, else by a
 * RES IPI. */
static void kick_if_idle(unsigned cpu, unsigned this, bool was_idle, struct sched_stats *st)
{
	if (cpu == this || !was_idle)
		return;
	if (set_nr_and_not_polling(cpu))
		send_ipi(cpu, RESCHEDULE_VECTOR, st);
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

static unsigned select_task_rq(struct task *p, unsigned this, bool sync)
{
	unsigned prev = (unsigned)p->cpu;
	unsigned target = prev;

	if (p->pinned >= 0)
		return (unsigned)p->pinned;
	if (sync && cpu_rq(this)->nr_queued == 0)
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
				send_ipi(cpu, cfg.wakelist == WAKELIST_CAL ?
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
	unsigned cpu = select_task_rq(p, this, sync);

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
	struct rq *rq = cpu_rq(this_cpu());

	if (f->vector == RESCHEDULE_VECTOR)
		rq->stats.recv_res++;
	else
		rq->stats.recv_cal++;
	apic_eoi();
	sched_ttwu_pending(rq);
	set_need_resched_local(rq->cpu);
}

void wake_ipi_init(void)
{
	idt_set_handler(RESCHEDULE_VECTOR, sched_ipi);
	idt_set_handler(CALL_FUNCTION_SINGLE_VECTOR, sched_ipi);
}
