package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

func TestCalibrateExactCount(t *testing.T) {
	for _, tc := range []struct{ requests, concurrency, rate int }{
		{500, 8, 0},
		{137, 3, 0},
		{60, 4, 2000}, // open model: paced, still exactly the count
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		c, err := Calibrate(ctx, tc.requests, tc.concurrency, tc.rate)
		cancel()
		if err != nil {
			t.Fatalf("Calibrate(%+v): %v", tc, err)
		}
		if c.Requests != tc.requests || c.OK != tc.requests {
			t.Errorf("Calibrate(%+v): %d requests, %d ok; want exactly %d of each", tc, c.Requests, c.OK, tc.requests)
		}
		if c.CeilingRPS <= 0 {
			t.Errorf("Calibrate(%+v): ceiling %v, want > 0", tc, c.CeilingRPS)
		}
	}
	if _, err := Calibrate(context.Background(), 0, 1, 0); err == nil {
		t.Error("Calibrate with 0 requests: want an error")
	}
}

// TestAttackMapsRequestIDs checks that every result is mapped to the
// Idempotency-Key its request carried (the server echoes it), that keys
// are unique, and that the raw results decode with vegeta's decoder.
func TestAttackMapsRequestIDs(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p purchase
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &p); err != nil || p.GoodsID != 7 || p.Qty != 2 || p.UserID == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_request"}`))
			return
		}
		w.Header().Set("X-Instance", "inst-9")
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"no key"}`))
			return
		}
		if len(key)%2 == 0 {
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "sold_out", "request_id": key})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"request_id": key})
	}))
	defer srv.Close()

	const n = 300
	var kept []*vegeta.Result
	seen := map[string]bool{}
	mismatch := 0
	var resps []Response
	res, err := attack(context.Background(), attackSpec{
		Name: "t", Requests: n, Concurrency: 16, Timeout: 10 * time.Second,
		Targeter: purchaseTargeter(srv.URL, 7, 2, n, 42, "t"),
		OnResult: func(r *vegeta.Result, id string) {
			kept = append(kept, r)
			var body struct {
				RequestID string `json:"request_id"`
			}
			_ = json.Unmarshal(r.Body, &body)
			if body.RequestID != id || id == "" {
				mismatch++
			}
			seen[id] = true
			resps = append(resps, toResponse(r, id))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Results != n || len(seen) != n || mismatch != 0 {
		t.Fatalf("results %d, unique ids %d, mismatched ids %d; want %d, %d, 0", res.Results, len(seen), mismatch, n, n)
	}
	for _, r := range resps {
		if r.Instance != "inst-9" || (r.Code == 409) != (r.Error == "sold_out") {
			t.Fatalf("bad response record %+v", r)
		}
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "raw.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := writeRaw(f, kept); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	dec := vegeta.NewDecoder(bytes.NewReader(raw))
	decoded := 0
	for {
		var r vegeta.Result
		if err := dec.Decode(&r); err != nil {
			break
		}
		decoded++
	}
	if decoded != n {
		t.Errorf("decoded %d raw results, want %d", decoded, n)
	}

	// The same seed, run name and goods give the same ids; another seed,
	// or other goods, others (a scenario's runs on other goods with the
	// same seed were answered 422 idempotency_key_reused).
	first := func(seed, goods int64) string {
		var tg vegeta.Target
		if err := purchaseTargeter(srv.URL, goods, 2, 1, seed, "t")(&tg); err != nil {
			t.Fatal(err)
		}
		return tg.Header.Get("Idempotency-Key")
	}
	if a, b := first(42, 7), first(42, 7); a != b || a == first(43, 7) || first(42, 7) == first(42, 8) {
		t.Errorf("ids not seeded per goods: %s %s %s %s", first(42, 7), first(42, 7), first(43, 7), first(42, 8))
	}
	tg := purchaseTargeter(srv.URL, 7, 2, 1, 1, "t")
	var x vegeta.Target
	if err := tg(&x); err != nil {
		t.Fatal(err)
	}
	if err := tg(&x); err != vegeta.ErrNoTargets {
		t.Errorf("targeter past its count: %v, want ErrNoTargets", err)
	}
}
