// Package await is the one way tests wait for a condition: poll it until
// it holds or a deadline passes, then fail with what was last seen. Tests
// use it instead of sleeping for a guessed time or writing their own
// deadline loop.
package await

import (
	"errors"
	"testing"
	"time"
)

// Every is how often Until and True poll.
const Every = 5 * time.Millisecond

// Until calls check every Every until it returns nil and fails tb with
// check's last error once timeout has passed. The caller's goroutine (it
// calls tb.Fatalf).
func Until(tb testing.TB, timeout time.Duration, check func() error) {
	tb.Helper()
	if err := Poll(timeout, Every, check); err != nil {
		tb.Fatalf("still not so after %v: %v", timeout, err)
	}
}

// True is Until for a condition that has nothing to say but whether it
// holds: what names it for the failure message.
func True(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	Until(tb, timeout, func() error {
		if cond() {
			return nil
		}
		return errors.New(what)
	})
}

// Poll calls check every every until it returns nil (Poll returns nil) or
// timeout has passed (Poll returns check's last error). It runs check at
// least once and once more at the deadline. Any goroutine.
func Poll(timeout, every time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if !time.Now().Before(deadline) {
			return err
		}
		time.Sleep(min(every, time.Until(deadline)+time.Millisecond))
	}
}
