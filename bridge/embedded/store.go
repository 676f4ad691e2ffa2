// Package embedded is a bridge.Backend kept in-process, so the gateway runs
// with no Iggy server. It stores exactly the bytes a real Iggy server
// would: each Append is one stamped Iggy batch, written at the end of its
// partition's segment log (package seglog). Everything else (the catalog,
// counters, log starts, committed offsets, producer marks, configs, the
// security log) is in pebble. docs/STORAGE.md explains the layout and what
// each sync policy promises.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
	"github.com/iggy-kafka/gateway/bridge/embedded/seglog"
)

// SyncPolicy says when an Append is made durable.
type SyncPolicy int

const (
	// SyncAlways returns from every Append once its partition's segment
	// file is fdatasynced past it; concurrent Appends to a partition share
	// one fdatasync (group commit), and readers see only synced batches.
	SyncAlways SyncPolicy = iota
	// SyncInterval returns once the batch is written (in the page cache)
	// and syncs written segment files in the background every
	// Options.SyncInterval.
	SyncInterval
	// SyncNever leaves syncing to the OS (and to Close and Sync).
	SyncNever
)

// String names the policy as the gateway's flags spell it.
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy reads "always", "interval" or "never".
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	for _, p := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("embedded: unknown sync policy %q (always, interval, never)", s)
}

// DefaultSyncInterval is the background sync period of SyncInterval.
const DefaultSyncInterval = 100 * time.Millisecond

// MaxPartitions is the most partitions one topic may have, Iggy's own cap
// per create request, so a topic made here could also be made on Iggy.
const MaxPartitions = 1000

// Options configures Open. The zero value is SyncAlways with slog's
// default logger.
type Options struct {
	Sync         SyncPolicy
	SyncInterval time.Duration // SyncInterval only; default 100ms
	Logger       *slog.Logger
	// MemTableSize is pebble's memtable size; default 64 MiB. Pebble keeps
	// only the catalog, log starts, offsets and other small records (the
	// batches are in the segment logs), so it rarely fills one.
	MemTableSize uint64
	// CacheSize bounds pebble's block cache in bytes; default 256 MiB. It
	// holds the few metadata blocks read; batches are read from the
	// segment logs through the OS page cache, not through it.
	CacheSize int64
	// DiskRetry is the pause between attempts of a pebble disk operation
	// that failed for lack of space, and between two space probes after a
	// segment write did (health.go, space.go); default 250ms.
	DiskRetry time.Duration
	// RetentionCheckInterval is how often retention.ms and retention.bytes
	// are applied (retention.go); default 30s, negative: never.
	RetentionCheckInterval time.Duration

	clock  func() time.Time // time.Now unless a test moves time
	baseFS vfs.FS           // under diskFS; vfs.Default unless a test injects faults
}

// Store is the embedded bridge.Backend. All methods are safe for concurrent
// use. Open it with Open and release it with Close.
type Store struct {
	db        *pebble.DB
	dir       string
	log       *slog.Logger
	writeOpts *pebble.WriteOptions
	policy    SyncPolicy

	// The segment logs: under logsDir on fs (opts.baseFS itself, not
	// diskFS: a log undoes a failed write and reports it, writeFailed).
	fs      vfs.FS
	direct  bool // fs is the OS's own: logs write with pwritev
	logsDir string

	// The space probe (space.go) after a segment write found the disk full.
	diskRetry   time.Duration
	probing     atomic.Bool
	stopProbe   chan struct{}
	lastCorrupt atomic.Int64 // rate limit of corrupt-data log lines

	catMu  sync.RWMutex // guards topics and nextID; held across catalog commits
	topics map[string]map[string]*topic
	nextID uint32

	// ops is held shared by every call and exclusively by Close, so Close
	// waits for calls in flight and the db is never used after it closes.
	ops    sync.RWMutex
	closed atomic.Bool
	health *healthState // disk full / failed (health.go)

	// journal keeps the coordinators' state writes past a kill -9 under
	// SyncNever and SyncInterval (txnjournal.go); nil under SyncAlways.
	journal *txnJournal

	dirty    atomic.Uint64 // unsynced writes, for SyncInterval
	stopSync chan struct{}
	syncDone chan struct{}

	// The retention sweeper (retention.go).
	clock        func() time.Time
	stopRet      chan struct{}
	retDone      chan struct{}
	onTrim       atomic.Pointer[func(stream, topic string, partition int32)]
	lastSweepErr atomic.Int64

	secMu sync.Mutex // serializes security-log appends (security.go)
}

var _ bridge.Backend = (*Store)(nil)

// Capabilities: batches in Iggy's form; appends staged (a write returns
// before its fsync, partition.go); Topic, Topics, TopicState and
// Partition read only the in-memory catalog and watermarks, so the guard
// calls them inline (they take ops shared, which can wait only behind a
// Close: the gateway closes the store after its server stopped, and Close
// takes ops exclusively only while the store is healthy; on a full or
// failed disk it returns at once); health of the disk reported
// (health.go); each offset commit one pebble write, so none batched; a
// partition's state is one read of its own, so TopicState is not cheaper
// than the Partition reads a Fetch needs.
func (s *Store) Capabilities() bridge.Capabilities {
	return bridge.Capabilities{Format: bridge.IggyFormat, StagedAppends: true, MemoryReads: true, Health: true}
}

// topic is the in-memory state of one catalog entry.
type topic struct {
	info bridge.TopicInfo
	// mu is held shared by Appends in flight and exclusively by
	// DeleteTopic and SetPartitions, so no Append writes to a log being
	// removed.
	mu      sync.RWMutex
	deleted bool
	parts   []*partition
	// cfg is the topic's configs; guarded by Store.catMu, replaced (never
	// changed in place) by SetTopicConfigs.
	cfg bridge.TopicConfigs
	// segBytes is cfg's segment.bytes (0: the default), read by Append
	// without the catalog lock.
	segBytes atomic.Int64
}

// newTopic makes the in-memory topic of a catalog entry with its
// partitions' logs.
func newTopic(info bridge.TopicInfo, cfg bridge.TopicConfigs, parts []*partition) *topic {
	t := &topic{info: info, parts: parts}
	t.setConfigs(cfg)
	return t
}

// setConfigs replaces the topic's configs. Under Store.catMu (or before
// the topic is shared).
func (t *topic) setConfigs(cfg bridge.TopicConfigs) {
	t.cfg = cfg
	n, err := strconv.ParseInt(cfg["segment.bytes"], 10, 64)
	if err != nil || n <= 0 {
		n = 0
	}
	t.segBytes.Store(n)
}

// Open opens (or creates) the store in dir: pebble at dir, the segment
// logs under dir/logs. It recovers every partition's log (cutting a torn
// tail), removes the logs of deleted topics and partitions, and moves the
// batches an older version kept in pebble into the logs (migrate.go).
func Open(dir string, opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.MemTableSize == 0 {
		opts.MemTableSize = 64 << 20
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 256 << 20
	}
	if opts.DiskRetry <= 0 {
		opts.DiskRetry = 250 * time.Millisecond
	}
	if opts.baseFS == nil {
		opts.baseFS = vfs.Default
	}
	logsDir := opts.baseFS.PathJoin(dir, "logs")
	if opts.RetentionCheckInterval == 0 {
		opts.RetentionCheckInterval = DefaultRetentionCheckInterval
	}
	if opts.clock == nil {
		opts.clock = time.Now
	}
	h := newHealthState(opts.Logger)
	po := &pebble.Options{
		Logger:       pebbleLogger{l: opts.Logger, h: h},
		MemTableSize: opts.MemTableSize,
		CacheSize:    opts.CacheSize,
		FS:           &diskFS{FS: opts.baseFS, h: h, retryEvery: opts.DiskRetry},
		EventListener: &pebble.EventListener{
			BackgroundError: func(err error) {
				if every(&h.lastPebble, 10*time.Second) {
					opts.Logger.Error("pebble background error", "component", "pebble", "err", err)
				}
			},
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				h.fatal("data corruption in "+info.Path, info.Details)
			},
		},
	}
	// One flush makes one L0 file, not ~30 of pebble's default 2 MiB (this
	// mattered when batches were in pebble; docs/PERFORMANCE.md).
	po.TargetFileSizes[0] = int64(opts.MemTableSize)
	// Small records; block compression is not worth its CPU (it cost
	// 10-12 % of produce CPU when batches were in pebble).
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	if err := makeLogsDir(opts.baseFS, dir, logsDir); err != nil {
		_ = db.Close()
		return nil, err
	}
	s := &Store{
		db:        db,
		dir:       dir,
		log:       opts.Logger,
		policy:    opts.Sync,
		writeOpts: pebble.NoSync,
		fs:        opts.baseFS,
		direct:    opts.baseFS == vfs.Default,
		logsDir:   logsDir,
		diskRetry: opts.DiskRetry,
		stopProbe: make(chan struct{}),
		topics:    make(map[string]map[string]*topic),
		health:    h,
		clock:     opts.clock,
	}
	if opts.Sync == SyncAlways {
		s.writeOpts = pebble.Sync
	}
	if err := s.load(); err != nil {
		s.closeLogs()
		_ = db.Close()
		return nil, err
	}
	if err := s.openJournal(); err != nil {
		s.closeLogs()
		_ = db.Close()
		return nil, err
	}
	if opts.Sync == SyncInterval {
		s.stopSync, s.syncDone = make(chan struct{}), make(chan struct{})
		go s.syncLoop(opts.SyncInterval)
	}
	if opts.RetentionCheckInterval > 0 {
		s.stopRet, s.retDone = make(chan struct{}), make(chan struct{})
		go s.retentionLoop(opts.RetentionCheckInterval)
	}
	h.opened.Store(true)
	return s, nil
}

// makeLogsDir creates <data dir>/logs, its entry durable.
func makeLogsDir(fs vfs.FS, dir, logsDir string) error {
	if err := fs.MkdirAll(logsDir, 0o755); err != nil {
		return fmt.Errorf("embedded: create %s: %w", logsDir, err)
	}
	if err := seglog.SyncDir(fs, dir); err != nil {
		return fmt.Errorf("embedded: sync %s: %w", dir, err)
	}
	return nil
}

// load reads the id counter and the catalog, recovers every partition's
// log, removes the directories of topics and partitions no longer in the
// catalog, and moves batches a previous version kept in pebble into the
// logs (migrate.go).
func (s *Store) load() error {
	s.nextID = 1
	v, closer, err := s.db.Get(counterKey)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
	case err != nil:
		return fmt.Errorf("embedded: read topic counter: %w", err)
	default:
		if len(v) == 4 {
			s.nextID = be.Uint32(v)
		}
		_ = closer.Close()
	}
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{prefixCatalog}, UpperBound: []byte{prefixCatalog + 1},
	})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		t, err := s.loadTopic(it.Key(), it.Value())
		if t != nil {
			s.addTopic(t) // also on an error, so closeLogs closes its logs
		}
		if err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if err := s.removeOrphans(); err != nil {
		return err
	}
	return s.migrate()
}

// loadTopic rebuilds one topic from its catalog entry and its data.
func (s *Store) loadTopic(k, v []byte) (*topic, error) {
	stream, name, err := parseCatalogKey(k)
	if err != nil {
		return nil, err
	}
	id, n, created, cfg, err := parseTopicValue(v)
	if err != nil {
		return nil, err
	}
	info := bridge.TopicInfo{Stream: stream, Name: name, ID: id, Partitions: n, CreatedAt: created}
	t := newTopic(info, cfg, make([]*partition, 0, n))
	for i := 0; i < int(n); i++ {
		// The log start DeleteRecords or retention left (0: none): the
		// log removes the segments below it and never hands out offsets
		// below it again.
		start, err := s.readLogStart(id, uint32(i))
		if err != nil {
			return t, err
		}
		p, err := s.openPartition(id, i, start)
		if err != nil {
			return t, err
		}
		t.parts = append(t.parts, p)
	}
	return t, nil
}

// readLogStart reads a partition's stored log start offset, 0 when none.
func (s *Store) readLogStart(id, part uint32) (uint64, error) {
	v, closer, err := s.db.Get(logStartKey(id, part))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("embedded: read log start of topic %d partition %d: %w", id, part, err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("embedded: topic %d partition %d: %w", id, part, errCorrupt)
	}
	return be.Uint64(v), nil
}

func (s *Store) addTopic(t *topic) {
	m := s.topics[t.info.Stream]
	if m == nil {
		m = make(map[string]*topic)
		s.topics[t.info.Stream] = m
	}
	m[t.info.Name] = t
}

// enter admits a call that needs only the in-memory catalog and offsets
// (they stay true whatever the disk does): it holds ops shared until the
// caller's deferred s.ops.RUnlock, or fails when the store is closed.
func (s *Store) enter() error {
	if s.closed.Load() {
		// Checked before RLock too: a Close waiting for a hung call holds
		// ops' writer slot, and a new RLock would queue behind it.
		return bridge.ErrClosed
	}
	s.ops.RLock()
	if s.closed.Load() {
		s.ops.RUnlock()
		return bridge.ErrClosed
	}
	return nil
}

// enterRead admits a call that reads the disk: refused once the store
// failed for good (pebble may be wedged), allowed while the disk is full.
func (s *Store) enterRead() error {
	if err := s.enter(); err != nil {
		return err
	}
	if s.health.needsRestart() {
		s.ops.RUnlock()
		return s.health.err()
	}
	return nil
}

// enterWrite admits a write: refused while the disk is full or the store
// failed. The caller defers s.exitWrite.
func (s *Store) enterWrite() error {
	if err := s.enter(); err != nil {
		return err
	}
	if err := s.health.beginWrite(); err != nil {
		s.ops.RUnlock()
		return err
	}
	return nil
}

func (s *Store) exitWrite() {
	s.health.endWrite()
	s.ops.RUnlock()
}

// Health is the disk's health (health.go).
func (s *Store) Health() (bridge.Health, <-chan struct{}) { return s.health.Health() }

// fail marks the store failed for good after a commit error. A failed
// commit leaves a reserved offset range that will never be written; rather
// than expose the hole or reuse the offsets (a reader may have seen later
// ones acknowledged), the store refuses all further writes until it is
// reopened, which recovers offsets from what really is on disk. It returns
// the error calls get.
func (s *Store) fail(what string, err error) error {
	s.health.fatal(what, err)
	return s.health.err()
}

// Close waits for calls in flight, syncs and closes the segment logs and
// the db. Calls after Close return bridge.ErrClosed. Close is idempotent.
// When the disk is full or the store failed, pebble cannot close (its WAL
// writer may be waiting for the disk): Close then returns an error at once
// and leaves the logs and the db as they are. What was acknowledged under
// SyncAlways is already on disk.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	close(s.stopProbe)
	// A sweep in flight holds ops shared, so the wait for the sweeper's
	// end comes after ops.Lock below; new sweeps refuse the closed store.
	if s.stopRet != nil {
		close(s.stopRet)
	}
	if h, _ := s.health.Health(); h.State != bridge.Healthy || s.health.blocked.Load() > 0 {
		return fmt.Errorf("embedded: not closed cleanly: %w", h.Cause)
	}
	s.ops.Lock()
	defer s.ops.Unlock()
	if s.retDone != nil {
		<-s.retDone
	}
	if s.stopSync != nil {
		close(s.stopSync)
		<-s.syncDone
	}
	// The logs first: each syncs its active segment and writes its index,
	// so every returned Append is durable whatever the policy, and the
	// next Open reads no segment.
	if err := s.closeLogs(); err != nil {
		return errors.Join(err, s.db.Close())
	}
	// Then pebble's WAL (committed offsets and coordinator state under
	// SyncInterval/SyncNever).
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return errors.Join(err, s.db.Close())
	}
	if s.journal != nil {
		s.journal.close()
	}
	// Flush writes the memtable to an sstable, so the next Open has no WAL
	// to replay; pebble's Close syncs the WAL in any case. Skipped when the
	// sstable might not fit: a flush waiting for space would hold Close.
	var ferr error
	if s.roomToFlush() {
		ferr = s.db.Flush()
	}
	return errors.Join(ferr, s.db.Close())
}

// roomToFlush reports whether the disk has twice the memtable's size free.
func (s *Store) roomToFlush() bool {
	du, err := vfs.Default.GetDiskUsage(s.dir)
	if err != nil {
		return false
	}
	return du.AvailBytes >= 2*s.db.Metrics().MemTable.Size+1<<20
}

// closeLogs closes every partition's log (syncing it). Under ops held
// exclusively, or during Open.
func (s *Store) closeLogs() error {
	var errs []error
	for _, p := range s.allPartitions() {
		if err := p.log.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// allPartitions lists every partition of every topic.
func (s *Store) allPartitions() []*partition {
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	var out []*partition
	for _, byName := range s.topics {
		for _, t := range byName {
			out = append(out, t.parts...)
		}
	}
	return out
}

// Sync makes every Append that has returned durable, whatever the policy:
// every segment log with unsynced bytes, then pebble's WAL.
func (s *Store) Sync() error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	if err := s.syncLogs(); err != nil {
		return err
	}
	return s.syncWAL()
}

// syncLogs syncs every log holding unsynced bytes. A failed sync fails the
// store (health.go says why a failed fsync is never retried).
func (s *Store) syncLogs() error {
	for _, p := range s.allPartitions() {
		if !p.log.Dirty() {
			continue
		}
		if err := p.log.Sync(context.Background()); err != nil && !errors.Is(err, seglog.ErrClosed) {
			return s.fail("sync", err)
		}
	}
	return nil
}

// syncWAL fsyncs the WAL: an empty LogData record committed with Sync
// waits for everything written before it.
func (s *Store) syncWAL() error {
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return s.fail("sync", err)
	}
	return nil
}

// wroteUnsynced notes a write made without a sync (an offset commit under
// the store's policy), for SyncInterval's syncer.
func (s *Store) wroteUnsynced() {
	if s.policy == SyncInterval {
		s.dirty.Add(1)
	}
}

// syncLoop is SyncInterval's background syncer: every interval with
// writes, the segment logs holding unsynced bytes, then pebble's WAL. It
// skips idle ticks.
func (s *Store) syncLoop(every time.Duration) {
	defer close(s.syncDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stopSync:
			return
		case <-t.C:
			if s.dirty.Load() > 0 && s.health.beginWrite() == nil {
				s.dirty.Store(0)
				if s.syncLogs() == nil {
					_ = s.syncWAL()
				}
				s.health.endWrite()
			}
		}
	}
}

// pebbleLogger sends pebble's messages to slog; pebble's routine info
// (flushes, compactions) goes to Debug, errors at a bounded rate.
type pebbleLogger struct {
	l *slog.Logger
	h *healthState
}

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	if every(&p.h.lastPebble, 10*time.Second) {
		p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

// Fatalf must not return (pebble's contract: its caller would carry on as
// if a failed commit had succeeded) and must not panic (pebble may hold its
// commit lock, and no one may recover a panic from code whose locks it does
// not own). So it marks the store failed and parks the goroutine for good;
// the guard answers the stuck call. During Open nothing is served yet and
// crashing is the clear answer, so it panics there.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !p.h.opened.Load() {
		panic("pebble: " + msg)
	}
	p.h.fatal("pebble", errors.New(msg))
	waitForever()
}

// lookup finds a topic; the catalog lock is held only for the map reads.
func (s *Store) lookup(stream, name string) (*topic, error) {
	s.catMu.RLock()
	t := s.topics[stream][name]
	s.catMu.RUnlock()
	if t == nil {
		return nil, bridge.ErrTopicNotFound
	}
	return t, nil
}

// lookupPartition finds a topic and one of its partitions.
func (s *Store) lookupPartition(stream, name string, part int32) (*topic, *partition, error) {
	t, err := s.lookup(stream, name)
	if err != nil {
		return nil, nil, err
	}
	if part < 0 || int(part) >= len(t.parts) {
		return nil, nil, bridge.ErrPartitionNotFound
	}
	return t, t.parts[part], nil
}

// CreateTopic creates stream/topic with n partitions under a fresh id.
// The catalog entry and the id counter are committed together with an
// fsync, whatever the policy: topics are rare and must not come back
// from the dead or reuse an id after a crash.
func (s *Store) CreateTopic(ctx context.Context, stream, name string, n int32) (bridge.TopicInfo, error) {
	return s.CreateTopicWithConfigs(ctx, stream, name, n, nil)
}

// CreateTopicWithConfigs is CreateTopic keeping cfg in the same catalog
// commit. The embedded store keeps every config it is given; of them it
// enforces retention.ms and retention.bytes (retention.go, docs/SCOPE.md).
func (s *Store) CreateTopicWithConfigs(ctx context.Context, stream, name string, n int32, cfg bridge.TopicConfigs) (bridge.TopicInfo, error) {
	if err := s.enterWrite(); err != nil {
		return bridge.TopicInfo{}, err
	}
	defer s.exitWrite()
	if err := checkName("stream", stream); err != nil {
		return bridge.TopicInfo{}, err
	}
	if err := checkName("topic", name); err != nil {
		return bridge.TopicInfo{}, err
	}
	if n < 1 || n > MaxPartitions {
		return bridge.TopicInfo{}, fmt.Errorf("embedded: %d partitions, want 1..%d", n, MaxPartitions)
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	if s.topics[stream][name] != nil {
		return bridge.TopicInfo{}, bridge.ErrTopicExists
	}
	if s.nextID == ^uint32(0) {
		return bridge.TopicInfo{}, errors.New("embedded: topic ids exhausted")
	}
	info := bridge.TopicInfo{Stream: stream, Name: name, ID: s.nextID, Partitions: n, CreatedAt: nowMicros()}
	cfg = maps.Clone(cfg)
	val, err := topicValue(info.ID, n, info.CreatedAt, cfg)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	parts, err := s.newPartitions(info.ID, 0, int(n))
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(catalogKey(stream, name), val, nil)
	_ = b.Set(counterKey, be.AppendUint32(nil, info.ID+1), nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return bridge.TopicInfo{}, fmt.Errorf("%w: create topic: %w", bridge.ErrUnavailable, err)
	}
	s.nextID++
	s.addTopic(newTopic(info, cfg, parts))
	return info, nil
}

// TopicConfigs returns a copy of the topic's configs.
func (s *Store) TopicConfigs(ctx context.Context, stream, name string) (bridge.TopicConfigs, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	s.catMu.RLock()
	defer s.catMu.RUnlock()
	t := s.topics[stream][name]
	if t == nil {
		return nil, bridge.ErrTopicNotFound
	}
	out := make(bridge.TopicConfigs, len(t.cfg))
	maps.Copy(out, t.cfg)
	return out, nil
}

// SetTopicConfigs rewrites the topic's catalog entry with cfg, synced
// like CreateTopic.
func (s *Store) SetTopicConfigs(ctx context.Context, stream, name string, cfg bridge.TopicConfigs) error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	s.catMu.Lock()
	defer s.catMu.Unlock()
	t := s.topics[stream][name]
	if t == nil {
		return bridge.ErrTopicNotFound
	}
	cfg = maps.Clone(cfg)
	val, err := topicValue(t.info.ID, t.info.Partitions, t.info.CreatedAt, cfg)
	if err != nil {
		return err
	}
	if err := s.db.Set(catalogKey(stream, name), val, pebble.Sync); err != nil {
		return fmt.Errorf("%w: set topic configs: %w", bridge.ErrUnavailable, err)
	}
	t.setConfigs(cfg)
	return nil
}

// checkName applies Iggy's name rule: 1..255 bytes.
func checkName(what, name string) error {
	if len(name) == 0 || len(name) > 255 {
		return fmt.Errorf("embedded: %s name must be 1..255 bytes", what)
	}
	return nil
}

// DeleteTopic removes the catalog entry (and the log starts) in one synced
// commit, then the topic's segment logs with their directory, so the space
// comes back at once. It waits for Appends in flight on the topic. A crash
// between the two leaves a directory no catalog entry names: Open removes
// it.
func (s *Store) DeleteTopic(ctx context.Context, stream, name string) error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	t, err := s.deleteTopic(stream, name)
	if err != nil {
		return err
	}
	// Outside the catalog lock: removing big files takes a while.
	s.removeLogs(t.parts)
	if err := s.fs.RemoveAll(s.topicDir(t.info.ID)); err != nil {
		s.log.Warn("embedded store: removing a deleted topic's directory; removed at the next open", "topic_id", t.info.ID, "err", err)
	}
	return nil
}

// deleteTopic commits the deletion of a topic and takes it out of the
// catalog.
func (s *Store) deleteTopic(stream, name string) (*topic, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	t := s.topics[stream][name]
	if t == nil {
		return nil, bridge.ErrTopicNotFound
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(catalogKey(stream, name), nil)
	slo, shi := logStartBounds(t.info.ID, 0)
	_ = b.DeleteRange(slo, shi, nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return nil, fmt.Errorf("%w: delete topic: %w", bridge.ErrUnavailable, err)
	}
	t.deleted = true
	delete(s.topics[stream], name)
	if len(s.topics[stream]) == 0 {
		delete(s.topics, stream)
	}
	return t, nil
}

// removeLogs removes the logs of deleted partitions (their files; a
// failure is logged, Open removes what is left).
func (s *Store) removeLogs(parts []*partition) {
	for _, p := range parts {
		if err := p.log.Remove(); err != nil {
			s.log.Warn("embedded store: removing a deleted partition's log; removed at the next open", "err", err)
		}
	}
}

// newPartitions opens empty logs for partitions [from, to) of a topic,
// removing any directory left there (a partition removed by a shrink
// whose directory removal did not finish). Under catMu.
func (s *Store) newPartitions(id uint32, from, to int) ([]*partition, error) {
	parts := make([]*partition, 0, to-from)
	for i := from; i < to; i++ {
		if err := s.fs.RemoveAll(s.partDir(id, i)); err != nil && !isNotExist(err) {
			return nil, fmt.Errorf("%w: remove %s: %w", bridge.ErrStorage, s.partDir(id, i), err)
		}
		p, err := s.openPartition(id, i, 0)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// Topic returns one topic.
func (s *Store) Topic(ctx context.Context, stream, name string) (bridge.TopicInfo, error) {
	if err := s.enter(); err != nil {
		return bridge.TopicInfo{}, err
	}
	defer s.ops.RUnlock()
	t, err := s.lookup(stream, name)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	return t.info, nil
}

// TopicState returns the topic and each partition's offsets, from memory.
func (s *Store) TopicState(ctx context.Context, stream, name string) (bridge.TopicInfo, []bridge.PartitionState, error) {
	if err := s.enter(); err != nil {
		return bridge.TopicInfo{}, nil, err
	}
	defer s.ops.RUnlock()
	t, err := s.lookup(stream, name)
	if err != nil {
		return bridge.TopicInfo{}, nil, err
	}
	states := make([]bridge.PartitionState, len(t.parts))
	for i, p := range t.parts {
		states[i] = p.state()
	}
	return t.info, states, nil
}

// Topics lists a stream's topics sorted by name.
func (s *Store) Topics(ctx context.Context, stream string) ([]bridge.TopicInfo, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.ops.RUnlock()
	s.catMu.RLock()
	out := make([]bridge.TopicInfo, 0, len(s.topics[stream]))
	for _, t := range s.topics[stream] {
		out = append(out, t.info)
	}
	s.catMu.RUnlock()
	slices.SortFunc(out, func(a, b bridge.TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func nowMicros() uint64 { return uint64(time.Now().UnixMicro()) }

// SetPartitions changes a topic's partition count to n (0..MaxPartitions):
// new partitions are added empty at the end, partitions past n are removed
// with their data, as Iggy's CreatePartitions and DeletePartitions do. The
// catalog entry and the range delete are one synced commit. Appends in
// flight on the topic finish first; an Append that looked the topic up
// before the change fails with ErrTopicNotFound and finds the new shape on
// its retry.
func (s *Store) SetPartitions(ctx context.Context, stream, name string, n int32) (bridge.TopicInfo, error) {
	return s.setPartitions(stream, name, n, false)
}

// GrowPartitions adds empty partitions at the end until the topic has
// total (Kafka CreatePartitions); a total at or below the current count
// changes nothing. The check and the change are one step under the
// catalog lock, so a concurrent smaller grow can never shrink the topic.
func (s *Store) GrowPartitions(ctx context.Context, stream, name string, total int32) (bridge.TopicInfo, error) {
	return s.setPartitions(stream, name, total, true)
}

func (s *Store) setPartitions(stream, name string, n int32, growOnly bool) (bridge.TopicInfo, error) {
	if err := s.enterWrite(); err != nil {
		return bridge.TopicInfo{}, err
	}
	defer s.exitWrite()
	if n < 0 || n > MaxPartitions {
		return bridge.TopicInfo{}, fmt.Errorf("embedded: %d partitions, want 0..%d", n, MaxPartitions)
	}
	info, removed, err := s.changePartitions(stream, name, n, growOnly)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	// Outside the catalog lock: the removed partitions' logs and files.
	s.removeLogs(removed)
	return info, nil
}

// changePartitions commits a topic's new partition count and swaps in its
// new in-memory topic; it returns the partitions removed, whose logs the
// caller removes. New partitions get empty logs, opened before the commit.
func (s *Store) changePartitions(stream, name string, n int32, growOnly bool) (bridge.TopicInfo, []*partition, error) {
	s.catMu.Lock()
	defer s.catMu.Unlock()
	old := s.topics[stream][name]
	if old == nil {
		return bridge.TopicInfo{}, nil, bridge.ErrTopicNotFound
	}
	if growOnly && n <= old.info.Partitions {
		return old.info, nil, nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	info := old.info
	info.Partitions = n
	val, err := topicValue(info.ID, n, info.CreatedAt, old.cfg)
	if err != nil {
		return bridge.TopicInfo{}, nil, err
	}
	kept := old.parts[:min(int(n), len(old.parts))]
	added, err := s.newPartitions(info.ID, len(kept), int(n))
	if err != nil {
		return bridge.TopicInfo{}, nil, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(catalogKey(stream, name), val, nil)
	if n < old.info.Partitions {
		slo, shi := logStartBounds(info.ID, uint32(n))
		_ = b.DeleteRange(slo, shi, nil)
	}
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return bridge.TopicInfo{}, nil, fmt.Errorf("%w: set partitions: %w", bridge.ErrUnavailable, err)
	}
	// A new topic object, so readers of the old one's info never race
	// with this change; kept partitions carry over with their state.
	parts := append(append(make([]*partition, 0, n), kept...), added...)
	t := newTopic(info, old.cfg, parts)
	old.deleted = true
	s.topics[stream][name] = t
	return info, old.parts[len(kept):], nil
}

// RenameTopic gives a topic a new name in its stream, keeping its id, data
// and offsets (they are keyed by id: its log directories stay where they
// are), as Iggy's UpdateTopic does.
// ErrTopicNotFound when from is missing, ErrTopicExists when to is taken.
func (s *Store) RenameTopic(ctx context.Context, stream, from, to string) (bridge.TopicInfo, error) {
	if err := s.enterWrite(); err != nil {
		return bridge.TopicInfo{}, err
	}
	defer s.exitWrite()
	if err := checkName("topic", to); err != nil {
		return bridge.TopicInfo{}, err
	}
	s.catMu.Lock()
	defer s.catMu.Unlock()
	old := s.topics[stream][from]
	if old == nil {
		return bridge.TopicInfo{}, bridge.ErrTopicNotFound
	}
	if from == to {
		return old.info, nil
	}
	if s.topics[stream][to] != nil {
		return bridge.TopicInfo{}, bridge.ErrTopicExists
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	info := old.info
	info.Name = to
	val, err := topicValue(info.ID, info.Partitions, info.CreatedAt, old.cfg)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(catalogKey(stream, from), nil)
	_ = b.Set(catalogKey(stream, to), val, nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return bridge.TopicInfo{}, fmt.Errorf("%w: rename topic: %w", bridge.ErrUnavailable, err)
	}
	t := newTopic(info, old.cfg, old.parts)
	old.deleted = true
	delete(s.topics[stream], from)
	s.topics[stream][to] = t
	return info, nil
}
