package stack

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/seckill-lab/seckill/internal/server"
)

// Backend is a server group `up --backends` can leave out (a server
// description's Group).
type Backend = server.Group

// The two backends the lab's own tests name; the others are their
// descriptions' groups (server.Groups()).
const (
	BackendRedis = Backend("redis")
	BackendMySQL = Backend("mysql")
)

// AllBackends are the backends in start order; the default of --backends.
var AllBackends = server.Groups()

// ErrUnknownBackend is returned for a --backends name that is not one of
// AllBackends.
var ErrUnknownBackend = errors.New("unknown backend")

// ParseBackends parses a comma-separated --backends list ("" = all); the
// result is in AllBackends order. The required ones (MySQL: the goods and
// the orders live there) must be in it.
func ParseBackends(s string) ([]Backend, error) {
	if strings.TrimSpace(s) == "" {
		return slices.Clone(AllBackends), nil
	}
	want := map[Backend]bool{}
	for _, p := range strings.Split(s, ",") {
		b := Backend(strings.ToLower(strings.TrimSpace(p)))
		if b == "" {
			continue
		}
		if !slices.Contains(AllBackends, b) {
			return nil, fmt.Errorf("--backends: %w %q; valid: %s", ErrUnknownBackend, b, joinBackends(AllBackends))
		}
		want[b] = true
	}
	for _, sp := range server.All {
		if sp.Required && !want[sp.Group] {
			return nil, fmt.Errorf("--backends %s: %s is always needed (the goods and orders live in MariaDB); add it: --backends %s,%s",
				s, sp.Group, strings.TrimSpace(s), sp.Group)
		}
	}
	var out []Backend
	for _, b := range AllBackends {
		if want[b] {
			out = append(out, b)
		}
	}
	return out, nil
}

func joinBackends(bs []Backend) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = string(b)
	}
	return strings.Join(parts, ",")
}

// Finder locates the stack's servers (see server.Finder).
type Finder = server.Finder

// Tools are the programs `up` runs, found by a Finder.
type Tools = server.Tools

// SystemFinder searches this machine: $PATH, then the well-known places.
func SystemFinder() Finder { return server.SystemFinder() }

// BackendNames lists AllBackends, comma-separated.
func BackendNames() string { return joinBackends(AllBackends) }

// JoinBackends lists bs, comma-separated.
func JoinBackends(bs []Backend) string { return joinBackends(bs) }
