// SPDX-License-Identifier: GPL-2.0-or-later
// What Linux's sysfs shows of a machine's topology and caches, as topolab's
// CPUID model predicts it: the cpu*/topology/*_list files and every
// cpu*/cache/index*/{level,type,shared_cpu_list}, from the linux-6.x
// decoder of lab/consumer_views.h. The lines have the form the Linux
// guest's /init (tools/linux_init.sh) prints, so a guest's view and the
// prediction compare line by line:
//
//   topolab-topology cpu0 core_cpus_list=0-1 die_cpus_list=0-7 ...
//   topolab-cache cpu0 index0 level=1 type=Data shared_cpu_list=0-1
//   topolab-node node0 cpulist=0-3 distance=10,21 memory_kb=524288
//
// The nodes are what Linux 6.1 makes of the SRAT and SLIT the firmware
// builds (firmware/acpi.h) from -numa, or its one fake node without them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lab/consumer_views.h"
#include "model/numa.h"
#include "model/topology.h"

namespace topolab {

std::string format_linux_sysfs(const ConsumerView& linux_view);

// Linux's NUMA nodes. Linux numbers them as the proximity domains first
// appear in the SRAT (acpi_map_pxm_to_node): the processor entries in CPU
// order, then the memory entries in node order; a -numa node with neither
// CPUs nor memory is in neither and is no Linux node. Distances are the
// SLIT's, unless Linux rejects it (a diagonal other than 10, a remote
// distance of 10 or less: slit_valid()), then 10 and 20.
struct LinuxNode {
  unsigned node = 0;           // Linux's number
  unsigned proximity = 0;      // the SRAT's (QEMU's -numa nodeid)
  std::vector<unsigned> cpus;  // present CPUs (sysfs lists online ones)
  uint64_t memory_bytes = 0;   // what the SRAT gives it (MemTotal is less)
};
struct LinuxNumaView {
  std::vector<LinuxNode> nodes;
  std::vector<std::vector<uint8_t>> distance;  // [from][to], Linux's numbers
  bool srat = false, slit = false;             // what the firmware gives it
  bool slit_rejected = false;                  // "SLIT table looks invalid. Not used."
  // The siblings topology_sane() will find on another node, as it names
  // them: "smt", "l2c", "llc" ("sched: CPU #N's llc-sibling CPU #M is not
  // on the same node!"; filled in by apply_linux_numa()).
  std::vector<std::string> complaints;
};
LinuxNumaView linux_numa_view(const NumaConfig& numa, const Topology& topology, uint64_t ram_bytes);

// What Linux 6.1 does to the caches it shows once it knows the nodes: on
// AMD (and Hygon) the L3's shared_cpu_list is cpu_llc_shared_mask
// (cacheinfo.c __cache_amd_cpumap_setup), which match_llc() builds only
// from CPUs on the same node (topology_sane(): "llc-sibling ... not on the
// same node. Ignoring dependency."), so a node cut through an LLC cuts the
// L3 Linux shows too. Intel's L3 comes from leaf 4 and stays; Intel parts
// are exempt from the LLC complaint (match_llc's SNC rule, any family-6
// model in 6.1), AMD's are not. Fills in numa.complaints.
void apply_linux_numa(ConsumerView& linux_view, LinuxNumaView& numa, bool amd);

// "topolab-numa nodes=N srat=yes|no slit=none|used|rejected
// complaints=llc,smt|none" (what Linux must and must not complain about),
// then one "topolab-node" line per
// node, as /init prints them (memory_kb is the SRAT's; the guest prints its
// MemTotal beside it).
std::string format_linux_nodes(const LinuxNumaView& view);

}  // namespace topolab
