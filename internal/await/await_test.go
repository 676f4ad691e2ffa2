package await

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestPollReturnsOnceTrue(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	err := Poll(time.Second, time.Millisecond, func() error {
		if n.Add(1) < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n.Load() != 3 {
		t.Fatalf("err %v after %d calls, want nil after 3", err, n.Load())
	}
}

func TestPollGivesLastErrorAtDeadline(t *testing.T) {
	t.Parallel()
	calls := 0
	start := time.Now()
	err := Poll(30*time.Millisecond, 5*time.Millisecond, func() error {
		calls++
		return errors.New("never")
	})
	if err == nil || err.Error() != "never" {
		t.Fatalf("err %v, want the check's own error", err)
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before the 30ms timeout", took)
	}
	if calls < 2 {
		t.Fatalf("%d calls: want one at the start and one at the deadline at least", calls)
	}
}
