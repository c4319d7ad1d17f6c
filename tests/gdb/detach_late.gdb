# Holds the stub while a second client knocks, then lets the run go on.
shell sleep 3
detach
