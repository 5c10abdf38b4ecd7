package fleet

import "time"

// CPUSample is one process's CPU time so far (with its descendants').
type CPUSample struct {
	Group string // e.g. "mysql", "instance", "nginx"
	// Process names one incarnation of the process (name, pid and start
	// time): a process restarted during a run (a fault) is not compared
	// with its predecessor, and counts for neither.
	Process string
	CPU     time.Duration
}
