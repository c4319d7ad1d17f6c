# 4 threads with their topology; every vCPU stops at race_store once.
info threads
monitor info topology
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
