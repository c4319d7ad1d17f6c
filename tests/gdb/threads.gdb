# 4 threads with their topology; every vCPU stops at race_store once.
info threads
monitor info topology
monitor memory physical
printf "physical race_winner %#x\n", race_winner
monitor memory virtual
break race_store
continue
printf "hit on thread %d\n", $_thread
continue
printf "hit on thread %d\n", $_thread
continue
printf "hit on thread %d\n", $_thread
continue
printf "hit on thread %d\n", $_thread
info threads
delete
continue
