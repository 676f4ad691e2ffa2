package share

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// dump shows a partition's window: start, end, and per in-flight offset its
// state letter (a available, q acquired, k acknowledged, x archived), its
// delivery count and, while acquired, its owner.
func dump(p *Partition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d-%d", p.start, p.end)
	for _, r := range p.recs {
		b.WriteByte(' ')
		b.WriteByte("aqkx"[r.state])
		fmt.Fprint(&b, r.deliveries)
		if r.state == stateAcquired {
			b.WriteString(r.owner)
		}
	}
	return b.String()
}

// checkInvariants fails t when p's bookkeeping disagrees with its records:
// the window matches the offsets, the lock count the acquired records, the
// earliest deadline is not later than any lock's.
func checkInvariants(t *testing.T, p *Partition) {
	t.Helper()
	if int64(len(p.recs)) != p.end-p.start || p.start > p.end {
		t.Fatalf("window %d-%d holds %d records", p.start, p.end, len(p.recs))
	}
	locks := 0
	for _, r := range p.recs {
		if r.state == stateAcquired {
			locks++
			if r.deadline < p.next {
				t.Fatalf("lock until %d ends before the earliest deadline %d", r.deadline, p.next)
			}
		} else if r.owner != "" || r.deadline != 0 {
			t.Fatalf("record in state %d keeps owner %q deadline %d", r.state, r.owner, r.deadline)
		}
	}
	if locks != p.locks {
		t.Fatalf("locks = %d, %d records acquired", p.locks, locks)
	}
}

// lim is the limits the tests acquire with unless they say otherwise.
var lim = AcquireLimits{MaxRecords: 100, MaxInFlight: 100, LockMs: 100, DeliveryLimit: 3}

func b(base, last int64) Batch         { return Batch{Base: base, Last: last} }
func skip(base, last int64) Batch      { return Batch{Base: base, Last: last, Skip: true} }
func acq(f, l int64, d int16) Acquired { return Acquired{First: f, Last: l, Deliveries: d} }

func TestAcquire(t *testing.T) {
	t.Parallel()
	with := func(f func(*AcquireLimits)) AcquireLimits { l := lim; f(&l); return l }
	cases := []struct {
		name    string
		start   int64
		setup   func(p *Partition)
		batches []Batch
		lim     AcquireLimits
		want    []Acquired
		after   string
	}{
		{name: "contiguous batches merge into one range", batches: []Batch{b(0, 2), b(3, 5)}, lim: lim,
			want: []Acquired{acq(0, 5, 1)}, after: "0-6 q1m q1m q1m q1m q1m q1m"},
		{name: "batch mode takes the whole batch past MaxRecords",
			batches: []Batch{b(0, 4), b(5, 9)}, lim: with(func(l *AcquireLimits) { l.MaxRecords = 3 }),
			want: []Acquired{acq(0, 4, 1)}, after: "0-5 q1m q1m q1m q1m q1m"},
		{name: "strict mode stops at MaxRecords",
			batches: []Batch{b(0, 4), b(5, 9)}, lim: with(func(l *AcquireLimits) { l.MaxRecords = 3; l.Strict = true }),
			want: []Acquired{acq(0, 2, 1)}, after: "0-3 q1m q1m q1m"},
		{name: "batch mode stops at a batch boundary once MaxRecords is reached",
			batches: []Batch{b(0, 1), b(2, 3), b(4, 5)}, lim: with(func(l *AcquireLimits) { l.MaxRecords = 3 }),
			want: []Acquired{acq(0, 3, 1)}, after: "0-4 q1m q1m q1m q1m"},
		{name: "a gap between batches is archived and splits the ranges",
			batches: []Batch{b(0, 1), b(5, 6)}, lim: lim,
			want: []Acquired{acq(0, 1, 1), acq(5, 6, 1)}, after: "0-7 q1m q1m x0 x0 x0 q1m q1m"},
		{name: "a gap at the front moves the start past it",
			start: 0, batches: []Batch{b(3, 4)}, lim: lim,
			want: []Acquired{acq(3, 4, 1)}, after: "3-5 q1m q1m"},
		{name: "a skip batch in the middle is archived",
			batches: []Batch{b(0, 1), skip(2, 2), b(3, 4)}, lim: lim,
			want: []Acquired{acq(0, 1, 1), acq(3, 4, 1)}, after: "0-5 q1m q1m x0 q1m q1m"},
		{name: "a skip batch at the front moves the start",
			batches: []Batch{skip(0, 0), b(1, 3)}, lim: lim,
			want: []Acquired{acq(1, 3, 1)}, after: "1-4 q1m q1m q1m"},
		{name: "only skip batches: nothing acquired, start past them",
			batches: []Batch{skip(0, 0), skip(1, 4)}, lim: lim, after: "5-5"},
		{name: "skip batches are archived even after MaxRecords",
			batches: []Batch{b(0, 0), skip(1, 1)}, lim: with(func(l *AcquireLimits) { l.MaxRecords = 1 }),
			want: []Acquired{acq(0, 0, 1)}, after: "0-2 q1m x0"},
		{name: "MaxInFlight bounds the window (record-limit mode; batch mode finishes the batch)",
			batches: []Batch{b(0, 9)}, lim: with(func(l *AcquireLimits) { l.MaxInFlight = 4; l.Strict = true }),
			want: []Acquired{acq(0, 3, 1)}, after: "0-4 q1m q1m q1m q1m"},
		{name: "a batch starting below the start offset is cut",
			start: 5, batches: []Batch{b(0, 9)}, lim: lim,
			want: []Acquired{acq(5, 9, 1)}, after: "5-10 q1m q1m q1m q1m q1m"},
		{name: "a batch entirely below the start offset is passed",
			start: 5, batches: []Batch{b(0, 4), b(5, 5)}, lim: lim,
			want: []Acquired{acq(5, 5, 1)}, after: "5-6 q1m"},
		{name: "no batches acquire nothing", lim: lim, after: "0-0"},
		{name: "re-acquired records count a delivery more, ranges split by count",
			setup: func(p *Partition) {
				p.Acquire("o", []Batch{b(0, 1)}, lim, 0, nil)
				p.ReleaseMember("o", lim.DeliveryLimit)
			},
			batches: []Batch{b(0, 3)}, lim: lim,
			want: []Acquired{acq(0, 1, 2), acq(2, 3, 1)}, after: "0-4 q2m q2m q1m q1m"},
		{name: "records another member holds are passed over",
			setup: func(p *Partition) {
				p.Acquire("o", []Batch{b(0, 1)}, lim, 0, nil)
			},
			batches: []Batch{b(0, 3)}, lim: lim,
			want: []Acquired{acq(2, 3, 1)}, after: "0-4 q1o q1o q1m q1m"},
		{name: "batch mode finishes a batch begun after records held by another",
			setup: func(p *Partition) {
				p.Acquire("o", []Batch{b(0, 1)}, lim, 0, nil)
			},
			batches: []Batch{b(0, 4), b(5, 6)}, lim: with(func(l *AcquireLimits) { l.MaxRecords = 1 }),
			want: []Acquired{acq(2, 4, 1)}, after: "0-5 q1o q1o q1m q1m q1m"},
		{name: "released records in a window full of locks are taken again",
			setup: func(p *Partition) {
				p.Acquire("o", []Batch{b(0, 3)}, with(func(l *AcquireLimits) { l.MaxInFlight = 4 }), 0, nil)
				p.Acknowledge("o", 1, 1, []int8{AckRelease}, false, lim, 0)
			},
			batches: []Batch{b(0, 5)}, lim: with(func(l *AcquireLimits) { l.MaxInFlight = 4 }),
			want: []Acquired{acq(1, 1, 2)}, after: "0-4 q1o q2m q1o q1o"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition([16]byte{1}, tc.start)
			if tc.setup != nil {
				tc.setup(p)
			}
			got := p.Acquire("m", tc.batches, tc.lim, 1000, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("acquired %v, want %v", got, tc.want)
			}
			if d := dump(p); d != tc.after {
				t.Errorf("after: %s\nwant:  %s", d, tc.after)
			}
			checkInvariants(t, p)
			for _, r := range p.recs {
				if r.state == stateAcquired && r.owner == "m" && r.deadline != 1000+tc.lim.LockMs {
					t.Errorf("lock until %d, want %d", r.deadline, 1000+tc.lim.LockMs)
				}
			}
		})
	}
}

// TestAcquireWindowBound: whatever the log hands over (control batches,
// aborted transactions, gaps), the in-flight window never passes
// MaxInFlight offsets while its front is held, so the state stays within
// what parseState accepts.
func TestAcquireWindowBound(t *testing.T) {
	t.Parallel()
	l := lim
	l.MaxInFlight = 10
	for _, tc := range []struct {
		name    string
		batches []Batch
	}{
		{"skip batches", []Batch{skip(1, 1000)}},
		{"many skip batches", []Batch{skip(1, 1), skip(2, 2), skip(3, 3), skip(4, 4), skip(5, 5), skip(6, 6), skip(7, 7), skip(8, 8), skip(9, 9), skip(10, 10), skip(11, 11), b(12, 12)}},
		{"a gap", []Batch{b(1000, 1001)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition([16]byte{}, 0)
			p.Acquire("front", []Batch{b(0, 0)}, l, 0, nil)
			p.Acquire("m", tc.batches, l, 0, nil)
			checkInvariants(t, p)
			if p.InFlight() > l.MaxInFlight {
				t.Fatalf("%d offsets in flight, bound %d", p.InFlight(), l.MaxInFlight)
			}
			// Once the front is done the rest follows.
			if code := p.Acknowledge("front", 0, 0, []int8{AckAccept}, false, l, 0); code != 0 {
				t.Fatalf("accept: %d", code)
			}
			for range 200 {
				if p.FetchFrom() >= tc.batches[len(tc.batches)-1].Last+1 {
					break
				}
				var rest []Batch
				for _, bt := range tc.batches {
					if bt.Last >= p.FetchFrom() {
						rest = append(rest, bt)
					}
				}
				p.Acquire("m", rest, l, 0, nil)
				checkInvariants(t, p)
				if p.InFlight() > l.MaxInFlight {
					t.Fatalf("%d offsets in flight, bound %d", p.InFlight(), l.MaxInFlight)
				}
				var held []int64
				for i := range p.recs {
					if p.recs[i].state == stateAcquired {
						held = append(held, p.start+int64(i))
					}
				}
				for _, off := range held {
					if code := p.Acknowledge("m", off, off, []int8{AckAccept}, false, l, 0); code != 0 {
						t.Fatalf("accept %d: %d", off, code)
					}
				}
			}
			if want := tc.batches[len(tc.batches)-1].Last + 1; p.FetchFrom() != want {
				t.Fatalf("stuck at %d (%s), want to reach %d", p.FetchFrom(), dump(p), want)
			}
		})
	}
	// An empty window jumps a gap wider than the bound.
	p := newPartition([16]byte{}, 0)
	if got := p.Acquire("m", []Batch{b(5000, 5001)}, l, 0, nil); !slices.Equal(got, []Acquired{acq(5000, 5001, 1)}) {
		t.Fatalf("across a wide gap acquired %v (%s)", got, dump(p))
	}
	checkInvariants(t, p)
}

func TestAcknowledge(t *testing.T) {
	t.Parallel()
	// Every case starts from m holding 0-4 and o holding 5-7, acquired at
	// 1000 with a 100 ms lock.
	const held = "0-8 q1m q1m q1m q1m q1m q1o q1o q1o"
	cases := []struct {
		name        string
		member      string
		first, last int64
		types       []int8
		renewOK     bool
		code        int16
		after       string
	}{
		{"accept all", "m", 0, 4, []int8{AckAccept}, false, 0, "5-8 q1o q1o q1o"},
		{"accept the middle keeps the start", "m", 2, 3, []int8{AckAccept}, false, 0, "0-8 q1m q1m k1 k1 q1m q1o q1o q1o"},
		{"per-offset types", "m", 0, 4, []int8{AckAccept, AckRelease, AckReject, AckGap, AckAccept}, false, 0, "1-8 a1 x1 x1 k1 q1o q1o q1o"},
		{"release", "m", 0, 1, []int8{AckRelease}, false, 0, "0-8 a1 a1 q1m q1m q1m q1o q1o q1o"},
		{"reject archives and advances", "m", 0, 1, []int8{AckReject}, false, 0, "2-8 q1m q1m q1m q1o q1o q1o"},
		{"gap archives", "m", 0, 0, []int8{AckGap}, false, 0, "1-8 q1m q1m q1m q1m q1o q1o q1o"},
		{"renew keeps the records", "m", 0, 4, []int8{AckRenew}, true, 0, held},

		{"renew not allowed", "m", 0, 4, []int8{AckRenew}, false, kerr.InvalidRequest.Code, held},
		{"renew among others not allowed", "m", 0, 1, []int8{AckAccept, AckRenew}, false, kerr.InvalidRequest.Code, held},
		{"types neither 1 nor per offset", "m", 0, 4, []int8{AckAccept, AckAccept}, false, kerr.InvalidRequest.Code, held},
		{"too many types", "m", 0, 1, []int8{1, 1, 1}, false, kerr.InvalidRequest.Code, held},
		{"no types", "m", 0, 4, nil, false, kerr.InvalidRequest.Code, held},
		{"type out of range", "m", 0, 4, []int8{5}, true, kerr.InvalidRequest.Code, held},
		{"negative type", "m", 0, 0, []int8{-1}, false, kerr.InvalidRequest.Code, held},
		{"first after last", "m", 4, 0, []int8{AckAccept}, false, kerr.InvalidRequest.Code, held},

		{"another member's records", "m", 5, 5, []int8{AckAccept}, false, kerr.InvalidRecordState.Code, held},
		{"a range reaching into another member's", "m", 3, 6, []int8{AckAccept}, false, kerr.InvalidRecordState.Code, held},
		{"past the end", "o", 5, 8, []int8{AckAccept}, false, kerr.InvalidRecordState.Code, held},
		{"far past the end", "m", 100, 200, []int8{AckAccept}, false, kerr.InvalidRecordState.Code, held},
		{"an unknown member", "x", 0, 0, []int8{AckAccept}, false, kerr.InvalidRecordState.Code, held},
		{"renew of another member's records", "m", 5, 7, []int8{AckRenew}, true, kerr.InvalidRecordState.Code, held},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPartition([16]byte{}, 0)
			p.Acquire("m", []Batch{b(0, 4)}, lim, 1000, nil)
			p.Acquire("o", []Batch{b(5, 7)}, lim, 1000, nil)
			p.dirty = false
			code := p.Acknowledge(tc.member, tc.first, tc.last, tc.types, tc.renewOK, lim, 1050)
			if code != tc.code {
				t.Errorf("code %d, want %d", code, tc.code)
			}
			if d := dump(p); d != tc.after {
				t.Errorf("after: %s\nwant:  %s", d, tc.after)
			}
			if code != 0 && p.dirty {
				t.Error("a refused acknowledgement marked the state changed")
			}
			checkInvariants(t, p)
		})
	}
}

func TestAcknowledgeNotHeld(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 10)
	p.Acquire("m", []Batch{b(10, 19)}, lim, 0, nil)
	if code := p.Acknowledge("m", 10, 12, []int8{AckAccept}, false, lim, 0); code != 0 {
		t.Fatal(code)
	}
	if code := p.Acknowledge("m", 14, 14, []int8{AckRelease}, false, lim, 0); code != 0 {
		t.Fatal(code)
	}
	if code := p.Acknowledge("m", 16, 16, []int8{AckAccept}, false, lim, 0); code != 0 {
		t.Fatal(code)
	}
	before := dump(p)
	for _, r := range []struct {
		name        string
		first, last int64
	}{
		{"below the start (accepted)", 12, 13},
		{"released, not acquired", 14, 14},
		{"acknowledged already", 16, 16},
		{"a range with an acknowledged offset inside", 15, 17},
		{"below every offset", 0, 5},
	} {
		if code := p.Acknowledge("m", r.first, r.last, []int8{AckAccept}, false, lim, 0); code != kerr.InvalidRecordState.Code {
			t.Errorf("%s: code %d, want INVALID_RECORD_STATE", r.name, code)
		}
		if d := dump(p); d != before {
			t.Fatalf("%s changed the partition:\n%s\nwas %s", r.name, d, before)
		}
	}
}

func TestReleaseAtDeliveryLimit(t *testing.T) {
	t.Parallel()
	l := lim
	l.DeliveryLimit = 2
	p := newPartition([16]byte{}, 0)
	for i := range 2 {
		got := p.Acquire("m", []Batch{b(0, 1)}, l, 0, nil)
		if want := []Acquired{acq(0, 1, int16(i+1))}; !slices.Equal(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", i+1, got, want)
		}
		if code := p.Acknowledge("m", 0, 0, []int8{AckRelease}, false, l, 0); code != 0 {
			t.Fatal(code)
		}
		if i == 0 {
			p.ReleaseMember("m", l.DeliveryLimit)
		}
	}
	// 0 was released at the limit (archived); 1 is still held.
	if d := dump(p); d != "1-2 q2m" {
		t.Fatalf("after the second release: %s", d)
	}
	if !p.ReleaseMember("m", l.DeliveryLimit) {
		t.Fatal("ReleaseMember released nothing")
	}
	if d := dump(p); d != "2-2" {
		t.Fatalf("released at the limit by ReleaseMember: %s", d)
	}
	if got := p.Acquire("m", []Batch{b(0, 1)}, l, 0, nil); got != nil {
		t.Fatalf("records past the delivery limit acquired again: %v", got)
	}
	// An expired lock at the limit is archived too.
	p = newPartition([16]byte{}, 0)
	l.DeliveryLimit = 1
	p.Acquire("m", []Batch{b(0, 0)}, l, 0, nil)
	if !p.Expire(l.LockMs, l.DeliveryLimit) || dump(p) != "1-1" {
		t.Fatalf("expired at the limit: %s", dump(p))
	}
	checkInvariants(t, p)
}

func TestReleaseMember(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 0)
	p.Acquire("m", []Batch{b(0, 1)}, lim, 0, nil)
	p.Acquire("o", []Batch{b(2, 3)}, lim, 0, nil)
	if p.ReleaseMember("x", lim.DeliveryLimit) {
		t.Error("released records of a member holding none")
	}
	if !p.ReleaseMember("m", lim.DeliveryLimit) {
		t.Error("released nothing")
	}
	if d := dump(p); d != "0-4 a1 a1 q1o q1o" {
		t.Errorf("after: %s", d)
	}
	checkInvariants(t, p)
	if got := p.Acquire("x", []Batch{b(0, 3)}, lim, 0, nil); !slices.Equal(got, []Acquired{acq(0, 1, 2)}) {
		t.Errorf("re-acquired %v", got)
	}
	if p.ReleaseMember("m", lim.DeliveryLimit) {
		t.Error("released twice")
	}
	empty := newPartition([16]byte{}, 0)
	if empty.ReleaseMember("m", 1) {
		t.Error("released from an empty partition")
	}
}

func TestExpire(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 0)
	p.Acquire("m", []Batch{b(0, 1)}, lim, 1000, nil) // until 1100
	p.Acquire("o", []Batch{b(2, 3)}, lim, 1050, nil) // until 1150
	if p.Expire(1099, lim.DeliveryLimit) {
		t.Fatal("expired before the deadline")
	}
	if d := dump(p); d != "0-4 q1m q1m q1o q1o" {
		t.Fatalf("changed before the deadline: %s", d)
	}
	if !p.Expire(1100, lim.DeliveryLimit) {
		t.Fatal("not expired at the deadline")
	}
	if d := dump(p); d != "0-4 a1 a1 q1o q1o" {
		t.Fatalf("after the first deadline: %s", d)
	}
	checkInvariants(t, p)
	if p.Expire(1149, lim.DeliveryLimit) {
		t.Fatal("the second lock expired early")
	}
	if !p.Expire(1150, lim.DeliveryLimit) || dump(p) != "0-4 a1 a1 a1 a1" {
		t.Fatalf("after the second deadline: %s", dump(p))
	}
	if p.Expire(5000, lim.DeliveryLimit) {
		t.Fatal("expired with nothing acquired")
	}
	checkInvariants(t, p)
}

func TestRenewExtendsLock(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 0)
	p.Acquire("m", []Batch{b(0, 1)}, lim, 1000, nil) // until 1100
	if code := p.Acknowledge("m", 0, 0, []int8{AckRenew}, true, lim, 1080); code != 0 {
		t.Fatal(code)
	}
	if !p.Expire(1100, lim.DeliveryLimit) || dump(p) != "0-2 q1m a1" {
		t.Fatalf("at the first deadline: %s", dump(p))
	}
	if p.Expire(1179, lim.DeliveryLimit) {
		t.Fatal("the renewed lock expired early")
	}
	if !p.Expire(1180, lim.DeliveryLimit) || dump(p) != "0-2 a1 a1" {
		t.Fatalf("at the renewed deadline: %s", dump(p))
	}
	// Renew with a shorter lock than the one acquired: it still ends
	// when the renewal says.
	p = newPartition([16]byte{}, 0)
	p.Acquire("m", []Batch{b(0, 0)}, lim, 1000, nil) // until 1100
	short := lim
	short.LockMs = 10
	p.Acknowledge("m", 0, 0, []int8{AckRenew}, true, short, 1010) // until 1020
	if !p.Expire(1020, lim.DeliveryLimit) {
		t.Fatalf("a lock renewed to end at 1020 still held at 1020: %s", dump(p))
	}
	checkInvariants(t, p)
}

func TestSkipTo(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 0)
	p.Acquire("m", []Batch{b(0, 5)}, lim, 1000, nil)
	p.Acknowledge("m", 3, 3, []int8{AckAccept}, false, lim, 1000)
	p.skipTo(3)
	// 3 is done, so the start passes it.
	if d := dump(p); d != "4-6 q1m q1m" {
		t.Fatalf("skipTo(3): %s", d)
	}
	checkInvariants(t, p)
	p.skipTo(20)
	if d := dump(p); d != "20-20" {
		t.Fatalf("skipTo past the end: %s", d)
	}
	checkInvariants(t, p)
	if got := p.Acquire("m", []Batch{b(18, 21)}, lim, 0, nil); !slices.Equal(got, []Acquired{acq(20, 21, 1)}) {
		t.Fatalf("after skipTo acquired %v", got)
	}
}

func TestReset(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 0)
	p.Acquire("m", []Batch{b(0, 5)}, lim, 1000, nil)
	p.dirty = false
	p.Reset(3)
	if d := dump(p); d != "3-3" || !p.dirty {
		t.Fatalf("Reset(3): %s dirty %v", d, p.dirty)
	}
	checkInvariants(t, p)
	if p.Expire(1<<40, lim.DeliveryLimit) || p.ReleaseMember("m", 1) {
		t.Fatal("dropped locks still expire or release")
	}
	if got := p.Acquire("o", []Batch{b(0, 5)}, lim, 0, nil); !slices.Equal(got, []Acquired{acq(3, 5, 1)}) {
		t.Fatalf("after Reset acquired %v", got)
	}
}

func TestCountAndFetchFrom(t *testing.T) {
	t.Parallel()
	p := newPartition([16]byte{}, 0)
	if p.FetchFrom() != 0 || p.HasAvailable() {
		t.Fatal("an empty partition fetches from its start with nothing available")
	}
	p.Acquire("m", []Batch{b(0, 5)}, lim, 0, nil)
	p.Acknowledge("m", 1, 1, []int8{AckAccept}, false, lim, 0)
	p.Acknowledge("m", 2, 2, []int8{AckReject}, false, lim, 0)
	p.Acknowledge("m", 4, 4, []int8{AckRelease}, false, lim, 0)
	if c := p.Count(); c != (Counts{Available: 1, Acquired: 3, Acked: 1, Archived: 1}) {
		t.Fatalf("counts %+v", c)
	}
	if p.FetchFrom() != 4 || !p.HasAvailable() {
		t.Fatalf("fetch from %d", p.FetchFrom())
	}
	p.Acknowledge("m", 4, 4, []int8{AckRelease}, false, lim, 0) // not held
	p.Acquire("m", []Batch{b(4, 4)}, lim, 0, nil)
	if p.FetchFrom() != p.End() || p.HasAvailable() {
		t.Fatalf("fetch from %d, end %d", p.FetchFrom(), p.End())
	}
}

// FuzzPartition runs byte-chosen sequences of acquisitions, acknowledgements,
// releases, expiries and skips over one partition: its bookkeeping holds,
// the window stays within its bound, and an accepted record is never
// acquired again.
func FuzzPartition(f *testing.F) {
	f.Add([]byte{0, 0, 0, 9, 1, 0, 0, 3, 1, 1, 2, 4, 3, 0, 0, 0, 4, 0, 200, 0, 0, 1, 0, 9})
	f.Add([]byte{0, 1, 3, 30, 0, 2, 10, 5, 2, 1, 0, 0, 5, 0, 12, 0, 0, 0, 0, 50})
	f.Fuzz(func(t *testing.T, ops []byte) {
		l := AcquireLimits{MaxRecords: 4, MaxInFlight: 16, LockMs: 10, DeliveryLimit: 3}
		p := newPartition([16]byte{}, 0)
		members := []string{"a", "b", "c"}
		accepted := map[int64]bool{}
		now := int64(0)
		for len(ops) >= 4 {
			op, m, x, y := ops[0]%6, members[int(ops[1])%len(members)], int64(ops[2]), int64(ops[3])
			ops = ops[4:]
			switch op {
			case 0: // acquire batches of x%5+1 records from the fetch offset, y%40 offsets of log, a skip every third
				l.Strict = y%2 == 1
				var bs []Batch
				size := x%5 + 1
				for off, i := p.FetchFrom()-p.FetchFrom()%size, 0; off < p.FetchFrom()+y%40; off, i = off+size, i+1 {
					bs = append(bs, Batch{Base: off, Last: off + size - 1, Skip: i%3 == 2})
				}
				got := p.Acquire(m, bs, l, now, nil)
				for i, a := range got {
					if a.First > a.Last || a.Deliveries < 1 || (i > 0 && a.First <= got[i-1].Last) {
						t.Fatalf("acquired %v", got)
					}
					for off := a.First; off <= a.Last; off++ {
						if accepted[off] {
							t.Fatalf("accepted offset %d acquired again", off)
						}
					}
				}
			case 1: // acknowledge [x, x+y%8] with one type, or one per offset
				last := x + y%8
				types := []int8{int8(y % 5)}
				if y%3 == 0 {
					types = make([]int8, last-x+1)
					for i := range types {
						types[i] = int8((int(y) + i) % 4)
					}
				}
				before := dump(p)
				code := p.Acknowledge(m, x, last, types, y%7 == 0, l, now)
				if code != 0 && dump(p) != before {
					t.Fatalf("refused acknowledgement changed %s to %s", before, dump(p))
				}
				if code == 0 {
					for off := x; off <= last; off++ {
						if types[min(int(off-x), len(types)-1)] == AckAccept {
							accepted[off] = true
						}
					}
				}
			case 2:
				p.ReleaseMember(m, l.DeliveryLimit)
			case 3:
				now += x % 16
				p.Expire(now, l.DeliveryLimit)
			case 4:
				if off := p.start + x%8; off > p.start {
					p.skipTo(off)
				}
			case 5:
				now += y % 4
			}
			checkInvariants(t, p)
			// Batch mode may finish a batch past the bound: batches
			// here hold at most 5 records.
			if p.InFlight() > l.MaxInFlight+5 {
				t.Fatalf("%d in flight", p.InFlight())
			}
			for off := range accepted {
				if off >= p.start && off < p.end && p.recs[off-p.start].state != stateAcked {
					t.Fatalf("accepted offset %d is now %s", off, dump(p))
				}
			}
		}
	})
}
