# Stop on stores that change race_winner: each stop is right after the
# store, on the vCPU that made it, so the value is that vCPU's own index.
define check_writer
  if race_winner + 1 == $_thread
    printf "writer thread %d wrote %d ok\n", $_thread, race_winner
  else
    printf "writer thread %d wrote %d wrong\n", $_thread, race_winner
  end
end
break race_store
continue
delete
watch race_winner
continue
check_writer
continue
check_writer
continue
check_writer
delete
continue
