# Holds the stub while a second client knocks, then lets the run go on.
shell bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$GDB_TEST_PORT"; sleep 1'
detach
