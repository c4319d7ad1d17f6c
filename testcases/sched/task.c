// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Tasks: memory, creation, the first switch of each CPU, exit.
 *
 * Memory comes from a bump allocator above the image (nothing is freed: a
 * run ends when its workload does). Each task is one 16 KiB block aligned to
 * 16 KiB with the struct at its bottom, so current() is RSP rounded down; a
 * canary in the struct's first word catches a stack that ran into it.
 *
 * A new task's stack looks like switch_to saved it (R15..RBP, then the
 * return address task_trampoline), with R12 = the task: the first switch to
 * it "returns" into task_trampoline, which calls task_bootstrap.
 */
#include "lib/idt.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/string.h"

#include "sched/sched.h"

#define MAX_TASKS	8192	/* 100 groups of messaging, 256 idle tasks */

extern char __bss_end[];
extern char task_trampoline[];

static uintptr_t heap_next, heap_end;
static struct task *all_tasks[MAX_TASKS];
static unsigned ntasks;

static uintptr_t align_up(uintptr_t v, uint64_t a)
{
	return (v + a - 1) & ~(uintptr_t)(a - 1);
}

/*
 * QEMU's Multiboot loader puts the info block and the command line right
 * after the image's BSS; lib_start has copied the command line by now and
 * main has read the info block, but 1 MiB of distance costs nothing.
 */
void heap_init(uintptr_t end)
{
	heap_next = align_up((uintptr_t)__bss_end + 0x100000, TASK_STACK_SIZE);
	heap_end = end;
}

void *heap_alloc(uint64_t size, uint64_t align)
{
	uintptr_t p = align_up(heap_next, align);

	if (p + size > heap_end || p + size < p) {
		printf("FAIL: sched.memory (out of guest RAM at 0x%llx asking for %llu bytes: "
		       "fewer groups, or more -m)\n", (unsigned long long)p,
		       (unsigned long long)size);
		debug_exit(EXIT_FAIL);
	}
	heap_next = p + size;
	return (void *)p;
}

struct task *task_create(const char *name, void (*fn)(void *), void *arg,
			 unsigned cpu, int pinned)
{
	uint8_t *block = heap_alloc(TASK_STACK_SIZE, TASK_STACK_SIZE);
	struct task *t = (struct task *)block;

	if (ntasks == MAX_TASKS) {
		printf("FAIL: sched.tasks (more than %u tasks: fewer groups)\n", MAX_TASKS);
		debug_exit(EXIT_FAIL);
	}
	memset(t, 0, sizeof(*t));
	t->canary = TASK_CANARY;
	t->state = TASK_SLEEPING;	/* runnable once woken (wake_up_new_task) */
	t->cpu = (int)cpu;
	t->pinned = pinned;
	t->id = ntasks;
	t->name = name;
	t->fn = fn;
	t->arg = arg;
	all_tasks[ntasks++] = t;

	/* switch_to's frame, lowest address first: R15 R14 R13 R12 RBX RBP RIP.
	 * 72 bytes below the (16-aligned) top, so RSP is 16-aligned again after
	 * the 7 pops, at task_trampoline's call. */
	uint64_t *sp = (uint64_t *)(block + TASK_STACK_SIZE - 72);

	memset(sp, 0, 7 * sizeof(uint64_t));
	sp[3] = (uint64_t)(uintptr_t)t;
	sp[6] = (uint64_t)(uintptr_t)task_trampoline;
	t->rsp = (uint64_t)(uintptr_t)sp;
	return t;
}

/* Called by task_trampoline, on the new task's stack, IRQs off and the
 * runqueue lock held by the schedule() that switched here. */
__attribute__((noreturn)) void task_bootstrap(struct task *self);

void task_bootstrap(struct task *self)
{
	bool idle = self == cpu_rq((unsigned)self->cpu)->idle;

	finish_switch(self);
	if (!idle)
		irq_enable();	/* tasks run with interrupts on, as in Linux */
	self->fn(self->arg);
	task_exit();
}

void task_exit(void)
{
	current()->state = TASK_DEAD;
	schedule();
	printf("FAIL: sched.exit (a dead task was scheduled again)\n");
	debug_exit(EXIT_FAIL);
}

/*
 * The boot stack is not a task (it is not aligned for current()), so the
 * CPU leaves it for good: the switch goes as if from a task whose saved RSP
 * nobody reads, under the runqueue lock finish_switch releases.
 */
void task_start_cpu(unsigned cpu)
{
	struct rq *rq = cpu_rq(cpu);
	uint64_t boot_rsp;

	irq_disable();
	spin_lock(&rq->lock);
	rq->switch_prev = NULL;
	rq->curr = rq->idle;
	rq->idle->on_cpu = 1;
	switch_to(&boot_rsp, rq->idle->rsp);
	__builtin_unreachable();
}

bool task_canaries_ok(void)
{
	for (unsigned i = 0; i < ntasks; i++)
		if (all_tasks[i]->canary != TASK_CANARY) {
			printf("FAIL: sched.stack (task %u \"%s\" overflowed its stack)\n",
			       i, all_tasks[i]->name);
			return false;
		}
	return true;
}
