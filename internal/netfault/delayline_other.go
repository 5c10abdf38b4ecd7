//go:build !linux

package netfault

import "time"

// waitUntil returns true at due, false when interrupt closes first. Off
// Linux it is Go's timer, about a millisecond late on an idle runtime (see
// delayline_linux.go for the precise one).
func waitUntil(due time.Time, interrupt <-chan struct{}) bool {
	return timerWait(due, interrupt)
}
