// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Per-CPU runqueues and schedule().
 *
 * A runqueue is a FIFO of runnable tasks under its lock; the running task
 * (curr) is not in it. schedule() is Linux's __schedule() cut down to a
 * FIFO policy: a task that is no longer TASK_RUNNING is dequeued
 * (deactivate_task: on_rq = 0), the head of the FIFO runs next, else the
 * idle task. A task that calls schedule() while still TASK_RUNNING was woken
 * before it got to sleep and simply goes on (there is no yield).
 *
 * As in Linux, the runqueue lock is held across switch_to and released by
 * the task switched to (finish_switch, Linux's finish_task_switch), which
 * also clears prev->on_cpu: only then are prev's registers saved, so only
 * then may another CPU run it (try_to_wake_up waits for on_cpu == 0).
 */
#include "lib/printf.h"
#include "lib/report.h"

#include "sched/sched.h"

struct rq runqueues[SCHED_MAX_CPUS];

void rq_init(unsigned cpu, struct task *idle)
{
	struct rq *rq = cpu_rq(cpu);

	rq->cpu = cpu;
	rq->idle = idle;
	rq->curr = idle;
	idle->on_rq = 1;
	idle->state = TASK_RUNNING;
}

void rq_push(struct rq *rq, struct task *p)
{
	p->rq_next = NULL;
	if (rq->tail)
		rq->tail->rq_next = p;
	else
		rq->head = p;
	rq->tail = p;
	rq->nr_queued++;
}

static struct task *rq_pop(struct rq *rq)
{
	struct task *p = rq->head;

	if (!p)
		return NULL;
	rq->head = p->rq_next;
	if (!rq->head)
		rq->tail = NULL;
	rq->nr_queued--;
	return p;
}

void schedule(void)
{
	struct task *prev = current();
	uint64_t irq = irq_save();
	struct rq *rq = cpu_rq((unsigned)prev->cpu);

	if (prev->canary != TASK_CANARY) {
		printf("FAIL: sched.stack (task \"%s\" overflowed its stack)\n", prev->name);
		debug_exit(EXIT_FAIL);
	}
	spin_lock(&rq->lock);
	clear_need_resched(rq->cpu);
	if (prev != rq->idle) {
		if (prev->state == TASK_RUNNING) {
			spin_unlock(&rq->lock);
			irq_restore(irq);
			return;
		}
		prev->on_rq = 0;
	}
	struct task *next = rq_pop(rq);

	if (!next)
		next = rq->idle;
	if (next == prev) {
		spin_unlock(&rq->lock);
		irq_restore(irq);
		return;
	}
	rq->curr = next;
	next->on_cpu = 1;
	rq->switch_prev = prev;
	rq->stats.switches++;
	switch_to(&prev->rsp, next->rsp);
	/* prev runs again, maybe on another CPU: prev->cpu says which. */
	finish_switch(prev);
	irq_restore(irq);
}

void finish_switch(struct task *self)
{
	struct rq *rq = cpu_rq((unsigned)self->cpu);
	struct task *prev = rq->switch_prev;

	if (prev)
		__atomic_store_n(&prev->on_cpu, 0, __ATOMIC_RELEASE);
	spin_unlock(&rq->lock);
}
