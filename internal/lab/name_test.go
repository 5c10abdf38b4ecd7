package lab

import (
	"strings"
	"testing"
)

// TestNormalizeName: what a student types becomes a lab's name in lower
// case, and the note says so; an empty name is refused with the command
// that gives one; a name that stays invalid says what a name is.
func TestNormalizeName(t *testing.T) {
	tests := []struct {
		typed, name, note, err string
	}{
		{"alice", "alice", "", ""},
		{"Alice", "alice", `lab name "Alice" is "alice": lab names are lower case`, ""},
		{" Team-3 ", "team-3", "lower case", ""},
		{"", "", "", `seckill lab new "$USER"`},
		{"   ", "", "", `seckill lab new "$USER"`},
		{"Al ice", "", "", "lowercase letters, digits and dashes"},
	}
	for _, tt := range tests {
		t.Run(tt.typed, func(t *testing.T) {
			name, note, err := NormalizeName(tt.typed)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("NormalizeName(%q) err = %v, want one with %q", tt.typed, err, tt.err)
				}
				return
			}
			if err != nil || name != tt.name || !strings.Contains(note, tt.note) || (tt.note == "") != (note == "") {
				t.Errorf("NormalizeName(%q) = %q, %q, %v; want %q and a note with %q", tt.typed, name, note, err, tt.name, tt.note)
			}
		})
	}
}
