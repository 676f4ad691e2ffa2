package share

import (
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The states of an in-flight record (KIP-932). A record below the share
// partition's start offset is done (acknowledged or archived); one at or
// past its end offset has never been handed out.
const (
	stateAvailable uint8 = iota // may be acquired (again)
	stateAcquired               // locked by a member until its deadline
	stateAcked                  // accepted: never delivered again
	stateArchived               // rejected, a gap, past the delivery limit, or not data
)

// The acknowledgement types of ShareFetch and ShareAcknowledge.
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4 // v2 with IsRenewAck (KIP-1222)
)

// record is one in-flight offset of a share partition.
type record struct {
	state      uint8
	deliveries int16
	owner      string // the member holding it while acquired
	deadline   int64  // acquisition lock end, unix ms, while acquired
}

// Partition is one topic partition as one share group consumes it: the
// share-partition start offset (every offset below it is done), the end
// offset (the next offset never handed out), and the records between
// them. Not safe for concurrent use: the coordinator's lock guards it.
type Partition struct {
	TopicID [16]byte
	start   int64
	end     int64
	recs    []record // recs[i] is offset start+i; len = end-start
	// dirty: the durable part changed since the last snapshot.
	dirty bool
	// locks counts acquired records, so sweeps skip idle partitions.
	locks int
	// next is the earliest acquisition deadline (unix ms) while locks > 0.
	next int64
	// stats counts what happens to records, for metrics (nil: not
	// counted).
	stats *Stats
	// rev is the shared store's revision of the state this partition
	// was read from or last wrote (cluster mode); verify: it may be
	// stale, so it is read again before its next use.
	rev    int64
	verify bool
}

// Stats are the record counts of a coordinator's share partitions.
// Atomic: partitions of any group update them.
type Stats struct {
	Acquired, Accepted, Released, Rejected, Expired, Archived, StateWrites atomic.Int64
}

// uncounted takes the counts of partitions without a coordinator's Stats.
var uncounted Stats

// st is where p counts.
func (p *Partition) st() *Stats {
	if p.stats != nil {
		return p.stats
	}
	return &uncounted
}

// newPartition starts a share partition at offset start, nothing in flight.
func newPartition(topicID [16]byte, start int64) *Partition {
	return &Partition{TopicID: topicID, start: start, end: start}
}

// Start is the share-partition start offset (SPSO).
func (p *Partition) Start() int64 { return p.start }

// End is the share-partition end offset (SPEO).
func (p *Partition) End() int64 { return p.end }

// InFlight is the number of offsets between start and end.
func (p *Partition) InFlight() int { return len(p.recs) }

// FetchFrom is the offset a fetch for acquirable records reads from: the
// first available in-flight record, else the end offset.
func (p *Partition) FetchFrom() int64 {
	for i := range p.recs {
		if p.recs[i].state == stateAvailable {
			return p.start + int64(i)
		}
	}
	return p.end
}

// HasAvailable reports whether an in-flight record waits to be acquired
// again (released or its lock expired).
func (p *Partition) HasAvailable() bool { return p.FetchFrom() < p.end }

// Batch is what Acquire needs to know of one stored record batch.
type Batch struct {
	Base, Last int64
	// Skip: the batch holds no records to deliver (a control batch, or
	// an aborted transaction's batch under read_committed): its offsets
	// are archived as they pass.
	Skip bool
}

// Acquired is one range of offsets handed to a member with one delivery
// count.
type Acquired struct {
	First, Last int64
	Deliveries  int16
}

// AcquireLimits bounds one acquisition.
type AcquireLimits struct {
	MaxRecords    int  // records to acquire, at least 1
	Strict        bool // record-limit mode: never more than MaxRecords
	MaxInFlight   int  // offsets between start and end (batch mode: but for the rest of a batch begun below it)
	LockMs        int64
	DeliveryLimit int16
}

// Acquire hands member the deliverable records of batches (sorted by
// offset, as read from the log from FetchFrom) that are available or new,
// up to the limits, locked until now+LockMs. It returns the acquired
// ranges, merged where contiguous with equal delivery counts. Offsets the
// batches skip between the end offset and a batch, and offsets of Skip
// batches, become archived as the end offset passes them. In batch mode a
// batch whose first record was acquired is acquired whole, past
// MaxRecords and MaxInFlight, as Kafka aligns acquisitions to batches.
func (p *Partition) Acquire(member string, batches []Batch, lim AcquireLimits, now int64, out []Acquired) []Acquired {
	n := 0
	deadline := now + lim.LockMs
	take := func(off int64, r *record) {
		r.state = stateAcquired
		r.owner = member
		r.deadline = deadline
		r.deliveries++
		p.locks++
		if p.locks == 1 || deadline < p.next {
			p.next = deadline
		}
		n++
		p.st().Acquired.Add(1)
		if k := len(out) - 1; k >= 0 && out[k].Last == off-1 && out[k].Deliveries == r.deliveries {
			out[k].Last = off
			return
		}
		out = append(out, Acquired{First: off, Last: off, Deliveries: r.deliveries})
	}
batches:
	for _, b := range batches {
		if b.Last < p.start {
			continue
		}
		started := false // a record of this batch was taken
		grown := false   // the window grew into this batch
		for off := max(b.Base, p.start); off <= b.Last; off++ {
			// Batch mode finishes a batch the window began to grow into
			// below the bound, as Kafka's SharePartition rounds up to the
			// batch end.
			if off >= p.end && !p.room(off, lim.MaxInFlight) && (lim.Strict || !grown || b.Skip) {
				break batches
			}
			if b.Skip {
				p.archive(off)
				continue
			}
			if n >= lim.MaxRecords && (lim.Strict || !started) {
				break batches
			}
			if off >= p.end {
				p.extend(off)
				p.recs = append(p.recs, record{})
				p.end++
				grown = true
			}
			if r := &p.recs[off-p.start]; r.state == stateAvailable {
				take(off, r)
				started = true
			}
		}
	}
	p.advance()
	return out
}

// room reports whether offset off (at or past the end) may join the
// window: the window, gaps included, stays within maxInFlight offsets, so
// its memory is bounded whatever the log holds. An empty window always
// has room (extend moves it to off).
func (p *Partition) room(off int64, maxInFlight int) bool {
	return len(p.recs) == 0 || off-p.start < int64(maxInFlight)
}

// extend archives the offsets between the end offset and off, which the
// log does not hold (compacted away or never written), moving the end to
// off; an empty window moves to off whole.
func (p *Partition) extend(off int64) {
	if len(p.recs) == 0 && off > p.end {
		p.start, p.end = off, off
		p.dirty = true
		return
	}
	for p.end < off {
		p.recs = append(p.recs, record{state: stateArchived})
		p.end++
		p.dirty = true
	}
}

// archive marks off, an offset of a batch with nothing to deliver, done:
// past the end it joins the in-flight window archived; inside it an
// available record is archived (one never acquired as data).
func (p *Partition) archive(off int64) {
	if off >= p.end {
		p.extend(off)
		p.recs = append(p.recs, record{state: stateArchived})
		p.end++
		p.dirty = true
		return
	}
	if r := &p.recs[off-p.start]; r.state == stateAvailable {
		r.state = stateArchived
		p.dirty = true
	}
}

// Acknowledge applies one acknowledgement batch of member: types has one
// entry for the whole range or one per offset. Every offset must be in
// flight and acquired by member, else nothing changes and the answer is
// INVALID_RECORD_STATE; a malformed batch is INVALID_REQUEST. Released
// records at the delivery limit are archived.
func (p *Partition) Acknowledge(member string, first, last int64, types []int8, renewOK bool, lim AcquireLimits, now int64) int16 {
	if first > last || len(types) == 0 || (len(types) != 1 && int64(len(types)) != last-first+1) {
		return kerr.InvalidRequest.Code
	}
	for _, t := range types {
		if t < AckGap || t > AckRenew || (t == AckRenew && !renewOK) {
			return kerr.InvalidRequest.Code
		}
	}
	if first < p.start || last >= p.end {
		return kerr.InvalidRecordState.Code
	}
	for off := first; off <= last; off++ {
		r := &p.recs[off-p.start]
		if r.state != stateAcquired || r.owner != member {
			return kerr.InvalidRecordState.Code
		}
	}
	for off := first; off <= last; off++ {
		t := types[0]
		if len(types) > 1 {
			t = types[off-first]
		}
		r := &p.recs[off-p.start]
		if t == AckRenew {
			r.deadline = now + lim.LockMs
			p.next = min(p.next, r.deadline) // a shorter lock than the one acquired
			continue
		}
		p.unlock(r)
		switch t {
		case AckAccept:
			r.state = stateAcked
			p.st().Accepted.Add(1)
		case AckRelease:
			p.release(r, lim.DeliveryLimit)
			p.st().Released.Add(1)
		default: // reject, gap
			r.state = stateArchived
			if t == AckReject {
				p.st().Rejected.Add(1)
			}
		}
		p.dirty = true
	}
	p.advance()
	return 0
}

// unlock ends r's acquisition.
func (p *Partition) unlock(r *record) {
	r.owner = ""
	r.deadline = 0
	p.locks--
}

// release makes r available again, or archives it at the delivery limit.
func (p *Partition) release(r *record, limit int16) {
	if limit > 0 && r.deliveries >= limit {
		r.state = stateArchived
		p.st().Archived.Add(1)
	} else {
		r.state = stateAvailable
	}
}

// ReleaseMember makes every record member holds available again (the
// member left, its session closed or it was fenced). It reports whether
// anything was released.
func (p *Partition) ReleaseMember(member string, limit int16) bool {
	if p.locks == 0 {
		return false
	}
	any := false
	for i := range p.recs {
		r := &p.recs[i]
		if r.state == stateAcquired && r.owner == member {
			p.unlock(r)
			p.release(r, limit)
			p.st().Released.Add(1)
			any = true
		}
	}
	if any {
		p.dirty = true
		p.advance()
	}
	return any
}

// Expire releases every record whose lock ended by now, archiving those at
// the delivery limit. It reports whether anything was released.
func (p *Partition) Expire(now int64, limit int16) bool {
	if p.locks == 0 || now < p.next {
		return false
	}
	any := false
	var next int64
	for i := range p.recs {
		r := &p.recs[i]
		if r.state != stateAcquired {
			continue
		}
		if r.deadline <= now {
			p.unlock(r)
			p.release(r, limit)
			p.st().Expired.Add(1)
			any = true
			continue
		}
		if next == 0 || r.deadline < next {
			next = r.deadline
		}
	}
	p.next = next
	if any {
		p.dirty = true
		p.advance()
	}
	return any
}

// advance moves the start offset past the done records at the front.
func (p *Partition) advance() {
	i := 0
	for i < len(p.recs) && (p.recs[i].state == stateAcked || p.recs[i].state == stateArchived) {
		i++
	}
	if i == 0 {
		return
	}
	p.start += int64(i)
	p.recs = append(p.recs[:0], p.recs[i:]...)
	p.dirty = true
}

// Reset moves the partition to start offset off with nothing in flight
// (AlterShareGroupOffsets, or a log that no longer holds the start).
// Records still acquired are dropped with their locks.
func (p *Partition) Reset(off int64) {
	p.start, p.end = off, off
	p.recs = p.recs[:0]
	p.locks, p.next = 0, 0
	p.dirty = true
}

// Counts are what describe-style callers show of a partition.
type Counts struct {
	Available, Acquired, Acked, Archived int
}

// Count tallies the in-flight records by state.
func (p *Partition) Count() Counts {
	var c Counts
	for i := range p.recs {
		switch p.recs[i].state {
		case stateAvailable:
			c.Available++
		case stateAcquired:
			c.Acquired++
		case stateAcked:
			c.Acked++
		default:
			c.Archived++
		}
	}
	return c
}

// skipTo drops the offsets below off (off > start): past the end the
// partition restarts there, else the records below off leave the window,
// their locks with them.
func (p *Partition) skipTo(off int64) {
	if off >= p.end {
		p.Reset(off)
		return
	}
	drop := int(off - p.start)
	for i := range drop {
		if p.recs[i].state == stateAcquired {
			p.locks--
		}
	}
	p.recs = append(p.recs[:0], p.recs[drop:]...)
	p.start = off
	p.dirty = true
	p.advance()
}
