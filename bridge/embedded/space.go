package embedded

import (
	"errors"
	"os"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The space probe. A segment write that finds the disk full is undone
// (nothing stored, its offsets free again) and puts the store in the
// disk-full state (health.go) at once; unlike pebble's operations, no
// write waits for space. The probe is what brings the store back: one
// goroutine that, every Options.DiskRetry, checks that the space the failed
// write needed (plus a margin) can be taken, and then lets the store serve
// writes again by itself. It counts as a blocked disk operation, so the
// state stays degraded while it runs, and Close does not wait for it.

// probeMargin is added to the failed write's size: the probe asks for room
// for that write and a bit more, so the store does not flap back to full
// on the next produce.
const probeMargin = 1 << 20

// probeName is the file the probe reserves space with, in the logs
// directory.
const probeName = ".space-probe"

// startProbe starts the space probe unless one runs. Called before the
// store enters the disk-full state, so the state cannot recover before the
// probe counts as blocked. Any goroutine.
func (s *Store) startProbe(need int64) {
	if !s.probing.CompareAndSwap(false, true) {
		return
	}
	s.health.blocked.Add(1)
	go s.probeSpace(need + probeMargin)
}

// probeSpace is the probe's goroutine; it ends when the space is there,
// when another error fails the store, or at Close.
func (s *Store) probeSpace(need int64) {
	t := time.NewTicker(s.diskRetry)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-s.stopProbe:
			s.endProbe()
			return
		case <-t.C:
		}
		err := s.reserveSpace(need)
		if err == nil {
			s.endProbe()
			return
		}
		if !isNoSpace(err) {
			s.health.fatal("space probe", err)
			s.endProbe()
			return
		}
		if every(&s.health.lastWait, 30*time.Second) {
			s.log.Error("embedded store: still waiting for disk space", "need_bytes", need,
				"waiting", time.Since(start).Round(time.Second), "err", err)
		}
	}
}

// endProbe stops counting the probe as blocked; the store serves writes
// again once no write is in flight (health.maybeRecover).
func (s *Store) endProbe() {
	s.probing.Store(false)
	if s.health.blocked.Add(-1) == 0 {
		s.health.maybeRecover()
	}
}

// reserveSpace checks that need bytes can be taken on the logs' disk:
// preallocated in a probe file (written with zeros where the filesystem
// cannot preallocate), then released.
func (s *Store) reserveSpace(need int64) error {
	path := s.fs.PathJoin(s.logsDir, probeName)
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer func() {
		_ = f.Close()
		_ = s.fs.Remove(path)
	}()
	err = f.Preallocate(0, need)
	if err == nil || isNoSpace(err) {
		return err
	}
	zeros := make([]byte, 64<<10)
	for off := int64(0); off < need; off += int64(len(zeros)) {
		if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), need-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// isNotExist reports a missing file or directory through vfs wrappers.
func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }
