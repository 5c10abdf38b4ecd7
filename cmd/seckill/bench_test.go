package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestBenchFlagsValidate: each usage error is exit 2 and names the fix;
// --calibrate reads only its own flags; valid flags yield the lists the
// options are built from.
func TestBenchFlagsValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // "" for valid
		conc int
	}{
		{"defaults", nil, "", 50},
		{"argument", []string{"extra"}, `unexpected argument "extra"`, 0},
		{"calibrate needs requests", []string{"--calibrate", "--calibrate-requests", "0"}, "--calibrate-requests must be > 0", 0},
		{"calibrate ignores strategies", []string{"--calibrate", "--strategies", "nope"}, "", 0},
		{"sweep and concurrency", []string{"--sweep", "1,10", "--concurrency", "5"}, "drop --concurrency", 0},
		{"sweep alone", []string{"--sweep", "1,10"}, "", 0},
		{"compare-queue and no-local-queue", []string{"--compare-queue", "--no-local-queue"}, "drop --no-local-queue", 0},
		{"warmup", []string{"--warmup", "-1"}, "--warmup must be >= 0", 0},
		{"preset", []string{"--preset", "nope"}, "--preset:", 0},
		{"urls and dns", []string{"--target", "http://x", "--instance-urls", "http://a", "--instances-dns", "a:80"}, "not both", 0},
		{"mode both", []string{"--mode", "both"}, "add --sweep-rtt", 0},
		{"mode unknown", []string{"--mode", "fast"}, `--mode "fast"`, 0},
		{"sweep-batch without sweep", []string{"--sweep-batch", "1,8"}, "--sweep-batch runs within a sweep", 0},
		{"sweep-batch range", []string{"--sweep-rtt", "loopback", "--sweep-batch", "0"}, "want batch sizes from 1", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newBenchFlags()
			if err := parse(f.fs, tt.args); err != nil {
				t.Fatalf("parse: %v", err)
			}
			err := f.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if tt.conc != 0 && f.conc != tt.conc {
					t.Errorf("clients %d, want %d", f.conc, tt.conc)
				}
				return
			}
			var ee exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.msg, tt.want) {
				t.Fatalf("Validate: %v, want exit 2 mentioning %q", err, tt.want)
			}
		})
	}
	f := newBenchFlags()
	if err := parse(f.fs, []string{"--sweep-rtt", "loopback", "--mode", "both", "--sweep-batch", "1,8"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil || len(f.modes) != 2 || !slices.Equal(f.batches, []int{1, 8}) {
		t.Errorf("Validate: %v, modes %v, batches %v", err, f.modes, f.batches)
	}
}
