package exercises_test

import (
	"strings"
	"testing"

	"github.com/seckill-lab/seckill/exercises"
)

// TestAdviseByObservation: a failure's hint follows what the check saw,
// per exercise, not the check's name: the figures are the checks' own
// words (lockimpl/locktest, the exercises' Redis cases, the grader's
// fault checks).
func TestAdviseByObservation(t *testing.T) {
	tests := []struct {
		exercise, check, figure string
		cause                   exercises.Cause
		// want is a phrase of the English hint; not, phrases it must not
		// hold (advice about code the exercise gives).
		want string
		not  []string
	}{
		{"redislock", "ExpiresWithoutRenewal", "second Lock still waited 2.5s after the first holder's TTL 500ms ran out (TTL + 2s slack): the lock key has no expiry (PTTL -1), so it is never freed",
			exercises.CauseNoExpiry, "has no expiry", []string{"Lua"}},
		{"redislock", "ExpiresWithoutRenewal", "the lock key has no expiry (PTTL -1 right after Lock): a holder that dies keeps the lock for ever",
			exercises.CauseNoExpiry, "SET key owner NX PX ttl", []string{"Lua"}},
		{"redislock", "ExpiresWithoutRenewal", "stale holder's Unlock: err = <nil>, want ErrNotHeld (it must not release the new holder's lock); it deleted the new holder's key, which it did not own",
			exercises.CauseDeletedNotOwned, "a Lua script", nil},
		{"redislock", "ExpiryInOneCommand", "the key was left with no expiry (PTTL -1) when the holder stopped between its SET and its PEXPIRE (commands: setnx, pexpire)",
			exercises.CauseExpirySecondCommand, "second command", nil},
		{"redislock", "ReleaseOnlyOwn", "the release deleted a key it did not own: it compared the owner, then DELed in a second command",
			exercises.CauseDeletedNotOwned, "comparing the owner in Go", nil},
		{"redislock", "MutualExclusion", "two holders at once: instance 1 goroutine 3", exercises.CauseTwoHolders, "SET key owner NX PX", nil},
		{"fencing", "MutualExclusion", "two holders at once: instance 1 goroutine 3", exercises.CauseTwoHolders, "etcd Mutex", []string{"SET", "NX PX"}},
		{"fencing", "MutualExclusion", "lock/unlock: context deadline exceeded", exercises.CauseNone, "etcd Mutex", []string{"SET", "NX PX"}},
		{"fencing", "TokensIncrease", "token 0 = 0 (no token: the store checks nothing at the write): want a strictly increasing non-zero token",
			exercises.CauseTokenNone, "token 0", nil},
		{"fencing", "TokensIncrease", "token 1 = 7 after 7: the fencing token did not increase (equal tokens)", exercises.CauseTokenBackwards, "fence < token", nil},
		{"watchdog", "ExpiresWithoutRenewal", "second Lock still waited 2.5s after the first holder's TTL 500ms ran out (TTL + 2s slack): the lock key is still there, PTTL 480 ms",
			exercises.CauseHeldPastTTL, "NoRenew", []string{"Lua", "release must"}},
		{"watchdog", "MutualExclusion", "two holders at once: instance 1", exercises.CauseTwoHolders, "renewal", []string{"SET key owner NX PX"}},
		{"watchdog", "HeldPastTTL", "lease lost while held: TTL 1s ran out without renewal", exercises.CauseLeaseLost, "every TTL/3", nil},
		{"watchdog", "RenewsOnlyOwn", "the renewal extended a key it did not own: another holder's key", exercises.CauseRenewalNotOwned, "another holder's key", nil},
		{"watchdog", "RenewalStops", "renewals went on after Unlock returned (EVALSHA at 200ms, EVALSHA at 400ms): the watchdog never stops", exercises.CauseRenewalNeverStops, "must stop at the release", nil},
		{"watchdog", "RenewalStops", "a renewal ran after release: EVALSHA 150ms after Unlock returned", exercises.CauseRenewalAfterRelease, "stop the watchdog first", nil},
		{"redislock", "Faults:instance-crash", "oversold 0; sales stopped for 31.2 s after the crash, beyond the bound of 5 s", exercises.CauseSalesStopped, "did not free", nil},
		{"redislock", "Faults:instance-crash", "oversold 3 in 1 of 1 runs", exercises.CauseNone, "nothing oversells", nil},
		{"fencing", "oversold", "oversold 4", exercises.CauseNone, "token must strictly increase", nil},
	}
	for _, tt := range tests {
		t.Run(tt.exercise+"/"+tt.check+"/"+string(tt.cause), func(t *testing.T) {
			check := tt.check
			if check == "oversold" {
				check = "Oversold"
			}
			cause, a := exercises.Advise(tt.exercise, check, tt.figure, true)
			if cause != tt.cause {
				t.Errorf("cause = %q, want %q", cause, tt.cause)
			}
			if a.Lesson == 0 || a.Hint.ZH == "" || !strings.Contains(a.Hint.EN, tt.want) {
				t.Errorf("advice %+v: want a lesson, both languages and %q", a, tt.want)
			}
			for _, n := range tt.not {
				if strings.Contains(a.Hint.EN, n) {
					t.Errorf("hint %q mentions %q, which the %s exercise gives", a.Hint.EN, n, tt.exercise)
				}
			}
		})
	}
	// A passing check names no cause.
	if c, _ := exercises.Advise("redislock", "MutualExclusion", "two holders at once", false); c != exercises.CauseNone {
		t.Errorf("a passing check has cause %q", c)
	}
}
