# Backwards on an SMP guest: reverse-stepi and forwards again to the same
# state; reverse-continue to the last store to race_winner before now (which
# vCPU, which instruction); back through an IPI handler and forwards again;
# the start of history.
break race_store
continue
continue
stepi
stepi
stepi
printf "forward rip %#lx\n", $rip
reverse-stepi
printf "back rip %#lx\n", $rip
stepi
printf "forward again rip %#lx\n", $rip
delete
watch race_winner
continue
continue
printf "now race_winner %d on thread %d\n", race_winner, $_thread
reverse-continue
printf "last writer thread %d wrote %d at rip %#lx\n", $_thread, race_winner, $rip
delete
break ipi_handler
continue
printf "handler entry thread %d rip %#lx\n", $_thread, $rip
stepi
stepi
stepi
stepi
printf "in handler rip %#lx rsp %#lx rdi %#lx\n", $rip, $rsp, $rdi
reverse-stepi
reverse-stepi
reverse-stepi
reverse-stepi
printf "handler entry again rip %#lx\n", $rip
stepi
stepi
stepi
stepi
printf "in handler again rip %#lx rsp %#lx rdi %#lx\n", $rip, $rsp, $rdi
delete
reverse-continue
printf "history begin rip %#lx\n", $rip
continue
