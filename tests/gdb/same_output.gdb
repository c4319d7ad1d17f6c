# Stop and go on, many ways: the run must not notice.
break race_store
continue
echo stopped\n
stepi
echo stopped\n
continue
echo stopped\n
thread 1
stepi
echo stopped\n
delete
break ipi_handler
continue
echo stopped\n
delete
continue
