package stock

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-lab/seckill/stock/catalog"
)

// knob is one knob of a setting, described once: the flags of every
// command that sets a strategy (BindKnobFlags), the setting's JSON
// (MarshalJSON, UnmarshalJSON, ConfigFields), String and Knobs read this
// table, in its order. Exactly one of dur, sw and num is set.
type knob struct {
	// flag is the command-line flag, json the JSON field and String's
	// key, display the name `seckill status` and the dashboard print
	// (Knob.Name).
	flag, json, display string
	// usage is the flag's help text.
	usage func() string
	dur   func(*Config) *time.Duration
	sw    func(*Config) *bool
	num   func(*Config) *int
	// negated: the switch's Config field is its "No..." side, so that its
	// zero value is the default (on); the flag and Knobs say that side,
	// the JSON and String the positive one ("watchdog": false).
	negated bool
	// notZero: 0 is out of range on the wire (omit the field for the
	// default), and the zero Config value means the default (WithDefaults).
	notZero bool
	// omitZero: the JSON leaves the field out when it is 0.
	omitZero bool
	// notInString: String leaves the knob out.
	notInString bool
	// shownFrom is the smallest value Knobs lists a number knob from.
	shownFrom int
}

// knobs are the setting's knobs, in the order its JSON, String and Knobs
// give them.
var knobs = []knob{
	{flag: "work-delay", json: "work_delay", display: "work", dur: func(c *Config) *time.Duration { return &c.WorkDelay },
		usage: func() string { return "simulated work inside the critical section, up to " + MaxWorkDelay.String() }},
	{flag: "lock-ttl", json: "lock_ttl", display: "ttl", dur: func(c *Config) *time.Duration { return &c.LockTTL }, notZero: true,
		usage: func() string {
			return "lock TTL, " + MinLockTTL.String() + ".." + MaxLockTTL.String() + " (default: the service's, " + DefaultLockTTL.String() + ")"
		}},
	{flag: "lock-wait", json: "lock_wait", display: "wait", dur: func(c *Config) *time.Duration { return &c.LockWait }, notZero: true,
		usage: func() string {
			return "lock wait budget, up to " + MaxLockWait.String() + " (default: the service's, " + DefaultLockWait.String() + ")"
		}},
	{flag: "fencing", json: "fencing", display: "fencing", sw: func(c *Config) *bool { return &c.Fencing },
		usage: func() string { return "have the service check fencing tokens (locks with tokens only)" }},
	{flag: "no-watchdog", json: "watchdog", display: "no watchdog", sw: func(c *Config) *bool { return &c.NoWatchdog }, negated: true,
		usage: func() string {
			return "have the locks that renew not renew: with --work-delay > --lock-ttl, holders go stale"
		}},
	{flag: "no-local-queue", json: "local_queue", display: "no local queue", sw: func(c *Config) *bool { return &c.NoLocalQueue }, negated: true,
		usage: func() string { return "every waiter contends at the lock server (no in-process queue in front of it)" }},
	{flag: "no-lease-check", json: "lease_check", display: "no lease check", sw: func(c *Config) *bool { return &c.NoLeaseCheck }, negated: true,
		usage: func() string { return "let a holder whose lease was reported lost commit anyway" }},
	{flag: "batch", json: "batch", display: "batch", num: func(c *Config) *int { return &c.Batch }, omitZero: true, shownFrom: 2,
		usage: func() string { return "a lock holder sells up to B queued purchases in one transaction (0 = off)" }},
	{flag: "release-pause", json: "release_pause", display: "release pause", dur: func(c *Config) *time.Duration { return &c.ReleasePause },
		usage: func() string {
			return "pause between the owner check and the DEL of " + strings.Join(catalog.Names(func(s catalog.Strategy) bool { return s.ReleasePause }), ", ")
		}},
	{flag: "per-user-limit", json: "per_user_limit", display: "per-user limit", num: func(c *Config) *int { return &c.PerUserLimit }, omitZero: true, notInString: true, shownFrom: 1,
		usage: func() string { return "at most N orders per user and goods, for every strategy (0 = no limit)" }},
}

// BindKnobFlags declares the setting's knobs as flags on fs, for every
// command that sets a strategy: the same names, usages and defaults
// everywhere, each 0 or false for the service's own default. The
// returned Config holds what was given; its Name is left to the caller.
func BindKnobFlags(fs *flag.FlagSet) *Config {
	c := &Config{}
	for _, k := range knobs {
		switch {
		case k.dur != nil:
			fs.DurationVar(k.dur(c), k.flag, 0, k.usage())
		case k.sw != nil:
			fs.BoolVar(k.sw(c), k.flag, false, k.usage())
		default:
			fs.IntVar(k.num(c), k.flag, 0, k.usage())
		}
	}
	return c
}

// KnobFlags are the flags BindKnobFlags declares, in the table's order.
func KnobFlags() []string {
	out := make([]string, len(knobs))
	for i, k := range knobs {
		out[i] = k.flag
	}
	return out
}

// ConfigFields are the JSON fields of a setting (PUT /admin/strategy).
func ConfigFields() []string {
	out := []string{"name"}
	for _, k := range knobs {
		out = append(out, k.json)
	}
	return out
}

// marshalConfig writes c's JSON, its defaults filled in, and "instance"
// when it is not "".
func marshalConfig(c Config, instance string) ([]byte, error) {
	c = c.WithDefaults()
	var b bytes.Buffer
	put := func(key string, v any) error {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		j, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("setting field %s: %w", key, err)
		}
		fmt.Fprintf(&b, "%q:%s", key, j)
		return nil
	}
	if err := put("name", c.Name); err != nil {
		return nil, err
	}
	for _, k := range knobs {
		var v any
		switch {
		case k.dur != nil:
			v = k.dur(&c).String()
		case k.sw != nil:
			v = *k.sw(&c) != k.negated
		default:
			n := *k.num(&c)
			if n == 0 && k.omitZero {
				continue
			}
			v = n
		}
		if err := put(k.json, v); err != nil {
			return nil, err
		}
	}
	if instance != "" {
		if err := put("instance", instance); err != nil {
			return nil, err
		}
	}
	return append(append([]byte{'{'}, b.Bytes()...), '}'), nil
}

// decodeConfig reads a setting's JSON and the "instance" that answered
// with it ("" in a PUT's body). An omitted field is left at its zero
// value, the default; lock_ttl and lock_wait given as 0 are out of range
// (omit them for the default). Fields it does not know are ignored.
func decodeConfig(b []byte) (Config, string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, "", err
	}
	var c Config
	var instance string
	for key, dst := range map[string]*string{"name": &c.Name, "instance": &instance} {
		if v, ok := raw[key]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return Config{}, "", fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	for _, k := range knobs {
		v, ok := raw[k.json]
		if !ok || string(v) == "null" {
			continue
		}
		switch {
		case k.dur != nil:
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return Config{}, "", fmt.Errorf("%s: %w", k.json, err)
			}
			if s == "" {
				continue
			}
			d, err := time.ParseDuration(s)
			if err != nil {
				return Config{}, "", fmt.Errorf("%s: %q is not a Go duration such as \"250ms\"", k.json, s)
			}
			if d == 0 && k.notZero {
				return Config{}, "", fmt.Errorf("%s %s out of range: omit it for the default", k.json, s)
			}
			*k.dur(&c) = d
		case k.sw != nil:
			var on bool
			if err := json.Unmarshal(v, &on); err != nil {
				return Config{}, "", fmt.Errorf("%s: %w", k.json, err)
			}
			*k.sw(&c) = on != k.negated
		default:
			if err := json.Unmarshal(v, k.num(&c)); err != nil {
				return Config{}, "", fmt.Errorf("%s: %w", k.json, err)
			}
		}
	}
	return c, instance, nil
}

// String shows the setting, its defaults filled in, as the CLI's flags
// would: "redis work_delay=0s lock_ttl=10s ...".
func (c Config) String() string {
	c = c.WithDefaults()
	parts := []string{c.Name}
	for _, k := range knobs {
		if k.notInString {
			continue
		}
		var v string
		switch {
		case k.dur != nil:
			v = k.dur(&c).String()
		case k.sw != nil:
			v = strconv.FormatBool(*k.sw(&c) != k.negated)
		default:
			v = strconv.Itoa(*k.num(&c))
		}
		parts = append(parts, k.json+"="+v)
	}
	return strings.Join(parts, " ")
}

// Knobs lists every knob of c that differs from the defaults of
// Config{Name: c.Name}, in the table's order; none for a default setting.
func (c Config) Knobs() []Knob {
	c, d := c.WithDefaults(), Config{Name: c.Name}.WithDefaults()
	var out []Knob
	for _, k := range knobs {
		switch {
		case k.dur != nil:
			if v := *k.dur(&c); v != *k.dur(&d) {
				out = append(out, Knob{k.display, v.String()})
			}
		case k.sw != nil:
			if *k.sw(&c) {
				out = append(out, Knob{Name: k.display})
			}
		default:
			if v := *k.num(&c); v >= k.shownFrom {
				out = append(out, Knob{k.display, strconv.Itoa(v)})
			}
		}
	}
	return out
}
