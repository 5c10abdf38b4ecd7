// Package confidence owns what a count of runs can say about a rate: the
// exact two-sided Clopper–Pearson interval of a rate seen in k of n runs
// (ClopperPearson), and the words the lab prints beside every "k of n"
// (Interval, and RuleOut for a verdict that rests on 0 of n). It imports
// only the standard library, so bench and internal/ alike can use it.
package confidence

import (
	"fmt"
	"math"
	"strconv"
)

// Level is the confidence of the intervals the lab prints: 95 %.
const Level = 0.95

// ClopperPearson is the exact two-sided interval [lo, hi] of a rate seen
// in k of n trials at confidence level (0.95 for 95 %): lo is the rate
// under which k or more in n has probability (1-level)/2, hi the rate
// over which k or fewer has that probability; lo is 0 when k is 0, hi is
// 1 when k is n. It errs for n <= 0, k outside 0..n, or level outside
// (0, 1). The bounds are accurate to about 1e-12.
func ClopperPearson(k, n int, level float64) (lo, hi float64, err error) {
	switch {
	case n <= 0:
		return 0, 0, fmt.Errorf("confidence: %d trials: want at least 1", n)
	case k < 0 || k > n:
		return 0, 0, fmt.Errorf("confidence: %d of %d: want 0 to %d", k, n, n)
	case !(level > 0 && level < 1): // also NaN
		return 0, 0, fmt.Errorf("confidence: level %v: want one between 0 and 1", level)
	}
	tail := (1 - level) / 2
	lo, hi = 0, 1
	if k > 0 {
		// P(X >= k | p) = I_p(k, n-k+1) = tail.
		lo = betaInv(tail, float64(k), float64(n-k+1))
	}
	if k < n {
		// P(X <= k | p) = 1 - I_p(k+1, n-k) = tail.
		hi = betaInv(1-tail, float64(k+1), float64(n-k))
	}
	return lo, hi, nil
}

// Interval is the 95 % interval of a rate seen in k of n runs, as the
// lab prints it beside "k of n": "95 % interval 0–71 %" for 0 of 3. The
// bounds are whole percents; below 1 % (and above 99 %) one decimal, and
// "<0.1" (">99.9") for a bound that is not 0 (100) yet rounds to it. It
// is "" for a count ClopperPearson refuses.
func Interval(k, n int) string {
	r := Range(k, n)
	if r == "" {
		return ""
	}
	return percent(Level) + " % interval " + r
}

// Range is Interval's bounds alone, "0–71 %", for a table's column
// headed "95 % interval"; "" for a count ClopperPearson refuses.
func Range(k, n int) string {
	lo, hi, err := ClopperPearson(k, n, Level)
	if err != nil {
		return ""
	}
	return percent(lo) + "–" + percent(hi) + " %"
}

// RuleOut says what a verdict resting on 0 of n runs can claim: the
// rates the 95 % interval of 0 of n excludes, "3 runs rule out only rates
// above 71 %" (noun "run"; "1 run rules out ..."). The plural adds an s
// to noun. It is "" for n <= 0.
func RuleOut(n int, noun string) string {
	_, hi, err := ClopperPearson(0, n, Level)
	if err != nil {
		return ""
	}
	if n == 1 {
		return fmt.Sprintf("1 %s rules out only rates above %s %%", noun, percent(hi))
	}
	return fmt.Sprintf("%d %ss rule out only rates above %s %%", n, noun, percent(hi))
}

// Note is what the lab prints beside "k of n" runs (noun "run") where a
// verdict may rest on the count: the Interval, and for 0 of n also what
// n runs rule out, "95 % interval 0–71 %: 3 runs rule out only rates
// above 71 %". "" for a count ClopperPearson refuses.
func Note(k, n int, noun string) string {
	in := Interval(k, n)
	if k == 0 && in != "" {
		return in + ": " + RuleOut(n, noun)
	}
	return in
}

// percent prints a rate in percent for Interval: whole percents, one
// decimal below 1 % and above 99 %, "<0.1" and ">99.9" at the ends.
func percent(rate float64) string {
	// To a millionth of a percent first: the bisection's 97.49999999 of
	// 1 run is the exact 97.5.
	p := math.Round(100*rate*1e6) / 1e6
	switch {
	case p <= 0:
		return "0"
	case p >= 100:
		return "100"
	case p < 0.05:
		return "<0.1"
	case p > 99.95:
		return ">99.9"
	case p < 1 || p > 99:
		return strconv.FormatFloat(p, 'f', 1, 64)
	}
	return strconv.FormatFloat(math.Round(p), 'f', 0, 64)
}

// betaInv is the x in [0, 1] at which the regularized incomplete beta
// function I_x(a, b) reaches y, by bisection (I_x rises with x).
func betaInv(y, a, b float64) float64 {
	lo, hi := 0.0, 1.0
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi {
			break
		}
		if betaInc(mid, a, b) < y {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// betaInc is the regularized incomplete beta function I_x(a, b), for a,
// b > 0, by its continued fraction, on the side of x where it converges
// fast (I_x(a, b) = 1 - I_{1-x}(b, a)).
func betaInc(x, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(x, a, b) / a
	}
	return 1 - front*betaCF(1-x, b, a)/b
}

// betaCF evaluates the continued fraction of the incomplete beta by the
// modified Lentz method (Numerical Recipes' betacf). It converges in
// O(sqrt(max(a, b))) terms for x below (a+1)/(a+b+2): a few hundred for
// a million runs, far below the cap.
func betaCF(x, a, b float64) float64 {
	const (
		eps  = 1e-15
		tiny = 1e-300
	)
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	// step is one of Lentz's updates with the fraction's next term aa; it
	// returns the factor it multiplied h by.
	step := func(aa float64) float64 {
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		return d * c
	}
	for m := 1; m <= 100000; m++ {
		fm := float64(m)
		m2 := 2 * fm
		step(fm * (b - fm) * x / ((qam + m2) * (a + m2)))
		if del := step(-(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))); math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
