package fault

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
)

// ErrBadFault wraps every fault spec error.
var ErrBadFault = errors.New("bad fault")

// Parse reads a fault spec, KIND[=PARAM]:TARGET@START+DURATION, e.g.
// pause:inst-2@5s+5s, latency=300ms:mysql@5s+5s,
// partition:inst-2/mysql@5s+5s, clock=2s:redis-3@5s+1s.
func Parse(spec string) (fleet.Fault, error) {
	usage := fmt.Sprintf("want KIND[=PARAM]:TARGET@START+DURATION such as pause:inst-2@5s+5s or latency=300ms:mysql@5s+5s, KIND one of %s", strings.Join(Names(true), ", "))
	kind, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return fleet.Fault{}, fmt.Errorf("%w %q: %s", ErrBadFault, spec, usage)
	}
	kind, param, _ := strings.Cut(kind, "=")
	comp, when, ok := strings.Cut(rest, "@")
	if !ok || comp == "" {
		return fleet.Fault{}, fmt.Errorf("%w %q: %s", ErrBadFault, spec, usage)
	}
	startS, durS, ok := strings.Cut(when, "+")
	if !ok {
		return fleet.Fault{}, fmt.Errorf("%w %q: %s", ErrBadFault, spec, usage)
	}
	if !slices.Contains(Names(true), kind) {
		return fleet.Fault{}, fmt.Errorf("%w %q: unknown kind %q; valid: %s", ErrBadFault, spec, kind, strings.Join(Names(true), ", "))
	}
	if param != "" {
		if k, _ := Lookup(kind); k.Param == "" {
			return fleet.Fault{}, fmt.Errorf("%w %q: %s takes no parameter (latency=DELAY and clock=OFFSET do)", ErrBadFault, spec, kind)
		}
		if d, err := time.ParseDuration(param); err != nil || d <= 0 {
			return fleet.Fault{}, fmt.Errorf("%w %q: parameter %q is not a duration > 0 such as 300ms", ErrBadFault, spec, param)
		}
	}
	start, err := time.ParseDuration(startS)
	if err != nil || start < 0 {
		return fleet.Fault{}, fmt.Errorf("%w %q: start %q is not a duration >= 0 such as 5s", ErrBadFault, spec, startS)
	}
	dur, err := time.ParseDuration(durS)
	if err != nil || dur <= 0 {
		return fleet.Fault{}, fmt.Errorf("%w %q: duration %q is not a duration > 0 such as 5s", ErrBadFault, spec, durS)
	}
	return fleet.Fault{Kind: kind, Param: param, Component: comp, Start: start, Duration: dur}, nil
}
