package iggy

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iggy-kafka/gateway/bridge"
)

// The group log: every change to a Kafka group's committed offsets is also
// appended, as one groupRecord, to GroupOffsetTopic in the state stream
// (Options.StateStream), one partition, so the total order of the log is
// the order of the changes. The Store replays it into memory on first use
// and reads on from where it stopped before every answer, so it holds
// what the Iggy consumer offset cannot: the group list, commits of 0 and
// below, metadata, leader epoch, commit time. docs/CONSUMER_GROUPS.md has
// the rule that joins the two.

// GroupOffsetTopic is the state-stream topic of the group log.
const GroupOffsetTopic = "kafka-group-offsets"

var groupLogState = stateTopic{name: GroupOffsetTopic, what: "group log", resend: true}

// catchUpTimeout bounds one catch-up, the first replay of a long log
// included, on top of the caller's context. What was read before the
// deadline stays applied, so the next call continues from there.
const catchUpTimeout = 30 * time.Second

type groupKey struct{ stream, group string }

type partKey struct {
	topic     string
	partition uint32
}

// groupEntry is the latest commit record of one group partition.
type groupEntry struct {
	topicID uint32 // the topic's bridge id at commit time; 0 unknown
	o       bridge.CommittedOffset
}

// groupLog is the in-memory fold of the group log.
type groupLog struct {
	// sem admits one reader of the log at a time (a channel, so waiting
	// honours the caller's deadline); whoever holds it may move next.
	sem chan struct{}
	// clock ticks when a catch-up is asked for and when one starts; done
	// (held with sem) is the tick of the start of the last catch-up that
	// completed. A caller that arrived before that start needs no poll of
	// its own: concurrent readers share one.
	clock atomic.Uint64
	done  uint64

	mu      sync.Mutex // guards next, groups, skipped
	next    uint64     // offset of the next record to apply
	groups  map[groupKey]map[partKey]groupEntry
	skipped int // records not understood (newer version, malformed)

	ids atomic.Uint64 // message ids of this process's records
}

func newGroupLog() groupLog {
	return groupLog{sem: make(chan struct{}, 1), groups: make(map[groupKey]map[partKey]groupEntry)}
}

// apply folds one record into the map. Called with mu held.
func (g *groupLog) apply(r *groupRecord) {
	gk := groupKey{r.Stream, r.Group}
	switch r.Kind {
	case recCommit:
		m := g.groups[gk]
		if m == nil {
			m = make(map[partKey]groupEntry)
			g.groups[gk] = m
		}
		m[partKey{r.Topic, r.Partition}] = groupEntry{topicID: r.TopicID, o: bridge.CommittedOffset{
			Offset: r.Offset, LeaderEpoch: r.LeaderEpoch, Metadata: r.Metadata, CommitTime: r.CommitTime,
		}}
	case recDeleteOne:
		if m := g.groups[gk]; m != nil {
			delete(m, partKey{r.Topic, r.Partition})
			if len(m) == 0 {
				delete(g.groups, gk)
			}
		}
	case recDeleteGroup:
		delete(g.groups, gk)
	}
}

// entry returns the latest record of one group partition.
func (g *groupLog) entry(stream, group, topic string, partition uint32) (groupEntry, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e, ok := g.groups[groupKey{stream, group}][partKey{topic, partition}]
	return e, ok
}

// entries copies the group's records.
func (g *groupLog) entries(stream, group string) map[partKey]groupEntry {
	g.mu.Lock()
	defer g.mu.Unlock()
	m := g.groups[groupKey{stream, group}]
	out := make(map[partKey]groupEntry, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// names lists the groups of stream with a record that live says may still
// count, sorted.
func (g *groupLog) names(stream string, live func(partKey, groupEntry) bool) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for k, m := range g.groups {
		if k.stream != stream {
			continue
		}
		for pk, e := range m {
			if live(pk, e) {
				out = append(out, k.group)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// catchUp applies every record appended since the last one applied: on the
// first call the whole log. Another gateway's commits become visible here.
// A missing state stream or topic is an empty log.
func (s *Store) catchUp(ctx context.Context) error {
	g := &s.glog
	arrived := g.clock.Add(1)
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-g.sem }()
	if g.done > arrived {
		return nil
	}
	start := g.clock.Add(1)
	ctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	// Under sem nothing else moves next, so it is read once and written
	// once; mu is taken per record for the readers of groups.
	g.mu.Lock()
	from, skipped := g.next, g.skipped
	g.mu.Unlock()
	next, err := s.replayState(ctx, &groupLogState, from, func(p []byte) {
		r, err := decodeGroupRecord(p)
		g.mu.Lock()
		defer g.mu.Unlock()
		if err != nil {
			// Not ours to read (a newer gateway's version) or damaged:
			// the native offset still answers for it.
			g.skipped++
			return
		}
		g.apply(&r)
	})
	g.mu.Lock()
	g.next = next
	nowSkipped := g.skipped
	g.mu.Unlock()
	if nowSkipped > skipped {
		s.c.opts.Logger.Warn("group log: records skipped (unknown version or malformed); their native offsets still answer",
			"stream", s.c.opts.StateStream, "topic", GroupOffsetTopic, "skipped", nowSkipped-skipped)
	}
	if err != nil {
		return err
	}
	g.done = start
	return nil
}

// maxLogBatch bounds the payload bytes of one group-log send, far below
// the frame cap whatever the request held.
const maxLogBatch = 1 << 20

// logRecords appends recs to the group log in order, creating the state
// stream and topic on first use, and returns once the server stored them
// (durable as the topic's options, which are Options.Durability). Records
// go in sends of at most maxLogBatch payload bytes; an error may leave a
// prefix of them stored, which only repeats values the native offsets
// already hold.
func (s *Store) logRecords(ctx context.Context, recs []groupRecord) error {
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && (n == 0 || size < maxLogBatch) {
			size += len(recs[n].Stream) + len(recs[n].Group) + len(recs[n].Topic) + len(recs[n].Metadata) + 40
			n++
		}
		if err := s.logBatch(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

// logBatch sends recs as one Iggy batch. A send whose connection broke
// is sent once more (groupLogState.resend): records applied twice leave
// what once does.
func (s *Store) logBatch(ctx context.Context, recs []groupRecord) error {
	g := &s.glog
	msgs := make([]stateMsg, len(recs))
	var enc []byte
	for i := range recs {
		// The payloads share one buffer; one that append outgrew keeps
		// the earlier ones in the array they were written to.
		at := len(enc)
		enc = appendGroupRecord(enc, &recs[i])
		msgs[i] = stateMsg{timeID: true, payload: enc[at:len(enc):len(enc)]}
		le.PutUint64(msgs[i].id[8:], g.ids.Add(1))
	}
	off, err := s.appendState(ctx, &groupLogState, msgs...)
	if err != nil {
		return err
	}
	// When nothing else was appended since the last record applied, apply
	// these now and spare the next read a poll; otherwise the next
	// catch-up reads them in their place in the log.
	select {
	case g.sem <- struct{}{}:
		g.mu.Lock()
		if off == g.next {
			for i := range recs {
				g.apply(&recs[i])
			}
			g.next = off + uint64(len(recs))
		}
		g.mu.Unlock()
		<-g.sem
	default:
	}
	return nil
}
