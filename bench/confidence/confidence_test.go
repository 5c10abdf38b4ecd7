package confidence

import (
	"math"
	"testing"
)

// TestClopperPearsonKnown checks the interval against the standard
// Clopper–Pearson values (95 %, two-sided).
func TestClopperPearsonKnown(t *testing.T) {
	for _, c := range []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 3, 0, 0.7076},
		{1, 10, 0.002529, 0.4450},
		{5, 10, 0.1871, 0.8129},
		{3, 3, 0.2924, 1},
		{0, 10, 0, 0.3085},
		{10, 100, 0.0490, 0.1762},
		{0, 30, 0, 0.1157},
		{0, 1, 0, 0.975},
		{1, 1, 0.025, 1},
	} {
		lo, hi, err := ClopperPearson(c.k, c.n, 0.95)
		if err != nil {
			t.Fatalf("%d of %d: %v", c.k, c.n, err)
		}
		if math.Abs(lo-c.lo) > 1e-3 || math.Abs(hi-c.hi) > 1e-3 {
			t.Errorf("%d of %d: [%.6f, %.6f], want [%.6f, %.6f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

// TestClopperPearsonClosedForms: at the ends the bounds have closed
// forms, 0 of n's upper bound 1-(α/2)^(1/n) and n of n's lower one
// (α/2)^(1/n), which the bisection must meet to 1e-9.
func TestClopperPearsonClosedForms(t *testing.T) {
	for _, level := range []float64{0.5, 0.9, 0.95, 0.99} {
		tail := (1 - level) / 2
		for _, n := range []int{1, 2, 3, 7, 10, 30, 100, 1000, 100000} {
			want := 1 - math.Pow(tail, 1/float64(n))
			if lo, hi, _ := ClopperPearson(0, n, level); lo != 0 || math.Abs(hi-want) > 1e-9 {
				t.Errorf("0 of %d at %v: [%g, %g], want [0, %g]", n, level, lo, hi, want)
			}
			if lo, hi, _ := ClopperPearson(n, n, level); hi != 1 || math.Abs(lo-(1-want)) > 1e-9 {
				t.Errorf("%d of %d at %v: [%g, %g], want [%g, 1]", n, n, level, lo, hi, 1-want)
			}
		}
	}
}

// binomCDF is P(X <= k) for X ~ Binomial(n, p), summed term by term.
func binomCDF(k, n int, p float64) float64 {
	s := 0.0
	for i := 0; i <= k; i++ {
		lc, _ := math.Lgamma(float64(n + 1))
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(lc - li - lr + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return s
}

// TestClopperPearsonDefinition: at each bound the binomial tail, summed
// directly, is (1-level)/2, to 1e-9: P(X >= k | lo) and P(X <= k | hi).
func TestClopperPearsonDefinition(t *testing.T) {
	for _, n := range []int{1, 2, 5, 10, 33, 100, 250} {
		for k := 0; k <= n; k++ {
			lo, hi, err := ClopperPearson(k, n, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if !(0 <= lo && lo < hi && hi <= 1) {
				t.Fatalf("%d of %d: [%g, %g] is no interval", k, n, lo, hi)
			}
			if k > 0 {
				if got := 1 - binomCDF(k-1, n, lo); math.Abs(got-0.025) > 1e-9 {
					t.Errorf("%d of %d: P(X >= %d | %g) = %.12f, want 0.025", k, n, k, lo, got)
				}
			}
			if k < n {
				if got := binomCDF(k, n, hi); math.Abs(got-0.025) > 1e-9 {
					t.Errorf("%d of %d: P(X <= %d | %g) = %.12f, want 0.025", k, n, k, hi, got)
				}
			}
		}
	}
}

func TestClopperPearsonBadInput(t *testing.T) {
	for _, c := range []struct {
		k, n  int
		level float64
	}{
		{0, 0, 0.95}, {0, -1, 0.95}, {-1, 3, 0.95}, {4, 3, 0.95},
		{1, 3, 0}, {1, 3, 1}, {1, 3, -0.5}, {1, 3, 1.5}, {1, 3, math.NaN()},
	} {
		if _, _, err := ClopperPearson(c.k, c.n, c.level); err == nil {
			t.Errorf("ClopperPearson(%d, %d, %v): no error", c.k, c.n, c.level)
		}
	}
}

func TestInterval(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want string
	}{
		{0, 3, "95 % interval 0–71 %"},
		{3, 3, "95 % interval 29–100 %"},
		{1, 10, "95 % interval 0.3–45 %"},
		{5, 10, "95 % interval 19–81 %"},
		{10, 100, "95 % interval 5–18 %"},
		{0, 30, "95 % interval 0–12 %"},
		{1, 1000, "95 % interval <0.1–0.6 %"},
		{999, 1000, "95 % interval 99.4–>99.9 %"},
		{0, 1000, "95 % interval 0–0.4 %"},
		{0, 0, ""},
		{4, 3, ""},
	} {
		if got := Interval(c.k, c.n); got != c.want {
			t.Errorf("Interval(%d, %d) = %q, want %q", c.k, c.n, got, c.want)
		}
	}
}

func TestRuleOut(t *testing.T) {
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{3, "run", "3 runs rule out only rates above 71 %"},
		{1, "run", "1 run rules out only rates above 98 %"},
		{10, "repeat", "10 repeats rule out only rates above 31 %"},
		{0, "run", ""},
	} {
		if got := RuleOut(c.n, c.noun); got != c.want {
			t.Errorf("RuleOut(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
}

func TestRange(t *testing.T) {
	if got, want := Range(0, 3), "0–71 %"; got != want {
		t.Errorf("Range(0, 3) = %q, want %q", got, want)
	}
	if got := Range(1, 0); got != "" {
		t.Errorf("Range(1, 0) = %q, want \"\"", got)
	}
}

func TestNote(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want string
	}{
		{0, 3, "95 % interval 0–71 %: 3 runs rule out only rates above 71 %"},
		{0, 1, "95 % interval 0–98 %: 1 run rules out only rates above 98 %"},
		{1, 3, "95 % interval 0.8–91 %"},
		{3, 3, "95 % interval 29–100 %"},
		{0, 0, ""},
	} {
		if got := Note(c.k, c.n, "run"); got != c.want {
			t.Errorf("Note(%d, %d, run) = %q, want %q", c.k, c.n, got, c.want)
		}
	}
}
