package fleet

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/internal/fault"
)

// FaultKinds lists the kinds ParseFault accepts.
func FaultKinds() []string { return fault.Names(true) }

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

// ErrBadFault wraps every fault spec error.
var ErrBadFault = errors.New("bad fault")

// ParseFault reads KIND[=PARAM]:TARGET@START+DURATION, e.g.
// pause:inst-2@5s+5s, latency=300ms:mysql@5s+5s,
// partition:inst-2/mysql@5s+5s, clock=2s:redis-3@5s+1s.
func ParseFault(spec string) (Fault, error) {
	usage := fmt.Sprintf("want KIND[=PARAM]:TARGET@START+DURATION such as pause:inst-2@5s+5s or latency=300ms:mysql@5s+5s, KIND one of %s", strings.Join(FaultKinds(), ", "))
	kind, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return Fault{}, fmt.Errorf("%w %q: %s", ErrBadFault, spec, usage)
	}
	kind, param, _ := strings.Cut(kind, "=")
	comp, when, ok := strings.Cut(rest, "@")
	if !ok || comp == "" {
		return Fault{}, fmt.Errorf("%w %q: %s", ErrBadFault, spec, usage)
	}
	startS, durS, ok := strings.Cut(when, "+")
	if !ok {
		return Fault{}, fmt.Errorf("%w %q: %s", ErrBadFault, spec, usage)
	}
	if !slices.Contains(FaultKinds(), kind) {
		return Fault{}, fmt.Errorf("%w %q: unknown kind %q; valid: %s", ErrBadFault, spec, kind, strings.Join(FaultKinds(), ", "))
	}
	if param != "" {
		if k, _ := fault.Lookup(kind); k.Param == "" {
			return Fault{}, fmt.Errorf("%w %q: %s takes no parameter (latency=DELAY and clock=OFFSET do)", ErrBadFault, spec, kind)
		}
		if d, err := time.ParseDuration(param); err != nil || d <= 0 {
			return Fault{}, fmt.Errorf("%w %q: parameter %q is not a duration > 0 such as 300ms", ErrBadFault, spec, param)
		}
	}
	start, err := time.ParseDuration(startS)
	if err != nil || start < 0 {
		return Fault{}, fmt.Errorf("%w %q: start %q is not a duration >= 0 such as 5s", ErrBadFault, spec, startS)
	}
	dur, err := time.ParseDuration(durS)
	if err != nil || dur <= 0 {
		return Fault{}, fmt.Errorf("%w %q: duration %q is not a duration > 0 such as 5s", ErrBadFault, spec, durS)
	}
	return Fault{Kind: kind, Param: param, Component: comp, Start: start, Duration: dur}, nil
}
