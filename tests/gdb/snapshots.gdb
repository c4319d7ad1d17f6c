# The monitor's snapshots: save a point of history by name, go on, go back
# to it with `snapshot load` (the same registers and memory), forward again
# to a later one, list them.
break race_store
continue
continue
stepi
stepi
monitor snapshot save two_stores
set $saved_thread = $_thread
printf "saved rip %#lx rsp %#lx race_winner %d\n", $rip, $rsp, race_winner
delete
break ipi_handler
continue
set $later_thread = $_thread
printf "later rip %#lx rsp %#lx race_winner %d\n", $rip, $rsp, race_winner
monitor snapshot save in_handler
monitor snapshot list
monitor snapshot load two_stores
flushregs
eval "thread %d", $saved_thread
printf "loaded rip %#lx rsp %#lx race_winner %d\n", $rip, $rsp, race_winner
monitor snapshot load in_handler
flushregs
eval "thread %d", $later_thread
printf "forward again rip %#lx rsp %#lx race_winner %d\n", $rip, $rsp, race_winner
monitor snapshot load nothing
delete
continue
