package fleet

import (
	"fmt"
	"time"
)

// Fault is one fault injected at a fixed time of every run: Kind on
// Component from Start (after the run's first request) for Duration.
type Fault struct {
	Kind string
	// Param is the kind's parameter: the delay of a latency fault, the
	// jump of a clock fault ("" for the default).
	Param     string
	Component string
	Start     time.Duration
	Duration  time.Duration
}

// String is the fault's spec, as ParseFault reads it.
func (f Fault) String() string {
	kind := f.Kind
	if f.Param != "" {
		kind += "=" + f.Param
	}
	return fmt.Sprintf("%s:%s@%s+%s", kind, f.Component, f.Start, f.Duration)
}
