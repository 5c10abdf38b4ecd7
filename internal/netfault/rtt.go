package netfault

import (
	"fmt"
	"strings"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// RTTToxic is the toxic type that delays each chunk by a one-way delay
// given in microseconds: Toxiproxy's own latency toxic counts whole
// milliseconds, too coarse for a same-zone network (0.1-0.5 ms). A link's
// round trip of D is RTTToxic{D/2} on each of its two streams.
const RTTToxic = "rtt"

// rttToxic delays every chunk until DelayUS after it entered the proxy, in
// arrival order (the chunks of a stream are never reordered).
type rttToxic struct {
	// DelayUS is the one-way delay in microseconds.
	DelayUS int64 `json:"delay_us"`
}

// GetBufferSize lets chunks queue while earlier ones wait out their delay,
// as packets in flight on a link do.
func (t *rttToxic) GetBufferSize() int { return 1024 }

// Pipe forwards each chunk once its delay since arrival has passed.
func (t *rttToxic) Pipe(stub *toxics.ToxicStub) {
	delay := time.Duration(t.DelayUS) * time.Microsecond
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			due := c.Timestamp.Add(delay)
			// The next toxic on the stream (a latency fault on a link
			// that already has its round trip) counts from here.
			c.Timestamp = due
			if !waitUntil(due, stub.Interrupt) {
				stub.Output <- c // drop no data on an interrupt
				return
			}
			stub.Output <- c
		}
	}
}

// timerWait is waitUntil on Go's timer: a millisecond late when the
// runtime is idle (its poller counts whole milliseconds).
func timerWait(due time.Time, interrupt <-chan struct{}) bool {
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-interrupt:
		return false
	}
}

func init() { toxics.Register(RTTToxic, new(rttToxic)) }

// Profile is a named network round-trip time.
type Profile struct {
	Name string
	RTT  time.Duration
	// Where says what network it stands for.
	Where string
}

// Profiles are the named round trips `seckill up --rtt` takes.
var Profiles = []Profile{
	{"loopback", 0, "one machine, no added round trip (what the lab does without --rtt)"},
	{"zone", 200 * time.Microsecond, "servers in the same zone (0.1-0.5 ms)"},
	{"cross-zone", 2 * time.Millisecond, "servers in another zone of the region (1-3 ms)"},
	{"region", 30 * time.Millisecond, "servers in another region"},
}

// ProfileNames lists the profiles' names.
func ProfileNames() []string {
	out := make([]string, len(Profiles))
	for i, p := range Profiles {
		out[i] = p.Name
	}
	return out
}

// ParseRTT reads a profile's name or a duration ("0.5ms", "300us") into
// the profile's name ("" for a duration) and the round trip.
func ParseRTT(s string) (string, time.Duration, error) {
	for _, p := range Profiles {
		if s == p.Name {
			return p.Name, p.RTT, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > time.Minute {
		return "", 0, fmt.Errorf("rtt %q: want a profile (%s) or a duration from 0 to 1m such as 0.3ms or 300us",
			s, strings.Join(ProfileNames(), ", "))
	}
	return "", d, nil
}
