"""Pure logic with no I/O: ids, time, validation, query building, ranking, planning."""
