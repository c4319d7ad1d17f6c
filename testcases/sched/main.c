// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sched.elf: boots every CPU into the scheduler and runs one workload,
 * measured between outl(1) and outl(2) to the window port 0x4A0.
 *
 * Command line (all optional; the issue 4 contract):
 *   workload=pipe|messaging|ctxsw   (pipe)
 *   idle=halt|poll|mwait|haltpoll=NS (halt; NS of virtual time)
 *   wakelist=res|cal                 (res: 2016 kernels; cal: Linux 6.x)
 *   loops=N     pipe/ctxsw: round trips (2000); messaging: messages per
 *               sender per receiver (100)
 *   groups=N    messaging groups of 20 senders + 20 receivers (1, at most 100)
 *   cpus=N      use CPUs 0..N-1 (all)
 *   tsc_khz=N   the TSC rate, to turn cycles into ns (2000000, topolab's)
 *   op_ns=N     kernel work burnt in every channel write and read of pipe
 *               and messaging, in ns of TSC time (1000; 0 = none; at most
 *               10^9). ctxsw burns none, measuring the switch itself, and
 *               reports op_ns=0. See wait.c.
 *   quiet=1     print only the sched-result line (and FAIL lines)
 *
 * Where op_ns=1000 comes from: a Linux pipe or unix-socket write or read
 * is a syscall that enters and leaves the kernel, looks up the file,
 * copies the data and (sockets) allocates and frees an skb. I found no
 * published per-operation figure for a Skylake-era CPU (lmbench's lat_pipe
 * and lat_unix report round trips, and no Skylake table of theirs turned
 * up), only round trips of ping-pong benchmarks, each of which is two
 * writes, two reads, two wakeups and two context switches:
 * - Linux 6.6 on an 11th-generation Core i7: two processes ping-ponging a
 *   byte through pipes, 4,820 ns per round trip
 *   (https://ddumbying.vercel.app/experiments/ctx-switch-overhead);
 * - Core i7-12650H with KPTI, the tasks pinned to two cores: pipe 6,236 ns
 *   and unix socket 4,611 ns per round trip (p50), and 101 ns for a bare
 *   user/kernel crossing (getpid)
 *   (https://riyaneel.github.io/posts/kernel-tax/).
 * Taking about 1 us for each wakeup plus switch out of these leaves 0.65
 * to 1.06 us per write or read, on CPUs newer and clocked higher than a
 * 2 GHz Skylake server, under kernels with KPTI (which makes each crossing
 * dearer; the 2016 kernels had none). 1 us is a round figure at the top of
 * that range, not a measurement.
 *
 * Output: human lines, PASS/FAIL, then one line
 *   sched-result: workload=pipe idle=halt wakelist=res cpus=16 llc_size=16 ...
 * of key=value pairs with integer values past the first three; haltpoll
 * prints idle=haltpoll haltpoll_ns=NS. The counters are sums over the CPUs
 * of the measured window only; per-CPU counts are on the human lines.
 * Exit status 0 only if the workload's data checked out.
 *
 * Boot: the BSP starts the APs, each of which records its APIC mode and
 * address (wake.c) and decodes its own LLC id from CPUID (as Linux does per
 * CPU), then switches to its idle task. The BSP queues the controller task
 * (perf's parent: it creates the workload's tasks, opens the window, starts
 * them, waits for them, closes the window and reports) on CPU 0 and becomes
 * CPU 0's idle task too.
 */
#include "lib/cmdline.h"
#include "lib/cpuid.h"
#include "lib/io.h"
#include "lib/msr.h"
#include "lib/printf.h"
#include "lib/report.h"
#include "lib/smp.h"
#include "lib/start.h"
#include "lib/string.h"

#include "sched/sched.h"

#define START_WAIT_LOOPS	200000000u
#define MB_INFO_MEM		(1u << 0)	/* mem_lower/mem_upper are valid */

struct sched_config cfg = {
	.workload = WORKLOAD_PIPE,
	.idle = IDLE_HALT,
	.wakelist = WAKELIST_RES,
	.groups = 1,
	.tsc_khz = 2000000,
	.op_ns = 1000,
};

static uint32_t default_loops(enum workload w)
{
	switch (w) {
	case WORKLOAD_PIPE:
		return 2000;
	case WORKLOAD_MESSAGING:
		return 100;	/* perf bench sched messaging's default */
	case WORKLOAD_CTXSW:
		return 2000;
	}
	return 1;
}

static bool parse_u32(const char *s, uint32_t *v)
{
	uint64_t n = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		n = n * 10 + (uint64_t)(*s - '0');
		if (n > UINT32_MAX)
			return false;
	}
	*v = (uint32_t)n;
	return true;
}

static bool starts_with(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return false;
	return true;
}

static const char *parse_cmdline(uint32_t *cpus)
{
	static char buf[64];

	if (cmdline_str("workload", buf, sizeof(buf))) {
		if (!strcmp(buf, "pipe"))
			cfg.workload = WORKLOAD_PIPE;
		else if (!strcmp(buf, "messaging"))
			cfg.workload = WORKLOAD_MESSAGING;
		else if (!strcmp(buf, "ctxsw"))
			cfg.workload = WORKLOAD_CTXSW;
		else
			return "workload= wants pipe, messaging or ctxsw";
	}
	if (cmdline_str("idle", buf, sizeof(buf))) {
		if (!strcmp(buf, "halt"))
			cfg.idle = IDLE_HALT;
		else if (!strcmp(buf, "poll"))
			cfg.idle = IDLE_POLL;
		else if (!strcmp(buf, "mwait"))
			cfg.idle = IDLE_MWAIT;
		else if (starts_with(buf, "haltpoll=") && parse_u32(buf + 9, &cfg.haltpoll_ns))
			cfg.idle = IDLE_HALTPOLL;
		else
			return "idle= wants halt, poll, mwait or haltpoll=NS";
	}
	if (cmdline_str("wakelist", buf, sizeof(buf))) {
		if (!strcmp(buf, "res"))
			cfg.wakelist = WAKELIST_RES;
		else if (!strcmp(buf, "cal"))
			cfg.wakelist = WAKELIST_CAL;
		else
			return "wakelist= wants res or cal";
	}
	const struct {
		const char *key, *bad;
		uint32_t *value, max;
	} nums[] = {
		{ "loops", "loops= wants a number > 0", &cfg.loops, UINT32_MAX },
		{ "groups", "groups= wants 1 to 100", &cfg.groups, 100 },
		{ "cpus", "cpus= wants a number > 0", cpus, UINT32_MAX },
		{ "tsc_khz", "tsc_khz= wants a number > 0", &cfg.tsc_khz, UINT32_MAX },
	};

	cfg.loops = default_loops(cfg.workload);
	for (unsigned i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		uint32_t n;
		enum cmdline_status st = cmdline_uint(nums[i].key, &n);

		if (st == CMDLINE_ABSENT)
			continue;
		if (st == CMDLINE_INVALID || n == 0 || n > nums[i].max)
			return nums[i].bad;
		*nums[i].value = n;
	}
	enum cmdline_status op = cmdline_uint("op_ns", &cfg.op_ns);

	if (op == CMDLINE_INVALID || (op == CMDLINE_FOUND && cfg.op_ns > 1000000000u))
		return "op_ns= wants 0 to 1000000000";
	if (cfg.workload == WORKLOAD_CTXSW)
		cfg.op_ns = 0;	/* ctxsw measures the switch itself */
	cfg.op_cycles = (uint64_t)cfg.op_ns * cfg.tsc_khz / 1000000;

	uint32_t quiet = 0;

	if (cmdline_uint("quiet", &quiet) == CMDLINE_INVALID)
		return "quiet= wants 0 or 1";
	cfg.quiet = quiet != 0;
	return NULL;
}

static __attribute__((noreturn)) void fail(const char *name, const char *why)
{
	report(name, false, "%s", why);
	debug_exit(report_summary());
}

/* ---- the controller task ---- */

/* sum += a - b, field by field (struct sched_stats is all uint64_t). */
static void stats_add(struct sched_stats *sum, const struct sched_stats *a,
		      const struct sched_stats *b)
{
	const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
	uint64_t *ps = (uint64_t *)sum;

	for (unsigned i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
		ps[i] += pa[i] - pb[i];
}

/* One row of the per-CPU table; cpu < 0 is the total. */
static void print_cpu_line(int cpu, const struct sched_stats *s)
{
	if (cpu < 0)
		printf("sched: all   ");
	else
		printf("sched: cpu%-3d", cpu);
	printf(" %7llu %7llu %7llu %5llu %5llu %7llu %7llu %7llu %7llu %7llu %7llu %7llu %7llu %7llu\n",
	       (unsigned long long)s->wakeups, (unsigned long long)s->direct,
	       (unsigned long long)s->queued, (unsigned long long)s->migrations,
	       (unsigned long long)s->forks, (unsigned long long)s->ipi_res,
	       (unsigned long long)s->ipi_cal, (unsigned long long)s->poll_wakes,
	       (unsigned long long)s->recv_res, (unsigned long long)s->recv_cal,
	       (unsigned long long)s->switches, (unsigned long long)s->idle_entries,
	       (unsigned long long)s->halts, (unsigned long long)s->mwaits);
}

static void report_results(const struct sched_stats *before, const struct sched_stats *after,
			   uint64_t cycles, const struct workload_result *r)
{
	struct sched_stats total;
	uint64_t ns = cycles * 1000000 / cfg.tsc_khz;

	memset(&total, 0, sizeof(total));
	for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
		stats_add(&total, &after[cpu], &before[cpu]);
	if (!cfg.quiet) {
		printf("sched: %-6s %7s %7s %7s %5s %5s %7s %7s %7s %7s %7s %7s %7s %7s %7s\n",
		       "cpu", "wakeups", "direct", "queued", "migr", "forks", "res_tx", "cal_tx",
		       "pollwk", "res_rx", "cal_rx", "switch", "idle", "halts", "mwaits");
		for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++) {
			struct sched_stats d;

			memset(&d, 0, sizeof(d));
			stats_add(&d, &after[cpu], &before[cpu]);
			if (d.switches || d.idle_entries || d.wakeups || d.recv_res || d.recv_cal)
				print_cpu_line((int)cpu, &d);	/* CPUs never involved are left out */
		}
		print_cpu_line(-1, &total);
		printf("sched: %s: %llu ops in %llu ns (%llu TSC cycles), %llu ns per op\n",
		       workload_name(cfg.workload), (unsigned long long)r->ops,
		       (unsigned long long)ns, (unsigned long long)cycles,
		       (unsigned long long)(ns / r->ops));
		report(cfg.workload == WORKLOAD_PIPE ? "sched.pipe" :
		       cfg.workload == WORKLOAD_MESSAGING ? "sched.messaging" : "sched.ctxsw",
		       r->ok, "%s", r->what ? r->what : "");
	} else if (!r->ok) {
		printf("FAIL: sched.%s (%s)\n", workload_name(cfg.workload), r->what);
	}
	static const char *const idle_names[] = { "halt", "poll", "mwait", "haltpoll" };

	printf("sched-result: workload=%s idle=%s", workload_name(cfg.workload), idle_names[cfg.idle]);
	if (cfg.idle == IDLE_HALTPOLL)
		printf(" haltpoll_ns=%u", cfg.haltpoll_ns);
	printf(" wakelist=%s cpus=%u llc_size=%u loops=%u groups=%u op_ns=%u",
	       cfg.wakelist == WAKELIST_CAL ? "cal" : "res", cfg.ncpus, llc_size(0), cfg.loops,
	       cfg.groups, cfg.op_ns);
	printf(" elapsed_cycles=%llu elapsed_ns=%llu ns_per_op=%llu ops=%llu",
	       (unsigned long long)cycles, (unsigned long long)ns,
	       (unsigned long long)(ns / r->ops), (unsigned long long)r->ops);
	printf(" wakeups=%llu direct=%llu queued=%llu ipi_res=%llu ipi_cal=%llu ipi_total=%llu"
	       " poll_wakes=%llu idle_entries=%llu halts=%llu mwaits=%llu poll_timeouts=%llu"
	       " migrations=%llu wide=%llu forks=%llu switches=%llu\n",
	       (unsigned long long)total.wakeups, (unsigned long long)total.direct,
	       (unsigned long long)total.queued, (unsigned long long)total.ipi_res,
	       (unsigned long long)total.ipi_cal,
	       (unsigned long long)(total.ipi_res + total.ipi_cal),
	       (unsigned long long)total.poll_wakes, (unsigned long long)total.idle_entries,
	       (unsigned long long)total.halts, (unsigned long long)total.mwaits,
	       (unsigned long long)total.poll_timeouts, (unsigned long long)total.migrations,
	       (unsigned long long)total.wide, (unsigned long long)total.forks,
	       (unsigned long long)total.switches);
}

static void snapshot(struct sched_stats *out)
{
	for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
		out[cpu] = cpu_rq(cpu)->stats;
}

static void controller(void *arg)
{
	struct sched_stats *before = heap_alloc(cfg.ncpus * sizeof(*before), 64);
	struct sched_stats *after = heap_alloc(cfg.ncpus * sizeof(*after), 64);
	struct workload_result r;

	workload_prepare();
	snapshot(before);
	outl(MEASURE_PORT, MEASURE_BEGIN);
	uint64_t t0 = rdtsc();

	workload_start();
	workload_wait();
	uint64_t t1 = rdtsc();

	outl(MEASURE_PORT, MEASURE_END);
	snapshot(after);
	workload_check(&r);
	if (!task_canaries_ok()) {
		r.ok = false;
		r.what = "a task overflowed its stack";
	}
	report_results(before, after, t1 - t0, &r);
	if (cfg.quiet)
		debug_exit(r.ok ? EXIT_PASS : EXIT_FAIL);
	debug_exit(report_summary());
}

/* ---- boot ---- */

static void ap_main(unsigned cpu)
{
	apic_cache_this_cpu(cpu);
	llc_detect_this_cpu(cpu);
}

static void idle_entry(void *arg)
{
	idle_loop();
}

static void start_cpu(void *arg)
{
	task_start_cpu((unsigned)(uintptr_t)arg);
}

static void print_header(void)
{
	char vendor[13];
	uint32_t eax = cpuid(1, 0).eax;

	cpuid_vendor_string(vendor);
	printf("sched: %u of %u CPUs, %s family 0x%x model 0x%x, workload=%s loops=%u",
	       cfg.ncpus, smp_ncpus, vendor,
	       bits(eax, 11, 8) + (bits(eax, 11, 8) == 0xf ? bits(eax, 27, 20) : 0),
	       bits(eax, 7, 4) | (bits(eax, 11, 8) >= 6 ? bits(eax, 19, 16) << 4 : 0),
	       workload_name(cfg.workload), cfg.loops);
	if (cfg.workload == WORKLOAD_MESSAGING)
		printf(" groups=%u", cfg.groups);
	printf(" wakelist=%s tsc_khz=%u op_ns=%u\n", cfg.wakelist == WAKELIST_CAL ? "cal" : "res",
	       cfg.tsc_khz, cfg.op_ns);
	printf("sched: idle=%s", cfg.idle == IDLE_HALT ? "halt" : cfg.idle == IDLE_POLL ? "poll" :
	       cfg.idle == IDLE_MWAIT ? "mwait" : "haltpoll");
	if (cfg.idle == IDLE_HALTPOLL)
		printf(" (poll %u ns, then HLT)", cfg.haltpoll_ns);
	if (cfg.idle == IDLE_MWAIT)
		printf(cfg.mwait_sti ? " (QEMU TCG: sti; mwait with ECX=0)" :
				       " (MWAIT EAX=0 ECX=1 with interrupts off)");
	printf("\n");
	llc_print();
}

int main(const struct multiboot_info *mbi)
{
	uint32_t cpus = 0;
	const char *why = parse_cmdline(&cpus);
	uintptr_t ram_end = 64u << 20;

	if (mbi->flags & MB_INFO_MEM)
		ram_end = 0x100000 + (uintptr_t)mbi->mem_upper * 1024;
	if (why)
		fail("sched.cmdline", why);
	why = smp_init();
	if (why)
		fail("sched.smp", why);
	apic_cache_this_cpu(0);
	wake_ipi_init();
	smp_boot_aps(ap_main);
	llc_detect_this_cpu(0);
	cfg.ncpus = cpus ? cpus : smp_ncpus;
	if (cfg.ncpus > smp_ncpus)
		fail("sched.cpus", "cpus= asks for more CPUs than the MADT lists");
	if (cfg.ncpus > SCHED_MAX_CPUS)
		cfg.ncpus = SCHED_MAX_CPUS;
	for (unsigned cpu = 1; cpu < cfg.ncpus; cpu++)
		if (!smp_cpus[cpu].online)
			fail("sched.smp", "an AP did not come online");
	if (cfg.workload == WORKLOAD_CTXSW && cfg.ncpus < 2)
		fail("sched.cpus", "workload=ctxsw needs 2 CPUs (-smp 2 or more)");
	if (!idle_mode_usable(&why))
		fail("sched.idle", why);
	llc_sizes_init();
	cfg.mwait_sti = cpuid_is_qemu_tcg();
	heap_init(ram_end);
	burn_calibrate();
	if (!cfg.quiet)
		print_header();

	for (unsigned cpu = 0; cpu < cfg.ncpus; cpu++)
		rq_init(cpu, task_create("idle", idle_entry, NULL, cpu, (int)cpu));
	for (unsigned cpu = 1; cpu < cfg.ncpus; cpu++) {
		struct rq *rq = cpu_rq(cpu);
		uint32_t n = 0;

		smp_run_on(cpu, start_cpu, (void *)(uintptr_t)cpu);
		while (!rq->started && n++ < START_WAIT_LOOPS)
			cpu_relax();
		if (!rq->started)
			fail("sched.smp", "an AP did not enter its idle task");
	}
	struct task *ctl = task_create("controller", controller, NULL, 0, 0);

	ctl->state = TASK_RUNNING;
	ctl->on_rq = 1;
	rq_push(cpu_rq(0), ctl);
	task_start_cpu(0);
}
