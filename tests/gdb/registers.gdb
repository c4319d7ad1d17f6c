# At main on one vCPU: what both QEMU's stub and topolab's must agree on.
break main
continue
printf "reg rip %#lx\n", $rip
printf "reg cs %#x\n", $cs
printf "reg ss %#x\n", $ss
printf "reg cr0 %#lx\n", $cr0
printf "reg cr3 %#lx\n", $cr3
printf "reg efer %#lx\n", $efer
printf "reg race_winner %#x\n", race_winner
printf "reg code %#x %#x\n", *(unsigned int *)main, *((unsigned int *)main + 1)
printf "reg ipi_handler %#lx\n", (unsigned long)ipi_handler
stepi
printf "reg rip after stepi %#lx\n", $rip
maintenance packet Qqemu.PhyMemMode:1
printf "reg physical code %#x\n", *(unsigned int *)main
maintenance packet Qqemu.PhyMemMode:0
delete
kill
