# Stops at a breakpoint, then gdb dies without a word: the run goes on.
break race_store
continue
shell kill -9 $PPID
