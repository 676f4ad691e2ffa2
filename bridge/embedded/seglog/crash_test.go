package seglog

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

// written is one batch a crash workload appended: its offsets and its
// frames (everything after the header, which the log only stamps).
type written struct {
	base   uint64
	count  uint32
	frames []byte
}

// workload appends from several writers, each waiting for durability when
// sync is set (the store's SyncAlways), and sometimes moves the log start.
// It records every batch written and, after its wait returned, every batch
// acknowledged.
type workload struct {
	mu      sync.Mutex
	all     map[uint64]written // by base offset
	acked   []written
	start   uint64 // the start last set (durable before SetStart, as the store keeps it)
	stopped bool
}

func (w *workload) run(t *testing.T, l *Log, rng *rand.Rand, writers int, segBytes int64, durable bool, stop chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		seed := rng.Uint64()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, 1))
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				b := makeBatch(t, fmt.Sprint(seed%1000, ".", n), 1+r.IntN(5), 1+r.Uint64N(1000), r.IntN(700))
				base, end, err := tryAppend(l, b, segBytes)
				if err != nil {
					return // the log closed under us
				}
				w.mu.Lock()
				w.all[base] = written{base, le.Uint32(b[hdrCount:]), b[bridge.BatchHeaderSize:]}
				w.mu.Unlock()
				if durable {
					if err := l.WaitSynced(ctx, end); err != nil {
						return
					}
				}
				w.mu.Lock()
				if !w.stopped {
					w.acked = append(w.acked, w.all[base])
				}
				w.mu.Unlock()
				if r.IntN(40) == 0 {
					w.mu.Lock()
					// The store keeps the start durable before SetStart.
					s := max(w.start, l.Next()/2)
					w.start = s
					w.mu.Unlock()
					_ = l.SetStart(s)
				}
			}
		}()
	}
	return &wg
}

// check reopens a crash copy and verifies it: the log is a clean prefix of
// what was written (every batch byte for byte the batch written at its
// offset, offsets contiguous from the first batch kept, no garbage after
// the last), and every acknowledged batch at or above the start is there.
func (w *workload) check(t *testing.T, fs vfs.FS, start uint64, acked []written) {
	t.Helper()
	l, err := tryOpen(fs, opts{start: start, visibleSync: true})
	if err != nil {
		t.Fatalf("reopen after the crash: %v", err)
	}
	defer l.Close()
	var next uint64
	seen := map[uint64]bool{}
	err = l.Read(0, 1<<40, func(b []byte) bool {
		v, err := bridge.VerifyIggyBatch(b)
		if err != nil {
			t.Fatalf("recovered batch fails verification: %v", err)
		}
		if next != 0 && v.BaseOffset != next {
			t.Fatalf("recovered log jumps from %d to %d", next, v.BaseOffset)
		}
		w.mu.Lock()
		orig, ok := w.all[v.BaseOffset]
		w.mu.Unlock()
		if !ok || orig.count != v.Count || !bytes.Equal(orig.frames, b[bridge.BatchHeaderSize:]) {
			t.Fatalf("recovered batch at %d is not the batch written there", v.BaseOffset)
		}
		seen[v.BaseOffset] = true
		next = v.BaseOffset + uint64(v.Count)
		return true
	})
	if err != nil {
		t.Fatalf("read after the crash: %v", err)
	}
	if next != 0 && l.Next() != next {
		t.Fatalf("next %d, the last batch ends at %d", l.Next(), next)
	}
	for _, a := range acked {
		if a.base+uint64(a.count) > start && !seen[a.base] {
			t.Fatalf("acknowledged batch at %d lost (start %d, next %d)", a.base, start, l.Next())
		}
	}
	// The recovered log takes appends and shows them.
	base, end := appendBatch(t, l, makeBatch(t, "after", 2, 1, 0), 4096)
	if err := l.WaitSynced(ctx, end); err != nil || base != l.Next()-2 || base < max(next, start) {
		t.Fatalf("append after recovery at %d (next %d): %v", base, l.Next(), err)
	}
	if got := readSome(t, l, base, 1<<20); len(got) != 2 || got[0].payload != "after-0" {
		t.Fatalf("read after recovery: %v", got)
	}
}

// TestCrashRandomWorkloads: concurrent writers appending (waiting for
// durability, or not), rolling small segments and moving the start; the
// filesystem is copied as a crash would leave it at a random moment (only
// synced data, or synced data plus a random part of the rest); the copy
// must recover a clean prefix holding every acknowledged batch.
func TestCrashRandomWorkloads(t *testing.T) {
	t.Parallel()
	runs := 40
	if testing.Short() {
		runs = 8
	}
	for run := 0; run < runs; run++ {
		rng := rand.New(rand.NewPCG(uint64(run), 42))
		durable := run%4 != 3
		keep := []int{0, 0, 30, 70, 100}[run%5]
		t.Run(fmt.Sprintf("run%d/sync=%v/keep=%d", run, durable, keep), func(t *testing.T) {
			fs := newMemFS(t)
			l := openLog(t, fs, opts{visibleSync: durable})
			w := &workload{all: map[uint64]written{}}
			stop := make(chan struct{})
			wg := w.run(t, l, rng, 1+rng.IntN(4), int64(2000+rng.IntN(20000)), durable, stop)
			// The writers run for a random while: the crash lands at a
			// random point of their work.
			time.Sleep(time.Duration(1+rng.IntN(30)) * time.Millisecond)
			// The start and the copy are taken together: a writer raising the
			// start between them could have removed segments the copy then
			// lacks, while check would still expect them from the older start
			// (the store would reopen with the newer start, durable first).
			w.mu.Lock()
			acked, start := append([]written(nil), w.acked...), w.start
			crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(rng.Uint64(), 7))})
			w.mu.Unlock()
			close(stop)
			wg.Wait()
			w.mu.Lock()
			w.stopped = true
			w.mu.Unlock()
			_ = l.Close()
			if !durable {
				acked = nil // nothing was promised
			}
			w.check(t, crashed, start, acked)
			t.Logf("%d batches written, %d acknowledged", len(w.all), len(acked))
		})
	}
}

// TestCrashEveryStep: one writer, a crash copy after every step of a
// workload that rolls tiny segments: each copy recovers every batch
// acknowledged before it.
func TestCrashEveryStep(t *testing.T) {
	t.Parallel()
	fs := newMemFS(t)
	l := openLog(t, fs, opts{visibleSync: true})
	defer l.Close()
	w := &workload{all: map[uint64]written{}}
	for i := 0; i < 60; i++ {
		b := makeBatch(t, fmt.Sprint(i), 1+i%3, 1, (i*53)%900)
		base, end := appendBatch(t, l, b, 3000)
		w.all[base] = written{base, le.Uint32(b[hdrCount:]), b[bridge.BatchHeaderSize:]}
		// A copy before the sync may or may not hold the batch.
		w.check(t, fs.CrashClone(vfs.CrashCloneCfg{}), 0, w.acked)
		if err := l.WaitSynced(ctx, end); err != nil {
			t.Fatal(err)
		}
		w.acked = append(w.acked, w.all[base])
		w.check(t, fs.CrashClone(vfs.CrashCloneCfg{}), 0, w.acked)
	}
}
