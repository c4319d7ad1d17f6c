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
#pragma once

#include <string>

#include "lab/consumer_views.h"

namespace topolab {

std::string format_linux_sysfs(const ConsumerView& linux_view);

}  // namespace topolab
