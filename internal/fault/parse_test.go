package fault_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/fault"
)

func TestParseFault(t *testing.T) {
	tests := []struct {
		spec string
		want fleet.Fault
		err  string
	}{
		{"pause:inst-2@5s+5s", fleet.Fault{Kind: fault.Pause, Component: "inst-2", Start: 5 * time.Second, Duration: 5 * time.Second}, ""},
		{"kill:redis-1@0s+1.5s", fleet.Fault{Kind: fault.Kill, Component: "redis-1", Start: 0, Duration: 1500 * time.Millisecond}, ""},
		{"latency=300ms:inst-1/mysql@5s+5s", fleet.Fault{Kind: fault.Latency, Param: "300ms", Component: "inst-1/mysql", Start: 5 * time.Second, Duration: 5 * time.Second}, ""},
		{"partition:inst-2/redis@5s+2.5s", fleet.Fault{Kind: fault.Partition, Component: "inst-2/redis", Start: 5 * time.Second, Duration: 2500 * time.Millisecond}, ""},
		{"clock=2s:redis-3@1s+1s", fleet.Fault{Kind: fault.Clock, Param: "2s", Component: "redis-3", Start: time.Second, Duration: time.Second}, ""},
		{"freeze:inst-2@5s+5s", fleet.Fault{}, `unknown kind "freeze"; valid: pause, kill, restart, partition, latency, clock, failover`},
		{"pause=1s:inst-2@5s+5s", fleet.Fault{}, "pause takes no parameter"},
		{"latency=slow:mysql@5s+5s", fleet.Fault{}, `parameter "slow" is not a duration`},
		{"latency=-1s:mysql@5s+5s", fleet.Fault{}, `parameter "-1s" is not a duration`},
		{"pause:inst-2", fleet.Fault{}, "KIND[=PARAM]:TARGET@START+DURATION"},
		{"pause@5s+5s", fleet.Fault{}, "KIND[=PARAM]:TARGET@START+DURATION"},
		{"pause:@5s+5s", fleet.Fault{}, "KIND[=PARAM]:TARGET@START+DURATION"},
		{"pause:inst-2@5s", fleet.Fault{}, "KIND[=PARAM]:TARGET@START+DURATION"},
		{"pause:inst-2@soon+5s", fleet.Fault{}, "start"},
		{"pause:inst-2@5s+0s", fleet.Fault{}, "duration"},
		{"pause:inst-2@-1s+5s", fleet.Fault{}, "start"},
	}
	for _, tt := range tests {
		got, err := fault.Parse(tt.spec)
		if tt.err != "" {
			if err == nil || !errors.Is(err, fault.ErrBadFault) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want one mentioning %q", tt.spec, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.spec && tt.spec != "kill:redis-1@0s+1.5s" {
			t.Errorf("%q: %+v, %v (String %q)", tt.spec, got, err, got.String())
		}
	}
}
