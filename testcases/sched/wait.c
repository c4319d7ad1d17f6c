// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Sleeping: wait queues, bounded blocking channels and completions.
 *
 * The sleep/wakeup handshake is Linux's prepare_to_wait pattern: under the
 * object's lock the sleeper queues itself and sets TASK_SLEEPING, drops the
 * lock and calls schedule(); a waker takes it off the queue under the lock
 * and calls try_to_wake_up after dropping it. Each dequeue is followed by
 * exactly one wakeup, and the sleeper re-checks its condition on return,
 * so no wakeup is lost whichever CPU gets where first (try_to_wake_up
 * finds the sleeper either still on its runqueue or fully switched out).
 *
 * Channels are a pipe (capacity 1 of 4 bytes for the pipe and ctxsw
 * workloads) and a unix stream socket (messaging): readers block while
 * empty, writers while full. Writers are woken once the fill level is back
 * at wake_writers_at (a pipe: any free slot; a socket: a quarter of its
 * buffer, like unix_writable). All wakeups here are sync, as pipes and
 * sockets wake with WF_SYNC.
 *
 * Per-operation kernel work (op_ns, main.c): a Linux pipe or socket write
 * or read is a syscall of about a microsecond (entry and exit, fd lookup,
 * copying, skb allocation and freeing), where these channels take about a
 * hundred guest instructions. So each chan_send and chan_recv also burns
 * op_ns of TSC time (burn_op, interrupts on, no lock held), where Linux
 * does that work: a write before it queues the data and wakes
 * the reader (unix_stream_sendmsg allocates and fills the skb first; a pipe
 * copies in before its wakeup), a read after it has taken the data, before
 * it wakes blocked writers (pipe_read wakes them at its end, a socket read
 * when it frees the skb). Completions burn nothing, and neither does the
 * ctxsw workload (op_cycles = 0), which measures the switch itself.
 *
 * burn_op is an RDTSC loop that reads the TSC between chunks of a plain
 * DEC/JNZ loop rather than at every turn (an emulator traps each RDTSC,
 * and a read every few instructions made the experiments several times
 * slower on the host). Each chunk covers half the time still to burn,
 * by a calibration made once at boot (burn_calibrate, like Linux's
 * loops_per_jiffy), so it ends within a chunk of 2 loop turns of op_ns
 * even if the calibration is off by up to 2x, and an interrupt taken
 * meanwhile counts as time spent, as it would in Linux.
 */
#include "lib/msr.h"

#include "sched/sched.h"

#define CALIBRATION_SPINS	65536u

static uint64_t spins_per_kcycle = 1;	/* loop turns per 1024 TSC cycles */

static inline void spin(uint64_t n)
{
	__asm__ volatile("1: dec %0; jnz 1b" : "+r"(n) : : "cc");
}

void burn_calibrate(void)
{
	uint64_t t0 = rdtsc();

	spin(CALIBRATION_SPINS);
	uint64_t d = rdtsc() - t0;

	spins_per_kcycle = d ? (uint64_t)CALIBRATION_SPINS * 1024 / d : 1;
	if (!spins_per_kcycle)
		spins_per_kcycle = 1;
}

void burn_op(void)
{
	uint64_t n = cfg.op_cycles, start, spent = 0;

	if (!n)
		return;
	start = rdtsc();
	while (spent < n) {
		uint64_t turns = (n - spent) * spins_per_kcycle / 2048;

		spin(turns ? turns : 1);
		spent = rdtsc() - start;
	}
}

static void waitq_add(struct waitq *wq, struct task *t)
{
	t->wq_next = NULL;
	if (wq->tail)
		wq->tail->wq_next = t;
	else
		wq->head = t;
	wq->tail = t;
}

static struct task *waitq_take_all(struct waitq *wq)
{
	struct task *t = wq->head;

	wq->head = wq->tail = NULL;
	return t;
}

static struct task *waitq_pop(struct waitq *wq)
{
	struct task *t = wq->head;

	if (t) {
		wq->head = t->wq_next;
		if (!wq->head)
			wq->tail = NULL;
	}
	return t;
}

/* Called with *lock held; returns with it held again. */
static void sleep_on(struct waitq *wq, spinlock_t *lock)
{
	struct task *self = current();

	waitq_add(wq, self);
	self->state = TASK_SLEEPING;
	spin_unlock(lock);
	schedule();
	spin_lock(lock);
}

/* Wakes a list taken off a wait queue; next is read before each wakeup,
 * since the woken task may queue itself somewhere else at once. */
static void wake_list_of(struct task *t)
{
	while (t) {
		struct task *next = t->wq_next;

		try_to_wake_up(t, true);
		t = next;
	}
}

static void copy(void *dst, const void *src, uint32_t n)
{
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

void chan_init(struct chan *c, uint32_t cap, uint32_t size, uint32_t wake_writers_at)
{
	c->lock.locked = 0;
	c->cap = cap;
	c->size = size;
	c->head = c->count = 0;
	c->wake_writers_at = wake_writers_at;
	c->buf = heap_alloc((uint64_t)cap * size, 64);
	c->readers.head = c->readers.tail = NULL;
	c->writers.head = c->writers.tail = NULL;
}

void chan_send(struct chan *c, const void *msg)
{
	burn_op();
	spin_lock(&c->lock);
	while (c->count == c->cap)
		sleep_on(&c->writers, &c->lock);
	copy(c->buf + (uint64_t)((c->head + c->count) % c->cap) * c->size, msg, c->size);
	c->count++;
	struct task *reader = waitq_pop(&c->readers);

	spin_unlock(&c->lock);
	if (reader)
		try_to_wake_up(reader, true);
}

void chan_recv(struct chan *c, void *msg)
{
	struct task *writers = NULL;

	spin_lock(&c->lock);
	while (c->count == 0)
		sleep_on(&c->readers, &c->lock);
	copy(msg, c->buf + (uint64_t)c->head * c->size, c->size);
	c->head = (c->head + 1) % c->cap;
	c->count--;
	if (c->count <= c->wake_writers_at)
		writers = waitq_take_all(&c->writers);
	spin_unlock(&c->lock);
	burn_op();
	wake_list_of(writers);
}

void completion_init(struct completion *c, uint32_t n)
{
	c->lock.locked = 0;
	c->remaining = n;
	c->waiters.head = c->waiters.tail = NULL;
}

/* The last one wakes the waiters (a parent's waitpid; not sync). */
void complete_one(struct completion *c)
{
	struct task *waiters = NULL;

	spin_lock(&c->lock);
	if (c->remaining && --c->remaining == 0)
		waiters = waitq_take_all(&c->waiters);
	spin_unlock(&c->lock);
	while (waiters) {
		struct task *next = waiters->wq_next;

		try_to_wake_up(waiters, false);
		waiters = next;
	}
}

void wait_for_completion(struct completion *c)
{
	spin_lock(&c->lock);
	while (c->remaining)
		sleep_on(&c->waiters, &c->lock);
	spin_unlock(&c->lock);
}
