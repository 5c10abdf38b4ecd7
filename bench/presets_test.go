package bench

import (
	"errors"
	"testing"
)

func TestPresets(t *testing.T) {
	tests := []struct {
		name                 string
		requests, stock, con int
		wantErr              bool
	}{
		{"chapter1", 5000, 5000, 50, false},
		{"etcd-article", DefaultRequests, DefaultStock, DefaultConcurrency, false},
		{"seed003", 5000, 5000, 50, false}, // the older names still answer
		{"seed002", DefaultRequests, DefaultStock, DefaultConcurrency, false},
		{"seed999", 0, 0, 0, true},
	}
	for _, tt := range tests {
		p, err := LookupPreset(tt.name)
		if tt.wantErr {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("%s: err %v, want ErrInvalidOptions", tt.name, err)
			}
			continue
		}
		if err != nil || p.Requests != tt.requests || p.Stock != tt.stock || p.Concurrency != tt.con || p.Source == "" {
			t.Errorf("%s: %+v %v", tt.name, p, err)
		}
	}
}
