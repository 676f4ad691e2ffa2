package e2e

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// clusterAppend is one append a gateway logged ("cluster: appended", at
// debug level, handlers.noteClusterWrite).
type clusterAppend struct {
	writer          string // incarnation name
	epoch           int64
	offset, records int64
}

var appendedLine = regexp.MustCompile(`msg="cluster: appended".* topic=(\S+) partition=(\d+) epoch=(\d+) offset=(\d+) records=(\d+)`)

// appendsOf counts the appends to topic that p logged.
func appendsOf(p *process, topic string) int {
	n := 0
	for _, m := range appendedLine.FindAllStringSubmatch(p.Log(), -1) {
		if m[1] == topic {
			n++
		}
	}
	return n
}

// oneWriterAtATime fails t unless, in every partition of topic, the
// appends every gateway logged, in offset order, never go back to an
// earlier leader epoch, and one epoch has one writer: had two gateways
// written a partition at once (an old leader still writing after the new
// one began), their appends would interleave and the epochs of the
// offsets would go down and up again. recs (the log read back) must be
// covered by the logged appends, so the check is not vacuous; it returns
// how many times a partition changed writer.
func (cg *clusterGateways) oneWriterAtATime(t *testing.T, topic string, recs []*kgo.Record) int {
	t.Helper()
	byPart := map[int32][]clusterAppend{}
	for _, in := range cg.all {
		for _, m := range appendedLine.FindAllStringSubmatch(in.p.Log(), -1) {
			if m[1] != topic {
				continue
			}
			part, _ := strconv.Atoi(m[2])
			a := clusterAppend{writer: in.name}
			a.epoch, _ = strconv.ParseInt(m[3], 10, 64)
			a.offset, _ = strconv.ParseInt(m[4], 10, 64)
			a.records, _ = strconv.ParseInt(m[5], 10, 64)
			byPart[int32(part)] = append(byPart[int32(part)], a)
		}
	}
	faults, handovers := writerFaults(byPart)
	for _, f := range faults {
		t.Error(f)
	}
	// A gateway killed with SIGKILL may die between an append and its log
	// line: a few records may be uncovered, not many.
	covered := map[int32]map[int64]bool{}
	for part, as := range byPart {
		covered[part] = map[int64]bool{}
		for _, a := range as {
			for o := a.offset; o < a.offset+a.records; o++ {
				covered[part][o] = true
			}
		}
	}
	uncovered := 0
	for _, r := range recs {
		if !covered[r.Partition][r.Offset] {
			uncovered++
		}
	}
	if uncovered > len(recs)/20 {
		t.Errorf("%d of %d records in the log have no logged append: the writer check saw too little", uncovered, len(recs))
	}
	t.Logf("writers: %d partitions, %d handovers between gateways, %d of %d records without a logged append",
		len(byPart), handovers, uncovered, len(recs))
	return handovers
}

// writerFaults is oneWriterAtATime's rule over each partition's appends
// (sorted here by offset): what breaks it, and how often a partition
// changed writer.
func writerFaults(byPart map[int32][]clusterAppend) (faults []string, handovers int) {
	for part, as := range byPart {
		slices.SortFunc(as, func(a, b clusterAppend) int { return cmp.Compare(a.offset, b.offset) })
		for i := 1; i < len(as); i++ {
			a, prev := as[i], as[i-1]
			switch {
			case a.offset < prev.offset+prev.records:
				faults = append(faults, fmt.Sprintf("partition %d: %s appended at %d under epoch %d, inside %s's append at %d (%d records)",
					part, a.writer, a.offset, a.epoch, prev.writer, prev.offset, prev.records))
			case a.epoch < prev.epoch:
				faults = append(faults, fmt.Sprintf("partition %d: %s appended at %d under epoch %d after %s appended at %d under epoch %d: two writers at once",
					part, a.writer, a.offset, a.epoch, prev.writer, prev.offset, prev.epoch))
			case a.epoch == prev.epoch && a.writer != prev.writer:
				faults = append(faults, fmt.Sprintf("partition %d: %s and %s both appended under epoch %d (offsets %d, %d)",
					part, prev.writer, a.writer, a.epoch, prev.offset, a.offset))
			case a.writer != prev.writer:
				handovers++
			}
		}
	}
	return faults, handovers
}

// The writer check itself: a clean handover passes; an old leader still
// appending after the new one began, or two writers under one epoch, fail.
func TestClusterWriterCheck(t *testing.T) {
	t.Parallel()
	a := func(w string, epoch, offset, n int64) clusterAppend {
		return clusterAppend{writer: w, epoch: epoch, offset: offset, records: n}
	}
	for _, c := range []struct {
		name      string
		appends   []clusterAppend
		faults    int
		handovers int
	}{
		{"handover", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw1#0", 4, 3, 2), a("gw2#0", 7, 5, 1), a("gw2#0", 9, 6, 1)}, 0, 1},
		{"old leader after new", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw2#0", 7, 3, 2), a("gw1#0", 4, 5, 1)}, 1, 1},
		{"one epoch, two writers", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw2#0", 4, 3, 2)}, 1, 0},
		{"overlapping appends", []clusterAppend{a("gw1#0", 4, 0, 3), a("gw2#0", 7, 2, 2)}, 1, 0},
	} {
		faults, handovers := writerFaults(map[int32][]clusterAppend{0: slices.Clone(c.appends)})
		if len(faults) != c.faults || handovers != c.handovers {
			t.Errorf("%s: %d faults %v, %d handovers; want %d, %d", c.name, len(faults), faults, handovers, c.faults, c.handovers)
		}
	}
}
