package iggy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// Kafka DeleteRecords on Iggy (docs/IGGY.md, "Log start offsets"). Iggy
// cannot delete messages up to an offset: its DeleteSegments removes the
// oldest sealed segments (1 GiB each by default) and the protocol does not
// say where a segment ends, so the gateway cannot tell which segments lie
// wholly below an offset. The gateway therefore keeps each partition's log
// start offset itself, in the state stream, topic LogStartTopic, one
// partition, one message per DeleteRecords:
//
//	'S' u32 LE topic key, u32 LE partition, u64 LE start,
//	    u8 len + stream, u8 len + topic
//
// The topic key is bridge.TopicInfo.ID (Iggy's topic id mixed with its
// creation time), so a topic deleted and made again starts at 0. The
// highest start of a partition wins. Partition reports it as Earliest and
// the gateway's reads never go below it; the messages stay in Iggy (native
// Iggy consumers still see them) until Iggy's own retention deletes them.
const LogStartTopic = "log-starts"

var logStartState = stateTopic{name: LogStartTopic, what: "log starts"}

// logStartRefresh is how stale the gateway's copy of the log starts may
// get: another gateway's DeleteRecords is seen within it.
const logStartRefresh = time.Second

type startKey struct {
	stream, topic string
	id            uint32
	partition     int32
}

// logStarts is the in-memory copy of LogStartTopic.
type logStarts struct {
	// load serializes reads of the topic (refresh) and writes (set), so
	// next only moves forward.
	load sync.Mutex
	next uint64 // next offset of LogStartTopic to read; under load
	// loaded is the time of the last complete refresh (unix ns), 0
	// before the first.
	loaded atomic.Int64

	mu sync.RWMutex // guards m
	m  map[startKey]uint64
}

// logStart returns the stored log start of a partition, 0 when none,
// reading what other gateways stored when the copy is older than
// logStartRefresh. Any goroutine.
//
// Partition calls it on every Fetch, so a refresh in flight does not hold
// up other callers once a first refresh completed: they use the copy,
// which is at most one refresh period older.
func (s *Store) logStart(ctx context.Context, k startKey) (uint64, error) {
	ls := &s.starts
	if last := ls.loaded.Load(); time.Since(time.Unix(0, last)) >= logStartRefresh {
		locked := false
		if last == 0 {
			ls.load.Lock()
			locked = true
		} else {
			locked = ls.load.TryLock()
		}
		if locked {
			err := error(nil)
			if time.Since(time.Unix(0, ls.loaded.Load())) >= logStartRefresh {
				err = s.refreshStarts(ctx)
			}
			ls.load.Unlock()
			if err != nil {
				return 0, err
			}
		}
	}
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	return ls.m[k], nil
}

// refreshStarts reads LogStartTopic from ls.next to its end. Under
// ls.load.
func (s *Store) refreshStarts(ctx context.Context) error {
	ls := &s.starts
	next, err := s.replayState(ctx, &logStartState, ls.next, func(p []byte) {
		if k, start, ok := parseStart(p); ok {
			ls.note(k, start)
		}
	})
	ls.next = next
	if err != nil {
		return err
	}
	ls.loaded.Store(time.Now().UnixNano())
	return nil
}

// note records a start, keeping the highest.
func (ls *logStarts) note(k startKey, start uint64) {
	ls.mu.Lock()
	if ls.m == nil {
		ls.m = make(map[startKey]uint64)
	}
	if start > ls.m[k] {
		ls.m[k] = start
	}
	ls.mu.Unlock()
}

func appendStart(b []byte, k startKey, start uint64) []byte {
	b = append(b, 'S')
	b = le.AppendUint32(b, k.id)
	b = le.AppendUint32(b, uint32(k.partition))
	b = le.AppendUint64(b, start)
	b = append(b, byte(len(k.stream)))
	b = append(b, k.stream...)
	b = append(b, byte(len(k.topic)))
	return append(b, k.topic...)
}

func parseStart(p []byte) (startKey, uint64, bool) {
	if len(p) < 1+4+4+8+1 || p[0] != 'S' {
		return startKey{}, 0, false
	}
	k := startKey{id: le.Uint32(p[1:]), partition: int32(le.Uint32(p[5:]))}
	start := le.Uint64(p[9:])
	p = p[17:]
	n := int(p[0])
	if len(p) < 1+n+1 {
		return startKey{}, 0, false
	}
	k.stream = string(p[1 : 1+n])
	p = p[1+n:]
	if m := int(p[0]); len(p) == 1+m {
		k.topic = string(p[1:])
		return k, start, true
	}
	return startKey{}, 0, false
}

// DeleteRecords stores before as the partition's log start
// (Kafka DeleteRecords), durable as a send to the state stream is. See
// LogStartTopic for why the messages themselves stay in Iggy.
func (s *Store) DeleteRecords(ctx context.Context, stream, topic string, partition int32, before uint64) (bridge.PartitionState, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return bridge.PartitionState{}, err
	}
	if partition < 0 || int(partition) >= len(t.Partitions) {
		return bridge.PartitionState{}, bridge.ErrPartitionNotFound
	}
	k := startKey{stream: stream, topic: topic, id: topicInfo(stream, &t).ID, partition: partition}
	st := t.Partitions[partition].State()
	if before > st.Next {
		return bridge.PartitionState{}, fmt.Errorf("%w: %d above the high watermark %d", bridge.ErrOffsetOutOfRange, before, st.Next)
	}
	if len(stream) > 255 || len(topic) > 255 {
		return bridge.PartitionState{}, ErrNameLength
	}
	ls := &s.starts
	ls.load.Lock()
	defer ls.load.Unlock()
	if err := s.refreshStarts(ctx); err != nil {
		return bridge.PartitionState{}, err
	}
	ls.mu.RLock()
	cur := ls.m[k]
	ls.mu.RUnlock()
	if before <= max(cur, st.Earliest) {
		st.Earliest = min(max(cur, st.Earliest), st.Next)
		return st, nil
	}
	if _, err := s.appendState(ctx, &logStartState, stateMsg{payload: appendStart(nil, k, before)}); err != nil {
		return bridge.PartitionState{}, err
	}
	ls.note(k, before)
	st.Earliest = before
	return st, nil
}

// GrowPartitions adds partitions with Iggy's CreatePartitions until the
// topic has total (Kafka CreatePartitions). A create whose connection
// broke is not resent (it would add the partitions twice); the topic is
// read again and its count decides.
func (s *Store) GrowPartitions(ctx context.Context, stream, topic string, total int32) (bridge.TopicInfo, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return bridge.TopicInfo{}, err
	}
	if int64(total) <= int64(t.PartitionsCount) {
		return topicInfo(stream, &t), nil
	}
	err = s.c.CreatePartitions(ctx, Name(stream), Name(topic), uint32(int64(total)-int64(t.PartitionsCount)))
	if err != nil && !(brokenConn(err) && ctx.Err() == nil) {
		return bridge.TopicInfo{}, err
	}
	got, ok, gerr := s.c.GetTopic(ctx, Name(stream), Name(topic))
	switch {
	case gerr != nil:
		return bridge.TopicInfo{}, gerr
	case !ok:
		return bridge.TopicInfo{}, bridge.ErrTopicNotFound
	case err != nil && int64(got.PartitionsCount) < int64(total):
		return bridge.TopicInfo{}, err
	}
	return topicInfo(stream, &got), nil
}

// PartitionSizes reports Iggy's size_bytes of each partition
// (Kafka DescribeLogDirs): what its segments hold on disk, messages below a
// DeleteRecords start included until Iggy's retention removes them.
func (s *Store) PartitionSizes(ctx context.Context, stream, topic string) ([]int64, error) {
	t, err := s.lookupTopic(ctx, stream, topic)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(t.Partitions))
	for _, p := range t.Partitions {
		if int(p.ID) < len(out) {
			out[p.ID] = int64(min(p.SizeBytes, 1<<62))
		}
	}
	return out, nil
}
