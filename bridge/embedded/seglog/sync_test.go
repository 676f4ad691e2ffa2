package seglog

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/iggy-kafka/gateway/internal/await"
)

// TestWokenWaiterDropped: a waiter told its bytes are synced returns to
// waiterPool at once and may already wait on another log (its pos
// rewritten) while the wake loop still runs. A sync round and a seal's
// markSynced must drop it as they wake it: here the first waiter's pos
// moves far past the log's end (a reuse by a log further along) while the
// wake of the second is held; the log must keep neither, nor hand the
// first the lead, which would leave this log with no leader and make its
// next round wake a wait of the other log before that log synced.
func TestWokenWaiterDropped(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"round", "markSynced"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			_, l, release := openGated(t, false)
			defer l.Close()
			release = sync.OnceFunc(release)
			defer release() // before Close, which syncs
			_, end := appendBatch(t, l, makeBatch(t, "a", 1, 1, 0), 0)
			reused := &waiter{pos: end, ch: make(chan bool, 1)}
			held := &waiter{pos: end, ch: make(chan bool)} // its wake waits for the test
			done := make(chan error, 1)
			if path == "round" {
				go func() { done <- l.WaitSynced(ctx, end) }()
				await.True(t, 10*time.Second, "a sync round running", l.leading)
			}
			l.sc.mu.Lock()
			l.sc.waiters = append(l.sc.waiters, reused, held)
			l.sc.mu.Unlock()
			if path == "round" {
				release()
			} else {
				go func() { l.markSynced(end, l.Next()); done <- nil }()
			}
			if lead := <-reused.ch; lead {
				t.Fatal("the first waiter was made the leader, not woken")
			}
			reused.pos = 1 << 62 // waiterPool gave it to another log's wait
			<-held.ch
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			l.sc.mu.Lock()
			waiters, leading := len(l.sc.waiters), l.sc.leading
			l.sc.mu.Unlock()
			if waiters != 0 || leading || len(reused.ch) != 0 {
				t.Fatalf("after the wake: %d waiters kept, leading %v, %d signals more to the reused waiter", waiters, leading, len(reused.ch))
			}
		})
	}
}

// TestGroupCommitManyLogs: logs group-committing at once share waiterPool,
// so a waiter woken by one log soon waits on another; every wait returns
// (a lead lost to another log's waiter would leave them to the deadline),
// none before its bytes are synced, and under -race no log reads a waiter
// after waking it.
func TestGroupCommitManyLogs(t *testing.T) {
	t.Parallel()
	const logs, writers, each = 4, 6, 200
	batch := makeBatch(t, "m", 1, 1, 0)
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range logs {
		fs, _, l := openFaulty(t, false)
		defer l.Close()
		fs.set(func(fs *faultFS) { fs.syncDelay = 200 * time.Microsecond })
		for range writers {
			wg.Go(func() {
				for range each {
					_, end, err := tryAppend(l, batch, 0)
					if err == nil {
						err = l.WaitSynced(c, end)
					}
					if err != nil {
						t.Error(err)
						return
					}
					if synced := l.syncedPos(); synced < end {
						t.Errorf("wait for %d returned with the log synced to %d", end, synced)
						return
					}
				}
			})
		}
	}
	wg.Wait()
}

func (l *Log) syncedPos() int64 {
	l.sc.mu.Lock()
	defer l.sc.mu.Unlock()
	return l.sc.synced
}
