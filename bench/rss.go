package bench

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// peakRSSMB is the bench process's peak resident set size, in MB, since it
// started or since the last resetPeakRSS (Linux: VmHWM of
// /proc/self/status); 0 where it cannot be read.
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}

// resetPeakRSS starts a new peak (writing 5 to /proc/self/clear_refs,
// Linux 4.0 and later), so that a run's peak is its own; false where it
// cannot, and the peak is then the process's so far.
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}
