// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The benchmarks, shaped like perf bench sched:
 * - pipe: two tasks ping-pong a 4-byte value through two one-slot channels,
 *   `loops` round trips (perf bench sched pipe, forked mode). The reply is
 *   the value + 1, checked. ns_per_op: per round trip.
 * - messaging: per group 20 receivers, then 20 senders (perf's creation
 *   order); each receiver owns one socket-like channel of 64 messages of
 *   100 bytes shared by the group's senders; each sender sends `loops`
 *   rounds of one message to every receiver of its group (perf bench sched
 *   messaging with sockets, -l loops). Receivers check that each sender's
 *   sequence numbers arrive in order and sum every word they got; the sums
 *   must match what the senders sent. ns_per_op: per message.
 * - ctxsw: pipe's ping-pong with the two tasks pinned to CPUs 0 and 1, so
 *   every wakeup crosses CPUs (the halt-poll patch's context-switch
 *   benchmark). ns_per_op: per switch, elapsed / (2 * loops).
 *
 * Fork placement: the controller (perf's parent, pinned to CPU 0) creates
 * every task before the measured window; each goes to the CPU with the
 * fewest tasks so far, the controller counting on CPU 0, lowest index on
 * ties. That is Linux's find_idlest_cpu for SD_BALANCE_FORK as it looks just
 * after the forks (its loads decay over time; these counts do not), so
 * pipe's two tasks start on CPUs 1 and 2. They are made runnable (wake_up_
 * new_task) inside the window, as perf forks inside its timing.
 */
#include "lib/printf.h"

#include "sched/sched.h"

#define FDS_PER_GROUP	20	/* perf's default num_fds */
#define MSG_WORDS	25	/* 100 bytes, perf's DATASIZE */
#define SOCK_CAPACITY	64

static struct completion done;
static struct task **tasks;
static unsigned ntasks, max_tasks;
static unsigned *fork_load;

/* ---- fork placement ---- */

static unsigned fork_cpu(void)
{
	unsigned best = 0;

	for (unsigned cpu = 1; cpu < cfg.ncpus; cpu++)
		if (fork_load[cpu] < fork_load[best])
			best = cpu;
	return best;
}

static void fork_task(const char *name, void (*fn)(void *), void *arg, int pinned)
{
	unsigned cpu = pinned >= 0 ? (unsigned)pinned : fork_cpu();

	fork_load[cpu]++;
	tasks[ntasks++] = task_create(name, fn, arg, cpu, pinned);
}

/* ---- pipe and ctxsw ---- */

static struct chan to_pong, to_ping;
static volatile uint32_t pingpong_errors, pingpong_done;

static void ping(void *arg)
{
	for (uint32_t i = 0; i < cfg.loops; i++) {
		uint32_t v = i, r;

		chan_send(&to_pong, &v);
		chan_recv(&to_ping, &r);
		if (r != i + 1)
			pingpong_errors++;
		pingpong_done++;
	}
	complete_one(&done);
}

static void pong(void *arg)
{
	for (uint32_t i = 0; i < cfg.loops; i++) {
		uint32_t v;

		chan_recv(&to_pong, &v);
		v++;
		chan_send(&to_ping, &v);
	}
	complete_one(&done);
}

static void pingpong_prepare(bool pinned)
{
	chan_init(&to_pong, 1, sizeof(uint32_t), 0);
	chan_init(&to_ping, 1, sizeof(uint32_t), 0);
	fork_task("ping", ping, NULL, pinned ? 0 : -1);
	fork_task("pong", pong, NULL, pinned ? 1 : -1);
}

/* ---- messaging ---- */

struct receiver {
	struct chan sock;
	unsigned index;			/* within its group */
	uint32_t next_seq[FDS_PER_GROUP];
	uint64_t sum;
	uint32_t errors;
};

struct sender {
	unsigned index;
	struct receiver *group;		/* the group's FDS_PER_GROUP receivers */
};

static struct receiver *receivers;
static struct sender *senders;

static uint32_t payload_word(unsigned sender, unsigned k)
{
	return (sender + 1) * 0x9E3779B1u ^ k * 0x85EBCA6Bu;
}

/* Words 0 and 1 are sender << 16 | receiver and the round. */
static void sender_fn(void *arg)
{
	struct sender *s = arg;
	uint32_t msg[MSG_WORDS];

	for (unsigned k = 2; k < MSG_WORDS; k++)
		msg[k] = payload_word(s->index, k);
	for (uint32_t i = 0; i < cfg.loops; i++)
		for (unsigned j = 0; j < FDS_PER_GROUP; j++) {
			msg[0] = s->index << 16 | j;
			msg[1] = i;
			chan_send(&s->group[j].sock, msg);
		}
	complete_one(&done);
}

static void receiver_fn(void *arg)
{
	struct receiver *r = arg;
	uint32_t msg[MSG_WORDS];

	for (uint64_t n = 0; n < (uint64_t)FDS_PER_GROUP * cfg.loops; n++) {
		chan_recv(&r->sock, msg);
		unsigned from = msg[0] >> 16;

		if ((msg[0] & 0xffff) != r->index || from >= FDS_PER_GROUP ||
		    msg[1] != r->next_seq[from]++)
			r->errors++;
		for (unsigned k = 0; k < MSG_WORDS; k++)
			r->sum += msg[k];
	}
	complete_one(&done);
}

static void messaging_prepare(void)
{
	unsigned n = cfg.groups * FDS_PER_GROUP;

	receivers = heap_alloc(n * sizeof(*receivers), 64);
	senders = heap_alloc(n * sizeof(*senders), 64);
	for (unsigned g = 0; g < cfg.groups; g++) {
		struct receiver *group = &receivers[g * FDS_PER_GROUP];

		for (unsigned i = 0; i < FDS_PER_GROUP; i++) {
			struct receiver *r = &group[i];

			chan_init(&r->sock, SOCK_CAPACITY, MSG_WORDS * 4, SOCK_CAPACITY / 4);
			r->index = i;
			for (unsigned j = 0; j < FDS_PER_GROUP; j++)
				r->next_seq[j] = 0;
			r->sum = 0;
			r->errors = 0;
			fork_task("receiver", receiver_fn, r, -1);
		}
		for (unsigned i = 0; i < FDS_PER_GROUP; i++) {
			struct sender *s = &senders[g * FDS_PER_GROUP + i];

			s->index = i;
			s->group = group;
			fork_task("sender", sender_fn, s, -1);
		}
	}
}

static bool messaging_check(const char **what)
{
	uint64_t payload = 0;

	/* What one receiver must have summed: from each sender s, rounds
	 * 0..loops-1 of (s << 16 | r) + round + its payload words. */
	for (unsigned s = 0; s < FDS_PER_GROUP; s++)
		for (unsigned k = 2; k < MSG_WORDS; k++)
			payload += payload_word(s, k);
	uint64_t loops = cfg.loops;
	uint64_t rounds = loops * (loops - 1) / 2 * FDS_PER_GROUP;
	uint64_t senders_ids = 0;

	for (unsigned s = 0; s < FDS_PER_GROUP; s++)
		senders_ids += (uint64_t)s << 16;
	for (unsigned i = 0; i < cfg.groups * FDS_PER_GROUP; i++) {
		struct receiver *r = &receivers[i];
		uint64_t want = loops * (payload + senders_ids +
					 (uint64_t)FDS_PER_GROUP * r->index) + rounds;

		if (r->errors) {
			*what = "a receiver got messages out of order or misaddressed";
			return false;
		}
		if (r->sum != want) {
			*what = "a receiver's checksum differs from what was sent";
			return false;
		}
		for (unsigned s = 0; s < FDS_PER_GROUP; s++)
			if (r->next_seq[s] != cfg.loops) {
				*what = "a receiver missed messages";
				return false;
			}
	}
	return true;
}

/* ---- common ---- */

const char *workload_name(enum workload w)
{
	switch (w) {
	case WORKLOAD_PIPE:
		return "pipe";
	case WORKLOAD_MESSAGING:
		return "messaging";
	case WORKLOAD_CTXSW:
		return "ctxsw";
	}
	return "?";
}

void workload_prepare(void)
{
	max_tasks = cfg.workload == WORKLOAD_MESSAGING ? cfg.groups * 2 * FDS_PER_GROUP : 2;
	tasks = heap_alloc(max_tasks * sizeof(*tasks), 8);
	fork_load = heap_alloc(cfg.ncpus * sizeof(*fork_load), 8);
	for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
		fork_load[cpu] = 0;
	fork_load[0] = 1;	/* the controller */
	completion_init(&done, max_tasks);
	if (cfg.workload == WORKLOAD_MESSAGING)
		messaging_prepare();
	else
		pingpong_prepare(cfg.workload == WORKLOAD_CTXSW);
	if (!cfg.quiet) {
		printf("sched: %u tasks placed (CPU:tasks):", ntasks);
		for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
			if (fork_load[cpu] - (cpu == 0))
				printf(" %u:%u", cpu, fork_load[cpu] - (cpu == 0));
		printf("\n");
	}
}

void workload_start(void)
{
	for (unsigned i = 0; i < ntasks; i++)
		wake_up_new_task(tasks[i]);
}

void workload_wait(void)
{
	wait_for_completion(&done);
}

void workload_check(struct workload_result *r)
{
	r->ok = true;
	r->what = NULL;
	switch (cfg.workload) {
	case WORKLOAD_PIPE:
	case WORKLOAD_CTXSW:
		r->ops = cfg.workload == WORKLOAD_PIPE ? cfg.loops : 2ull * cfg.loops;
		if (pingpong_errors || pingpong_done != cfg.loops) {
			r->ok = false;
			r->what = "a reply was not the value sent + 1, or round trips are missing";
		}
		break;
	case WORKLOAD_MESSAGING:
		r->ops = (uint64_t)cfg.groups * FDS_PER_GROUP * FDS_PER_GROUP * cfg.loops;
		r->ok = messaging_check(&r->what);
		break;
	}
}
