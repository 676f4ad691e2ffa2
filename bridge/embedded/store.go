// Package embedded is a bridge.Store kept in-process on pebble, so the
// gateway runs with no Iggy server. It stores exactly the bytes a real Iggy
// server would: each Append is one stamped Iggy batch under one key.
// docs/STORAGE.md explains the layout and what each sync policy promises.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/iggy-kafka/gateway/bridge"
)

// SyncPolicy says when an Append is made durable.
type SyncPolicy int

const (
	// SyncAlways commits every Append with an fsync of the WAL before it
	// returns. Concurrent Appends share fsyncs (pebble's group commit).
	SyncAlways SyncPolicy = iota
	// SyncInterval commits without waiting for the disk and syncs the WAL
	// in the background every Options.SyncInterval.
	SyncInterval
	// SyncNever leaves syncing to pebble and the OS (and to Close).
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
	// MemTableSize is pebble's memtable size; default 64 MiB. Batches over
	// half of it are written to their own flushable, so keep it well above
	// the largest produce request.
	MemTableSize uint64
	// CacheSize is pebble's block cache in bytes; default 256 MiB, so
	// consumers reading what was just produced hit memory, not pread +
	// checksum per block (docs/PERFORMANCE.md).
	CacheSize int64
	// DiskRetry is the pause between attempts of a disk operation that
	// failed for lack of space (health.go); default 250ms.
	DiskRetry time.Duration
	// RetentionCheckInterval is how often retention.ms and retention.bytes
	// are applied (retention.go); default 30s, negative: never.
	RetentionCheckInterval time.Duration

	clock  func() time.Time // time.Now unless a test moves time
	baseFS vfs.FS           // under diskFS; vfs.Default unless a test injects faults
}

// Store is the embedded bridge.Store. All methods are safe for concurrent
// use. Open it with Open and release it with Close.
type Store struct {
	db        *pebble.DB
	dir       string
	log       *slog.Logger
	writeOpts *pebble.WriteOptions
	policy    SyncPolicy

	catMu  sync.RWMutex // guards topics and nextID; held across catalog commits
	topics map[string]map[string]*topic
	nextID uint32

	// ops is held shared by every call and exclusively by Close, so Close
	// waits for calls in flight and the db is never used after it closes.
	ops    sync.RWMutex
	closed atomic.Bool
	health *healthState // disk full / failed (health.go)

	dirty    atomic.Uint64 // unsynced appends, for SyncInterval
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

var (
	_ bridge.Store            = (*Store)(nil)
	_ bridge.TopicConfigStore = (*Store)(nil)
	_ bridge.TrimNotifier     = (*Store)(nil)
)

// topic is the in-memory state of one catalog entry.
type topic struct {
	info bridge.TopicInfo
	// mu is held shared by Appends in flight and exclusively by
	// DeleteTopic, so no Append can write data after its topic's range
	// was deleted.
	mu      sync.RWMutex
	deleted bool
	parts   []*partition
	// cfg is the topic's configs; guarded by Store.catMu, replaced (never
	// changed in place) by SetTopicConfigs.
	cfg bridge.TopicConfigs
}

// Open opens (or creates) the store in dir and recovers every partition's
// next offset from its last stored batch.
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
	// One flush makes one L0 file, not ~30 of pebble's default 2 MiB: L0
	// stops filling with small files and writes stop stalling (3x sustained
	// 1 KiB produce in docs/PERFORMANCE.md).
	po.TargetFileSizes[0] = int64(opts.MemTableSize)
	// Values are Kafka payloads that clients compress themselves, or that
	// do not compress: block compression cost 10-12 % of produce CPU.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("embedded: open %s: %w", dir, err)
	}
	s := &Store{
		db:        db,
		dir:       dir,
		log:       opts.Logger,
		policy:    opts.Sync,
		writeOpts: pebble.NoSync,
		topics:    make(map[string]map[string]*topic),
		health:    h,
		clock:     opts.clock,
	}
	if opts.Sync == SyncAlways {
		s.writeOpts = pebble.Sync
	}
	if err := s.load(); err != nil {
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

// load reads the id counter and the catalog and recovers every partition.
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
		if err != nil {
			return err
		}
		s.addTopic(t)
	}
	return it.Error()
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
	t := newTopic(bridge.TopicInfo{Stream: stream, Name: name, ID: id, Partitions: n, CreatedAt: created})
	t.cfg = cfg
	for i, p := range t.parts {
		start, err := s.readLogStart(id, uint32(i))
		if err != nil {
			return nil, err
		}
		if err := s.recoverPartition(id, uint32(i), p, start); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// recoverPartition sets a partition's offsets from its first and last
// stored batches: next = last base offset + last message count. start is
// the log start DeleteRecords left (0: none): earliest is never below it,
// and when DeleteRecords removed every batch it is also next, so offsets
// are not handed out again.
func (s *Store) recoverPartition(id, part uint32, p *partition, start uint64) error {
	lo, hi := partitionBounds(id, part)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return err
	}
	defer it.Close()
	if !it.Last() {
		p.init(start, start)
		return it.Error()
	}
	v, err := bridge.ParseIggyBatch(it.Value())
	if err != nil {
		return fmt.Errorf("embedded: topic %d partition %d: last batch: %w", id, part, err)
	}
	next := max(offsetOfKey(it.Key())+uint64(v.Count), start)
	it.First()
	p.init(max(offsetOfKey(it.Key()), start), next)
	return it.Error()
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

func newTopic(info bridge.TopicInfo) *topic {
	t := &topic{info: info, parts: make([]*partition, info.Partitions)}
	for i := range t.parts {
		t.parts[i] = &partition{}
	}
	return t
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

// MemoryReads implements bridge.MemoryReader: Topic, Topics and Partition
// read only the in-memory catalog and watermarks. They take ops shared,
// which can wait only behind a Close (the gateway closes the store after
// its server stopped), and Close takes ops exclusively only while the
// store is healthy; on a full or failed disk it returns at once.
func (s *Store) MemoryReads() {}

// Health implements bridge.HealthReporter.
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

// Close waits for calls in flight, syncs and closes the db. Calls after
// Close return bridge.ErrClosed. Close is idempotent. When the disk is full
// or the store failed, pebble cannot close (its WAL writer is waiting for
// the disk): Close then returns an error at once and leaves the db as it
// is. What was acknowledged under SyncAlways is already on disk.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
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
	// Sync first: it takes milliseconds and makes every returned Append
	// durable whatever the policy, even if the caller stops waiting for
	// the flush below.
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return errors.Join(err, s.db.Close())
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

// Sync makes every Append that has returned durable, whatever the policy.
func (s *Store) Sync() error {
	if err := s.enterWrite(); err != nil {
		return err
	}
	defer s.exitWrite()
	return s.syncWAL()
}

// syncWAL fsyncs the WAL: an empty LogData record committed with Sync
// waits for everything written before it.
func (s *Store) syncWAL() error {
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return s.fail("sync", err)
	}
	return nil
}

// syncLoop is SyncInterval's background syncer. It skips idle ticks.
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
				_ = s.syncWAL()
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
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(catalogKey(stream, name), val, nil)
	_ = b.Set(counterKey, be.AppendUint32(nil, info.ID+1), nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return bridge.TopicInfo{}, fmt.Errorf("%w: create topic: %w", bridge.ErrUnavailable, err)
	}
	s.nextID++
	t := newTopic(info)
	t.cfg = cfg
	s.addTopic(t)
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
	t.cfg = cfg
	return nil
}

// checkName applies Iggy's name rule: 1..255 bytes.
func checkName(what, name string) error {
	if len(name) == 0 || len(name) > 255 {
		return fmt.Errorf("embedded: %s name must be 1..255 bytes", what)
	}
	return nil
}

// DeleteTopic removes the catalog entry and range-deletes the topic's
// data in one synced commit. It waits for Appends in flight on the topic.
// The space comes back as pebble compacts the range.
func (s *Store) DeleteTopic(ctx context.Context, stream, name string) error {
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
	t.mu.Lock()
	defer t.mu.Unlock()
	lo, hi := topicBounds(t.info.ID)
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Delete(catalogKey(stream, name), nil)
	_ = b.DeleteRange(lo, hi, nil)
	slo, shi := logStartBounds(t.info.ID, 0)
	_ = b.DeleteRange(slo, shi, nil)
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return fmt.Errorf("%w: delete topic: %w", bridge.ErrUnavailable, err)
	}
	t.deleted = true
	delete(s.topics[stream], name)
	if len(s.topics[stream]) == 0 {
		delete(s.topics, stream)
	}
	return nil
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
// total (bridge.PartitionGrower); a total at or below the current count
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
	s.catMu.Lock()
	defer s.catMu.Unlock()
	old := s.topics[stream][name]
	if old == nil {
		return bridge.TopicInfo{}, bridge.ErrTopicNotFound
	}
	if growOnly && n <= old.info.Partitions {
		return old.info, nil
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	info := old.info
	info.Partitions = n
	val, err := topicValue(info.ID, n, info.CreatedAt, old.cfg)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	b := s.db.NewBatch()
	defer b.Close()
	_ = b.Set(catalogKey(stream, name), val, nil)
	if n < old.info.Partitions {
		lo, _ := partitionBounds(info.ID, uint32(n))
		_, hi := partitionBounds(info.ID, uint32(old.info.Partitions-1))
		_ = b.DeleteRange(lo, hi, nil)
		slo, shi := logStartBounds(info.ID, uint32(n))
		_ = b.DeleteRange(slo, shi, nil)
	}
	if err := s.db.Apply(b, pebble.Sync); err != nil {
		return bridge.TopicInfo{}, fmt.Errorf("%w: set partitions: %w", bridge.ErrUnavailable, err)
	}
	// A new topic object, so readers of the old one's info never race
	// with this change; kept partitions carry over with their state.
	t := newTopic(info)
	copy(t.parts, old.parts)
	t.cfg = old.cfg
	old.deleted = true
	s.topics[stream][name] = t
	return info, nil
}

// RenameTopic gives a topic a new name in its stream, keeping its id, data
// and offsets (they are keyed by id), as Iggy's UpdateTopic does.
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
	t := newTopic(info)
	copy(t.parts, old.parts)
	t.cfg = old.cfg
	old.deleted = true
	delete(s.topics[stream], from)
	s.topics[stream][to] = t
	return info, nil
}
